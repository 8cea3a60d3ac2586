package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// testTagsTierHead: Set Blob Tags, Get Blob Tags and Set Blob Tier
// through the store as it is (the row's head alone where its Tx offers
// leasedb.BlobTierLocker, its Store leasedb.BlobHeadReader) and through
// the generic Tx sequence (genericOnly: the row read whole, Set Blob
// Tier's written whole by PutBlob) leave the same outcomes, answers, rows
// (every column, an inline blob's 4 KiB of bytes among them; the ETag and
// Last-Modified unchanged) and tag index, over a sequence of leases
// (x-ms-lease-id missing, wrong, right, a broken lease ended by the
// write), x-ms-if-tags and x-ms-blob-if-* conditions, premium tiers on a
// page blob, and absent blobs and containers. Where the store offers
// them, LockBlobTier and ReadBlobHead read the head Blob.Head gives (with
// the type, size and tier), and SetBlobTier changes the tier alone.
func testTagsTierHead(t *testing.T, s leasedb.Store) {
	inline := make([]byte, 4096) // over Postgres's TOAST threshold once encoded
	for i := range inline {
		inline[i] = byte(i*5 + i/256)
	}
	const (
		leaseID = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
		otherID = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
	)
	ifTags := func(expr string) leasedb.Conditions {
		e, err := leasedb.ParseTagCondition(expr)
		if err != nil {
			t.Fatal(err)
		}
		return leasedb.Conditions{IfTags: e}
	}
	run := func(db *leasedb.DB, container string) []string {
		ctx := ctxT(t)
		mustInsertContainer(t, s, container)
		ref := leasedb.BlobRef{Account: acct, Container: container, Name: "x"}
		pageRef := leasedb.BlobRef{Account: acct, Container: container, Name: "page"}
		bigPageRef := leasedb.BlobRef{Account: acct, Container: container, Name: "bigpage"}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			b := fullBlob(container, "x")
			b.Lease, b.Copy, b.Sealed = leasedb.Lease{State: "available"}, nil, false
			b.Extents = []leasedb.Extent{{Key: "obj/" + container + "/x", Size: 17}, {Size: int64(len(inline)), Data: inline}}
			b.Size, b.BlockCount = 17+int64(len(inline)), 2
			b.Tags = map[string]string{"project": "blobgw"}
			if err := tx.PutBlob(ctx, b); err != nil {
				return err
			}
			for _, p := range []struct {
				name string
				size int64
			}{{"page", 512}, {"bigpage", 64 << 30}} {
				pb := fullBlob(container, p.name)
				pb.Type, pb.Size, pb.Extents, pb.BlockCount, pb.AccessTier = "PageBlob", p.size, nil, 0, ""
				pb.Lease, pb.Copy, pb.Sealed, pb.Tags = leasedb.Lease{State: "available"}, nil, false, nil
				if err := tx.PutBlob(ctx, pb); err != nil {
					return err
				}
			}
			return nil
		})
		before := getBlob(t, s, container, "x")
		var out []string
		row := func(step string) {
			b := getBlob(t, s, container, "x")
			// The ETag and Last-Modified stay: the rest of the row as
			// a string, its times as whether they are set.
			l := b.Lease
			out = append(out, fmt.Sprintf("%s: row type=%s size=%d etag kept=%t last-modified kept=%t created kept=%t props=%+v meta=%v extents=%d data=%t blocks=%d tier=%q tags=%v seal=%t seq=%d lease=%s/%s/%d expires=%t break=%t since=%t",
				step, b.Type, b.Size, b.ETag == before.ETag, b.LastModified.Equal(before.LastModified), b.Created.Equal(before.Created),
				b.Props, b.Metadata, len(b.Extents), len(b.Extents) == 2 && string(b.Extents[1].Data) == string(inline), b.BlockCount,
				b.AccessTier, b.Tags, b.Sealed, b.SequenceNumber, l.ID, l.State, l.Duration, !l.Expires.IsZero(), !l.BreakAt.IsZero(), !l.Since.IsZero()))
			for _, name := range []string{"page", "bigpage"} {
				p := getBlob(t, s, container, name)
				out = append(out, fmt.Sprintf("%s: %s tier=%q etag kept=%t", step, name, p.AccessTier, p.ETag == `"0x8D0000000000DEF"`))
			}
			// The tag index follows the tags.
			view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
				for _, k := range []string{"project", "a", "b"} {
					found, err := tx.FindTagged(ctx, acct, container, leasedb.TagRange{Key: k, Lo: "", LoOp: ">=", Hi: "zzz", HiOp: "<="}, "", "", 10)
					if err != nil {
						return err
					}
					var names []string
					for _, f := range found {
						names = append(names, f.Name+"="+f.Tags[k])
					}
					out = append(out, fmt.Sprintf("%s: index %s: %v", step, k, names))
				}
				return nil
			})
		}
		code := func(step string, err error) string {
			if e, ok := svcerr.As(err); ok {
				return string(e.Code)
			}
			if err != nil {
				t.Fatalf("%s %s: %v", container, step, err)
			}
			return "ok"
		}
		// answer is what an operation returned: its outcome, and the
		// head's ETag (the row's) and tags.
		answer := func(step string, h *leasedb.BlobHead, err error) {
			got := code(step, err)
			if h != nil {
				cur := getBlob(t, s, container, h.Ref.Name)
				got += fmt.Sprintf(" etag=%t last-modified=%t tags=%v lease=%s", h.ETag == cur.ETag, h.LastModified.Equal(cur.LastModified), h.Tags, h.Lease.State)
			} else if err == nil {
				t.Fatalf("%s %s: no head and no error", container, step)
			}
			out = append(out, step+": "+got)
			row(step)
		}
		setTags := func(step string, r leasedb.BlobRef, id string, cond leasedb.Conditions, tags map[string]string) {
			h, err := db.SetBlobTags(ctx, r, id, cond, tags)
			answer("set tags "+step, h, err)
		}
		getTags := func(step string, r leasedb.BlobRef, id string, cond leasedb.Conditions) {
			h, err := db.GetBlobTags(ctx, r, id, cond)
			answer("get tags "+step, h, err)
		}
		setTier := func(step string, r leasedb.BlobRef, id string, cond leasedb.Conditions, tier string) {
			h, err := db.SetBlobTier(ctx, r, id, cond, tier)
			answer("set tier "+step, h, err)
		}
		lease := func(step string, req leasedb.LeaseRequest) {
			_, _, err := db.LeaseBlob(ctx, ref, req, leasedb.Conditions{}, "")
			out = append(out, "lease "+step+": "+code(step, err))
		}
		etag := leasedb.UnquoteETag(before.ETag)

		setTags("plain", ref, "", leasedb.Conditions{}, map[string]string{"a": "1", "b": "two"})
		getTags("plain", ref, "", leasedb.Conditions{})
		setTags("if-tags fails", ref, "", ifTags(`"a" = '2'`), map[string]string{"a": "3"})
		setTags("if-tags passes", ref, "", ifTags(`"a" = '1' AND "b" = 'two'`), map[string]string{"a": "2"})
		setTags("if-match fails", ref, "", leasedb.Conditions{IfMatch: []string{"0x1"}}, map[string]string{"a": "4"})
		setTags("if-match passes", ref, "", leasedb.Conditions{IfMatch: []string{etag}}, map[string]string{"a": "5", "b": "x"})
		setTags("if-none-match *", ref, "", leasedb.Conditions{IfNoneMatch: []string{"*"}}, map[string]string{"a": "6"})
		setTags("if-unmodified-since fails", ref, "", leasedb.Conditions{IfUnmodifiedSince: before.LastModified.Add(-time.Hour), HadIUS: true}, map[string]string{"a": "7"})
		getTags("if-tags fails", ref, "", ifTags(`"a" = '1'`))
		getTags("if-tags passes", ref, "", ifTags(`"a" = '5'`))
		getTags("if-none-match etag", ref, "", leasedb.Conditions{IfNoneMatch: []string{etag}})
		setTier("cool", ref, "", leasedb.Conditions{}, leasedb.TierCool)
		setTier("if-tags fails", ref, "", ifTags(`"a" = '1'`), leasedb.TierArchive)
		setTier("premium on a block blob", ref, "", leasedb.Conditions{}, "P10")
		setTier("premium on a page blob", pageRef, "", leasedb.Conditions{}, "P10")
		setTier("hot on a page blob", pageRef, "", leasedb.Conditions{}, leasedb.TierHot)
		setTier("premium too small", bigPageRef, "", leasedb.Conditions{}, "P4")

		lease("acquire", leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: leaseID, Duration: 15, BreakPeriod: -1})
		setTags("leased, no id", ref, "", leasedb.Conditions{}, map[string]string{"a": "8"})
		setTags("leased, wrong id", ref, otherID, leasedb.Conditions{}, map[string]string{"a": "9"})
		setTags("leased, the id", ref, leaseID, leasedb.Conditions{}, map[string]string{"a": "10"})
		getTags("leased, no id", ref, "", leasedb.Conditions{})
		getTags("leased, wrong id", ref, otherID, leasedb.Conditions{})
		getTags("leased, the id", ref, leaseID, leasedb.Conditions{})
		setTier("leased, no id", ref, "", leasedb.Conditions{}, leasedb.TierArchive)
		setTier("leased, wrong id", ref, otherID, leasedb.Conditions{}, leasedb.TierHot)
		setTier("leased, the id", ref, leaseID, leasedb.Conditions{}, leasedb.TierCold)
		lease("break", leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 0})
		setTags("broken, the id", ref, leaseID, leasedb.Conditions{}, map[string]string{"a": "11"})
		setTags("broken, no id", ref, "", leasedb.Conditions{}, nil)
		getTags("no tags", ref, "", leasedb.Conditions{})

		absent := leasedb.BlobRef{Account: acct, Container: container, Name: "absent"}
		noContainer := leasedb.BlobRef{Account: acct, Container: container + "-gone", Name: "x"}
		for _, r := range []struct {
			name string
			ref  leasedb.BlobRef
		}{{"absent", absent}, {"no container", noContainer}} {
			setTags(r.name, r.ref, "", leasedb.Conditions{}, map[string]string{"a": "1"})
			setTags(r.name+", if-match", r.ref, "", leasedb.Conditions{IfMatch: []string{etag}}, map[string]string{"a": "1"})
			setTags(r.name+", lease id", r.ref, leaseID, leasedb.Conditions{}, map[string]string{"a": "1"})
			getTags(r.name, r.ref, "", leasedb.Conditions{})
			getTags(r.name+", if-tags", r.ref, "", ifTags(`"a" = '1'`))
			setTier(r.name, r.ref, "", leasedb.Conditions{}, leasedb.TierHot)
			setTier(r.name+", if-tags", r.ref, "", ifTags(`"a" = '1'`), leasedb.TierHot)
		}
		return out
	}
	fast := run(&leasedb.DB{Store: s, Grace: time.Hour}, "headfast")
	generic := run(&leasedb.DB{Store: genericOnly{s}, Grace: time.Hour}, "headgeneric")
	if !reflect.DeepEqual(fast, generic) {
		for i := range min(len(fast), len(generic)) {
			if fast[i] != generic[i] {
				t.Errorf("first difference at %d:\n store:   %s\n generic: %s", i, fast[i], generic[i])
				break
			}
		}
		t.Fatalf("Set/Get Blob Tags and Set Blob Tier through the store and through the generic Tx differ (%d and %d lines)", len(fast), len(generic))
	}
	// The sequence must reach each kind of outcome, else it proves little.
	for _, want := range []string{
		"set tags plain: ok", "set tags if-tags fails: ConditionNotMet", "set tags if-match passes: ok",
		"set tags if-none-match *: ConditionNotMet", "get tags if-tags passes: ok", "set tier cool: ok",
		"set tier premium on a block blob: InvalidHeaderValue", "set tier premium on a page blob: ok",
		"set tier hot on a page blob: InvalidBlobType", "set tier premium too small: BlobTierInadequateForContentLength",
		"set tags leased, no id: LeaseIdMissing", "set tags leased, wrong id: LeaseIdMismatchWithBlobOperation",
		"set tags leased, the id: ok", "get tags leased, wrong id: LeaseIdMismatchWithBlobOperation",
		"set tier leased, no id: ok", "set tier leased, wrong id: LeaseIdMismatchWithBlobOperation",
		"set tags broken, the id: LeaseLost", "set tags broken, no id: ok", "set tags absent: BlobNotFound", "set tags absent, if-match: ConditionNotMet",
		"get tags absent: BlobNotFound", "set tier absent: BlobNotFound", "set tags no container: ContainerNotFound",
		"get tags no container: ContainerNotFound", "set tier no container, if-tags: ContainerNotFound",
		"set tier leased, the id: row type=BlockBlob",
	} {
		found := false
		for _, line := range fast {
			found = found || strings.HasPrefix(line, want)
		}
		if !found {
			t.Errorf("no %q in the sequence's outcomes:\n%s", want, strings.Join(fast, "\n"))
		}
	}
	for _, line := range fast {
		if strings.Contains(line, "etag kept=false") || strings.Contains(line, "last-modified kept=false") {
			t.Errorf("the ETag or Last-Modified changed: %s", line)
		}
	}
	testTagsTierHeadReads(t, s, inline)
}

