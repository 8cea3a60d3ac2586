package leasedb

import (
	"reflect"
	"testing"
	"time"
)

func TestNewRow(t *testing.T) {
	ref := BlobRef{Account: "a", Container: "c", Name: "n"}
	content := BlobContent{Props: Props{ContentType: "text/plain"}, Metadata: map[string]string{"k": "v"},
		Tags: map[string]string{"t": "1"}, AccessTier: "Cool"}
	extents := []Extent{{Key: "k/1", Size: 3}, {Key: "k/2", Size: 4}}
	created := at(-24 * time.Hour)
	tests := []struct {
		name    string
		extents []Extent
		old     *Blob
		want    *Blob
	}{
		{"new blob", extents, nil, &Blob{Account: "a", Container: "c", Name: "n", Type: "BlockBlob", ETag: `"e2"`,
			Created: t0, LastModified: t0, Size: 7, Props: content.Props, Metadata: content.Metadata, Extents: extents,
			Lease: leasedFixed, Tags: content.Tags, AccessTier: "Cool"}},
		// An overwrite is a new blob that keeps only its creation time.
		{"overwrite", nil, &Blob{Created: created, ETag: `"e1"`, Size: 9, Metadata: map[string]string{"old": "x"}, BlockCount: 3, Sealed: true},
			&Blob{Account: "a", Container: "c", Name: "n", Type: "BlockBlob", ETag: `"e2"`,
				Created: created, LastModified: t0, Props: content.Props, Metadata: content.Metadata,
				Lease: leasedFixed, Tags: content.Tags, AccessTier: "Cool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newRow(ref, "BlockBlob", content, tt.extents, leasedFixed, `"e2"`, t0, tt.old)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("newRow = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestApplyPutLease(t *testing.T) {
	acquire := func(proposed string, d int) PutLease {
		return PutLease{LeaseAction: PutLeaseAcquire, Acquire: LeaseRequest{ProposedID: proposed, Duration: d, BreakPeriod: -1}, NewLeaseID: idX}
	}
	tests := []struct {
		name   string
		lease  Lease
		pl     PutLease
		want   Lease
		wantID string
	}{
		{"no action keeps the lease", leasedFixed, PutLease{}, leasedFixed, ""},
		{"no action, no lease", Lease{}, PutLease{}, Lease{}, ""},
		{"release", leasedFixed, PutLease{LeaseAction: PutLeaseRelease}, Lease{}, ""},
		{"acquire-release", leasedFixed, PutLease{LeaseAction: PutLeaseAcquireRelease}, Lease{}, ""},
		{"acquire, new id", Lease{}, acquire("", -1), infiniteLease(idX), idX},
		{"acquire, proposed id", Lease{}, acquire(idB, 30), fixedLease(idB, 30, at(30*sec)), idB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, res, err := applyPutLease(tt.lease, tt.pl, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !sameLease(got, tt.want) || res.ID != tt.wantID {
				t.Fatalf("applyPutLease = %+v, %q; want %+v, %q", got, res.ID, tt.want, tt.wantID)
			}
		})
	}
}
