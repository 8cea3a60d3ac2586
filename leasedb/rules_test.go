package leasedb

import (
	"reflect"
	"testing"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// Rows the write rules are evaluated against (at t0).
var (
	blockRow   = &Blob{Type: "BlockBlob", ETag: `"e1"`}
	appendRow  = &Blob{Type: "AppendBlob", ETag: `"e1"`, Size: 10, BlockCount: 2}
	leasedRow  = &Blob{Type: "BlockBlob", ETag: `"e1"`, Lease: leasedFixed}
	leasedInf  = &Blob{Type: "BlockBlob", ETag: `"e1"`, Lease: leasedInfinite}
	brokenRow  = &Blob{Type: "BlockBlob", ETag: `"e1"`, Lease: brokenSt}
	leasedApp  = &Blob{Type: "AppendBlob", ETag: `"e1"`, Lease: leasedFixed}
	sealedApp  = &Blob{Type: "AppendBlob", ETag: `"e1"`, Sealed: true}
	fullApp    = &Blob{Type: "AppendBlob", ETag: `"e1"`, BlockCount: MaxAppendBlocks}
	ifMatchE1  = Conditions{IfMatch: []string{"e1"}}
	ifMatchE2  = Conditions{IfMatch: []string{"e2"}}
	ifNoneStar = Conditions{IfNoneMatch: []string{"*"}}
)

// checkRuleLease fails unless a rule answered want ("" = allowed) and,
// when allowed, left wantLease.
func checkRuleLease(t *testing.T, got Lease, err error, want svcerr.Code, wantLease Lease) {
	t.Helper()
	svcerrtest.Code(t, err, want)
	if err == nil && !sameLease(got, wantLease) {
		t.Fatalf("lease = %+v, want %+v", got, wantLease)
	}
}

// ruleCase is one row of a write rule's table: the rule, run on the row
// old (nil: no blob) with req at t0, answers want ("" = allowed) and, when
// allowed, leaves wantLease.
type ruleCase[R any] struct {
	name      string
	old       *Blob
	req       R
	want      svcerr.Code
	wantLease Lease
}

// runRuleCases runs each case through rule as a subtest.
func runRuleCases[R any](t *testing.T, tests []ruleCase[R], rule func(old *Blob, req R) (Lease, error)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rule(tt.old, tt.req)
			checkRuleLease(t, got, err, tt.want, tt.wantLease)
		})
	}
}