// testTagsTierHeadReads: LockBlobTier and ReadBlobHead, where offered,
// read what the row's Blob.Head is (LockBlobTier with its type, size and
// tier) and say whether the container exists; SetBlobTier writes the tier
// alone and an absent name is ErrNotFound.
func testTagsTierHeadReads(t *testing.T, s leasedb.Store, inline []byte) {
	ctx := ctxT(t)
	mustInsertContainer(t, s, "headreads")
	b := fullBlob("headreads", "x")
	b.Extents, b.Size = []leasedb.Extent{{Size: int64(len(inline)), Data: inline}}, int64(len(inline))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	ref := leasedb.BlobRef{Account: acct, Container: "headreads", Name: "x"}
	want := getBlob(t, s, ref.Container, ref.Name)
	wantTier := &leasedb.BlobTierHead{BlobHead: *want.Head(), Type: want.Type, Size: want.Size, AccessTier: want.AccessTier}
	names := []struct {
		ref    leasedb.BlobRef
		exists bool
	}{{ref, true}, {leasedb.BlobRef{Account: acct, Container: "headreads", Name: "absent"}, true}, {leasedb.BlobRef{Account: acct, Container: "gone", Name: "x"}, false}}
	if r, ok := s.(leasedb.BlobHeadReader); ok {
		for _, n := range names {
			h, exists, now, err := r.ReadBlobHead(ctx, n.ref.Account, n.ref.Container, n.ref.Name)
			if err != nil {
				t.Fatalf("ReadBlobHead %s: %v", n.ref, err)
			}
			if exists != n.exists || (h != nil) != (n.ref == ref) || (h != nil && now.IsZero()) {
				t.Errorf("ReadBlobHead %s: head %+v, container %t, clock %v", n.ref, h, exists, now)
			}
			if h != nil && !reflect.DeepEqual(h, want.Head()) {
				t.Errorf("ReadBlobHead %s:\n got %+v\nwant %+v", n.ref, h, want.Head())
			}
		}
	}
	var offered bool
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, offered = tx.(leasedb.BlobTierLocker)
		return nil
	})
	if offered {
		for _, n := range names {
			update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
				h, exists, now, err := tx.(leasedb.BlobTierLocker).LockBlobTier(ctx, n.ref.Account, n.ref.Container, n.ref.Name)
				if err != nil {
					return err
				}
				if exists != n.exists || (h != nil) != (n.ref == ref) || now.IsZero() {
					t.Errorf("LockBlobTier %s: head %+v, container %t, clock %v", n.ref, h, exists, now)
				}
				if h != nil && !reflect.DeepEqual(h, wantTier) {
					t.Errorf("LockBlobTier %s:\n got %+v\nwant %+v", n.ref, h, wantTier)
				}
				return nil
			})
		}
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, offered = tx.(leasedb.BlobTierWriter)
		return nil
	})
	if !offered {
		return
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if _, err := tx.Blob(ctx, acct, ref.Container, ref.Name, leasedb.LockExclusive); err != nil {
			return err
		}
		return tx.(leasedb.BlobTierWriter).SetBlobTier(ctx, ref, leasedb.TierArchive)
	})
	want.AccessTier = leasedb.TierArchive
	checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.(leasedb.BlobTierWriter).SetBlobTier(ctx, ref, "")
	})
	want.AccessTier = ""
	checkBlob(t, want, getBlob(t, s, ref.Container, ref.Name))
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.(leasedb.BlobTierWriter).SetBlobTier(ctx, leasedb.BlobRef{Account: acct, Container: "headreads", Name: "absent"}, leasedb.TierHot)
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Fatalf("SetBlobTier of an absent name: %v, want ErrNotFound", err)
	}
}