func TestCheckPutBlob(t *testing.T) {
	runRuleCases(t, []ruleCase[PutBlobRequest]{
		{"new blob", nil, PutBlobRequest{}, "", Lease{}},
		{"new blob, create-only", nil, PutBlobRequest{CreateOnly: true}, "", Lease{}},
		{"new blob, If-None-Match *", nil, PutBlobRequest{Cond: ifNoneStar}, "", Lease{}},
		{"new blob, If-Match", nil, PutBlobRequest{Cond: ifMatchE1}, svcerr.ConditionNotMet, Lease{}},
		{"new blob, lease id", nil, PutBlobRequest{LeaseID: idA}, svcerr.LeaseNotPresentWithBlobOperation, Lease{}},
		// The lease check comes before the conditions.
		{"new blob, lease id and If-Match", nil, PutBlobRequest{LeaseID: idA, Cond: ifMatchE1}, svcerr.LeaseNotPresentWithBlobOperation, Lease{}},
		{"overwrite", blockRow, PutBlobRequest{}, "", Lease{}},
		{"overwrite another type", appendRow, PutBlobRequest{Type: "BlockBlob"}, "", Lease{}},
		{"overwrite, create-only", blockRow, PutBlobRequest{CreateOnly: true}, svcerr.UnauthorizedBlobOverwrite, Lease{}},
		// Create-only is refused first, before the lease and the conditions.
		{"create-only before lease", leasedRow, PutBlobRequest{CreateOnly: true}, svcerr.UnauthorizedBlobOverwrite, Lease{}},
		{"create-only before If-None-Match *", blockRow, PutBlobRequest{CreateOnly: true, Cond: ifNoneStar}, svcerr.UnauthorizedBlobOverwrite, Lease{}},
		{"overwrite, If-None-Match *", blockRow, PutBlobRequest{Cond: ifNoneStar}, svcerr.BlobAlreadyExists, Lease{}},
		{"overwrite, If-Match passes", blockRow, PutBlobRequest{Cond: ifMatchE1}, "", Lease{}},
		{"overwrite, If-Match fails", blockRow, PutBlobRequest{Cond: ifMatchE2}, svcerr.ConditionNotMet, Lease{}},
		{"leased, no id", leasedRow, PutBlobRequest{}, svcerr.LeaseIdMissing, Lease{}},
		{"leased, wrong id", leasedRow, PutBlobRequest{LeaseID: idB}, svcerr.LeaseIdMismatchWithBlobOperation, Lease{}},
		{"leased, right id keeps the lease", leasedRow, PutBlobRequest{LeaseID: idA}, "", leasedFixed},
		{"lease before conditions", leasedRow, PutBlobRequest{Cond: ifMatchE2}, svcerr.LeaseIdMissing, Lease{}},
		{"broken lease, no id clears it", brokenRow, PutBlobRequest{}, "", Lease{}},
		// Copy Blob destination rules come after the lease and the conditions.
		{"copy: fixed lease", leasedRow, PutBlobRequest{LeaseID: idA, Copy: CopyTarget{InfiniteLeaseOnly: true}}, svcerr.InfiniteLeaseDurationRequired, Lease{}},
		{"copy: infinite lease", leasedInf, PutBlobRequest{LeaseID: idA, Copy: CopyTarget{InfiniteLeaseOnly: true}}, "", leasedInfinite},
		{"copy: fixed lease, no id", leasedRow, PutBlobRequest{Copy: CopyTarget{InfiniteLeaseOnly: true}}, svcerr.LeaseIdMissing, Lease{}},
		{"copy: conditions before lease duration", leasedRow, PutBlobRequest{LeaseID: idA, Cond: ifMatchE2, Copy: CopyTarget{InfiniteLeaseOnly: true}}, svcerr.ConditionNotMet, Lease{}},
		{"copy: same type", blockRow, PutBlobRequest{Type: "BlockBlob", Copy: CopyTarget{SameType: true}}, "", Lease{}},
		{"copy: other type", appendRow, PutBlobRequest{Type: "BlockBlob", Copy: CopyTarget{SameType: true}}, svcerr.InvalidBlobType, Lease{}},
		{"copy: new blob", nil, PutBlobRequest{Type: "BlockBlob", Copy: CopyTarget{SameType: true, InfiniteLeaseOnly: true}}, "", Lease{}},
	}, func(old *Blob, req PutBlobRequest) (Lease, error) { return checkPutBlob(old, req, t0) })
}

func TestCheckCommitBlocks(t *testing.T) {
	runRuleCases(t, []ruleCase[CommitBlocksRequest]{
		{"new blob", nil, CommitBlocksRequest{}, "", Lease{}},
		{"new blob, lease id", nil, CommitBlocksRequest{LeaseID: idA}, svcerr.LeaseNotPresentWithBlobOperation, Lease{}},
		{"new blob, If-Match", nil, CommitBlocksRequest{Cond: ifMatchE1}, svcerr.ConditionNotMet, Lease{}},
		{"block blob", blockRow, CommitBlocksRequest{}, "", Lease{}},
		{"append blob", appendRow, CommitBlocksRequest{}, svcerr.InvalidBlobType, Lease{}},
		// The type comes after create-only and before the lease.
		{"create-only before type", appendRow, CommitBlocksRequest{CreateOnly: true}, svcerr.UnauthorizedBlobOverwrite, Lease{}},
		{"type before lease", leasedApp, CommitBlocksRequest{}, svcerr.InvalidBlobType, Lease{}},
		{"leased, no id", leasedRow, CommitBlocksRequest{}, svcerr.LeaseIdMissing, Lease{}},
		{"leased, right id", leasedRow, CommitBlocksRequest{LeaseID: idA}, "", leasedFixed},
		{"If-None-Match *", blockRow, CommitBlocksRequest{Cond: ifNoneStar}, svcerr.BlobAlreadyExists, Lease{}},
		{"create-only", blockRow, CommitBlocksRequest{CreateOnly: true}, svcerr.UnauthorizedBlobOverwrite, Lease{}},
	}, func(old *Blob, req CommitBlocksRequest) (Lease, error) { return checkCommitBlocks(old, req, t0) })
}

func TestCheckReadLeaseUpdate(t *testing.T) {
	tests := []struct {
		name    string
		b       *Blob
		leaseID string
		cond    Conditions
		want    svcerr.Code
	}{
		{"missing", nil, "", Conditions{}, svcerr.BlobNotFound},
		{"missing, If-Match", nil, "", ifMatchE1, svcerr.ConditionNotMet},
		{"missing before lease", nil, idA, Conditions{}, svcerr.BlobNotFound},
		{"unleased", blockRow, "", Conditions{}, ""},
		{"unleased, lease id", blockRow, idA, Conditions{}, svcerr.LeaseNotPresentWithBlobOperation},
		{"leased, no id", leasedRow, "", Conditions{}, ""},
		{"leased, right id", leasedRow, idA, Conditions{}, ""},
		{"leased, other id", leasedRow, idB, Conditions{}, svcerr.LeaseIdMismatchWithBlobOperation},
		{"broken, id", brokenRow, idA, Conditions{}, svcerr.LeaseLost},
		{"If-Match", blockRow, "", ifMatchE1, ""},
		{"If-Match other", blockRow, "", ifMatchE2, svcerr.ConditionNotMet},
		{"lease before conditions", leasedRow, idB, ifMatchE2, svcerr.LeaseIdMismatchWithBlobOperation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svcerrtest.Code(t, checkReadLeaseUpdate(tt.b, tt.leaseID, tt.cond, t0), tt.want)
		})
	}
}

// leaseCond is what checkUpdate takes besides the row: x-ms-lease-id and
// the conditional headers.
type leaseCond struct {
	leaseID string
	cond    Conditions
}

func TestCheckUpdate(t *testing.T) {
	runRuleCases(t, []ruleCase[leaseCond]{
		{"missing", nil, leaseCond{"", Conditions{}}, svcerr.BlobNotFound, Lease{}},
		{"missing, If-Match", nil, leaseCond{"", ifMatchE1}, svcerr.ConditionNotMet, Lease{}},
		{"missing, lease id", nil, leaseCond{idA, Conditions{}}, svcerr.BlobNotFound, Lease{}},
		{"existing", blockRow, leaseCond{"", Conditions{}}, "", Lease{}},
		{"If-None-Match * is 412 on an update", blockRow, leaseCond{"", ifNoneStar}, svcerr.ConditionNotMet, Lease{}},
		{"If-Match fails", blockRow, leaseCond{"", ifMatchE2}, svcerr.ConditionNotMet, Lease{}},
		{"lease id on an unleased blob", blockRow, leaseCond{idA, Conditions{}}, svcerr.LeaseNotPresentWithBlobOperation, Lease{}},
		{"leased, no id", leasedRow, leaseCond{"", Conditions{}}, svcerr.LeaseIdMissing, Lease{}},
		{"lease before conditions", leasedRow, leaseCond{"", ifMatchE2}, svcerr.LeaseIdMissing, Lease{}},
		{"leased, right id", leasedRow, leaseCond{idA, ifMatchE1}, "", leasedFixed},
		{"broken, no id clears", brokenRow, leaseCond{"", Conditions{}}, "", Lease{}},
	}, func(b *Blob, r leaseCond) (Lease, error) { return checkUpdate(b, r.leaseID, r.cond, t0) })
}

// appendIn is what checkAppend takes besides the row: the request and the
// length of the block to append.
type appendIn struct {
	req AppendRequest
	n   int64
}

func TestCheckAppend(t *testing.T) {
	open := AppendRequest{AppendPos: -1, MaxSize: -1}
	with := func(f func(*AppendRequest)) AppendRequest {
		r := open
		f(&r)
		return r
	}
	runRuleCases(t, []ruleCase[appendIn]{
		{"missing", nil, appendIn{open, 1}, svcerr.BlobNotFound, Lease{}},
		{"missing, If-Match", nil, appendIn{with(func(r *AppendRequest) { r.Cond = ifMatchE1 }), 1}, svcerr.ConditionNotMet, Lease{}},
		{"append", appendRow, appendIn{open, 5}, "", Lease{}},
		{"block blob", blockRow, appendIn{open, 1}, svcerr.InvalidBlobType, Lease{}},
		{"lease before type", leasedRow, appendIn{open, 1}, svcerr.LeaseIdMissing, Lease{}},
		{"conditions before type", blockRow, appendIn{with(func(r *AppendRequest) { r.Cond = ifMatchE2 }), 1}, svcerr.ConditionNotMet, Lease{}},
		{"leased, right id", leasedApp, appendIn{with(func(r *AppendRequest) { r.LeaseID = idA }), 1}, "", leasedFixed},
		{"sealed", sealedApp, appendIn{open, 1}, svcerr.BlobIsSealed, Lease{}},
		{"appendpos matches", appendRow, appendIn{with(func(r *AppendRequest) { r.AppendPos = 10 }), 1}, "", Lease{}},
		{"appendpos differs", appendRow, appendIn{with(func(r *AppendRequest) { r.AppendPos = 9 }), 1}, svcerr.AppendPositionConditionNotMet, Lease{}},
		{"maxsize reached exactly", appendRow, appendIn{with(func(r *AppendRequest) { r.MaxSize = 15 }), 5}, "", Lease{}},
		{"maxsize exceeded", appendRow, appendIn{with(func(r *AppendRequest) { r.MaxSize = 15 }), 6}, svcerr.MaxBlobSizeConditionNotMet, Lease{}},
		{"appendpos before maxsize", appendRow, appendIn{with(func(r *AppendRequest) { r.AppendPos, r.MaxSize = 0, 0 }), 6}, svcerr.AppendPositionConditionNotMet, Lease{}},
		{"block limit", fullApp, appendIn{open, 1}, svcerr.BlockCountExceedsLimit, Lease{}},
	}, func(b *Blob, in appendIn) (Lease, error) { return checkAppend(b, in.req, in.n, t0) })
}

func TestCheckBlockTarget(t *testing.T) {
	tests := []struct {
		name    string
		b       *Blob
		leaseID string
		want    svcerr.Code
	}{
		{"no blob", nil, "", ""},
		{"no blob, lease id", nil, idA, svcerr.LeaseNotPresentWithBlobOperation},
		{"block blob", blockRow, "", ""},
		{"append blob", appendRow, "", svcerr.InvalidBlobType},
		{"type before lease", leasedApp, "", svcerr.InvalidBlobType},
		{"leased, no id", leasedRow, "", svcerr.LeaseIdMissing},
		{"leased, wrong id", leasedRow, idB, svcerr.LeaseIdMismatchWithBlobOperation},
		{"leased, right id", leasedRow, idA, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svcerrtest.Code(t, checkBlockTarget(tt.b, tt.leaseID, t0), tt.want)
		})
	}
}

func TestResolveBlocks(t *testing.T) {
	staged := []Block{
		{ID: "AA", Key: "s/a", Size: 1},
		{ID: "BB", Key: "s/b", Size: 2},
	}
	old := &Blob{Type: "BlockBlob", Extents: []Extent{
		{Key: "c/b", Size: 20, BlockID: "BB"},
		{Key: "c/c", Size: 30, BlockID: "CC"},
	}}
	// A blob written by Put Blob has extents without block ids: none of
	// them is a committed block.
	putRow := &Blob{Type: "BlockBlob", Extents: []Extent{{Key: "p/1", Size: 5}}}
	sa := Extent{Key: "s/a", Size: 1, BlockID: "AA"}
	sb := Extent{Key: "s/b", Size: 2, BlockID: "BB"}
	cb := Extent{Key: "c/b", Size: 20, BlockID: "BB"}
	cc := Extent{Key: "c/c", Size: 30, BlockID: "CC"}
	ref := func(k BlockListKind, id string) BlockRef { return BlockRef{Kind: k, ID: id} }
	tests := []struct {
		name   string
		refs   []BlockRef
		staged []Block
		old    *Blob
		want   []Extent
		code   svcerr.Code
	}{
		{"empty list", nil, staged, old, []Extent{}, ""},
		{"uncommitted", []BlockRef{ref(BlockUncommitted, "AA"), ref(BlockUncommitted, "BB")}, staged, old, []Extent{sa, sb}, ""},
		{"uncommitted not staged", []BlockRef{ref(BlockUncommitted, "CC")}, staged, old, nil, svcerr.InvalidBlockList},
		{"committed", []BlockRef{ref(BlockCommitted, "CC"), ref(BlockCommitted, "BB")}, staged, old, []Extent{cc, cb}, ""},
		{"committed not committed", []BlockRef{ref(BlockCommitted, "AA")}, staged, old, nil, svcerr.InvalidBlockList},
		{"committed, no blob", []BlockRef{ref(BlockCommitted, "BB")}, staged, nil, nil, svcerr.InvalidBlockList},
		{"latest prefers staged", []BlockRef{ref(BlockLatest, "BB")}, staged, old, []Extent{sb}, ""},
		{"latest falls back to committed", []BlockRef{ref(BlockLatest, "CC")}, staged, old, []Extent{cc}, ""},
		{"latest found nowhere", []BlockRef{ref(BlockLatest, "DD")}, staged, old, nil, svcerr.InvalidBlockList},
		{"one id twice", []BlockRef{ref(BlockUncommitted, "AA"), ref(BlockLatest, "AA")}, staged, old, []Extent{sa, sa}, ""},
		{"staged and committed of one id", []BlockRef{ref(BlockUncommitted, "BB"), ref(BlockCommitted, "BB")}, staged, old, []Extent{sb, cb}, ""},
		{"one bad id fails the list", []BlockRef{ref(BlockUncommitted, "AA"), ref(BlockCommitted, "AA")}, staged, old, nil, svcerr.InvalidBlockList},
		{"put blob extents are not blocks", []BlockRef{ref(BlockCommitted, "")}, nil, putRow, nil, svcerr.InvalidBlockList},
		{"nothing staged", []BlockRef{ref(BlockLatest, "CC")}, nil, old, []Extent{cc}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveBlocks(tt.refs, tt.staged, tt.old)
			svcerrtest.Code(t, err, tt.code)
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("extents = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBlocksLeft(t *testing.T) {
	staged := []Block{{ID: "AA", Key: "s/a"}, {ID: "BB", Key: "s/b"}}
	old := &Blob{Extents: []Extent{{Key: "c/b", BlockID: "BB"}, {Key: "c/c", BlockID: "CC"}, {Key: "c/b", BlockID: "BB"}}}
	tests := []struct {
		name       string
		extents    []Extent
		staged     []Block
		old        *Blob
		wantStaged []string
		wantOld    []string
	}{
		{"nothing kept", nil, staged, old, []string{"s/a", "s/b"}, []string{"c/b", "c/c"}},
		{"everything kept", []Extent{{Key: "s/a"}, {Key: "s/b"}, {Key: "c/b"}, {Key: "c/c"}}, staged, old, nil, nil},
		{"some kept", []Extent{{Key: "s/b"}, {Key: "c/c"}}, staged, old, []string{"s/a"}, []string{"c/b"}},
		{"no old blob", []Extent{{Key: "s/a"}}, staged, nil, []string{"s/b"}, nil},
		{"nothing staged", []Extent{{Key: "c/b"}}, nil, old, nil, []string{"c/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotStaged, gotOld := blocksLeft(tt.extents, tt.staged, tt.old)
			if !reflect.DeepEqual(gotStaged, tt.wantStaged) || !reflect.DeepEqual(gotOld, tt.wantOld) {
				t.Fatalf("blocksLeft = %v, %v; want %v, %v", gotStaged, gotOld, tt.wantStaged, tt.wantOld)
			}
		})
	}
}
