package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// testAdoptBlob runs DB.AdoptBlob over the store: insert, idempotent rerun,
// changed size, conflict with another blob, a queued key, and ownership
// (a delete queues the adopted key); then one object under two names
// (testAdoptOneName) and racing adoptions of one object
// (testAdoptConcurrent), on their own containers and keys.
func testAdoptBlob(t *testing.T, s leasedb.Store) {
	testAdoptBasics(t, s)
	t.Run("OneObjectOneName", func(t *testing.T) { testAdoptOneName(t, s) })
	t.Run("Concurrent", func(t *testing.T) { testAdoptConcurrent(t, s) })
}

func testAdoptBasics(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	if _, err := db.CreateContainer(ctx, "acct", "c", nil, ""); err != nil {
		t.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: "acct", Container: "c", Name: "dir/a.txt"}
	req := leasedb.AdoptRequest{Key: "x/YQ", Size: 5, Props: leasedb.Props{ContentType: "text/plain", ContentMD5: []byte("0123456789abcdef")}, Metadata: map[string]string{"k": "v"}}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || !ok {
		t.Fatalf("AdoptBlob = %v, %v; want true", ok, err)
	}
	b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Type != "BlockBlob" || b.Size != 5 || b.ETag == "" || b.Props.ContentType != "text/plain" || string(b.Props.ContentMD5) != "0123456789abcdef" ||
		b.Metadata["k"] != "v" || len(b.Extents) != 1 || !b.Extents[0].Equal(leasedb.Extent{Key: "x/YQ", Size: 5}) {
		t.Fatalf("adopted row %+v", b)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("collection queue after adopting = %q, %v", keys, err)
	}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || ok {
		t.Fatalf("second AdoptBlob = %v, %v; want false", ok, err)
	}
	if b2, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err != nil || b2.ETag != b.ETag {
		t.Fatalf("rerun changed the row: %v, %v", b2, err)
	}
	changed := req
	changed.Size = 6
	if _, err := db.AdoptBlob(ctx, ref, changed); !errors.Is(err, leasedb.ErrAdoptChanged) {
		t.Fatalf("AdoptBlob with another size = %v", err)
	}
	other := req
	other.Key = "x/Yg"
	if _, err := db.AdoptBlob(ctx, ref, other); !errors.Is(err, leasedb.ErrAdoptConflict) {
		t.Fatalf("AdoptBlob over another blob = %v", err)
	}
	if _, err := db.AdoptBlob(ctx, leasedb.BlobRef{Account: "acct", Container: "missing", Name: "n"}, req); err == nil {
		t.Fatal("AdoptBlob into a missing container succeeded")
	}

	// Ownership: deleting the blob queues the adopted key; adopting the
	// queued object again is refused.
	if err := db.DeleteBlob(ctx, ref, "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || !slices.Equal(keys, []string{"x/YQ"}) {
		t.Fatalf("collection queue after delete = %q, %v", keys, err)
	}
	if _, err := db.AdoptBlob(ctx, ref, req); !errors.Is(err, leasedb.ErrAdoptQueued) {
		t.Fatalf("AdoptBlob of a queued key = %v", err)
	}
	if keys, err := s.CollectionKeys(ctx); err != nil || !slices.Equal(keys, []string{"x/YQ"}) {
		t.Fatalf("collection queue after the refused adoption = %q, %v", keys, err)
	}
	// Once collected (forgotten), the name can be adopted again.
	if _, err := s.Forget(ctx, []string{"x/YQ"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.AdoptBlob(ctx, ref, req); err != nil || !ok {
		t.Fatalf("AdoptBlob after collection = %v, %v", ok, err)
	}
}

// testAdoptOneName: an object backs one blob name at a time. Adopting its
// key under a second name (same or another container) is ErrAdoptShared
// and leaves nothing behind, as long as the first name's blob or one of its
// snapshots references the key; once the first name has let it go and the
// key was collected, another name may adopt it.
func testAdoptOneName(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	for _, c := range []string{"one-c1", "one-c2"} {
		if _, err := db.CreateContainer(ctx, "acct", c, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(c, n string) leasedb.BlobRef { return leasedb.BlobRef{Account: "acct", Container: c, Name: n} }
	const key = "x/b25lLW9iamVjdA"
	req := leasedb.AdoptRequest{Key: key, Size: 10, Props: leasedb.Props{ContentType: "text/plain"}}
	a, b, other := ref("one-c1", "a"), ref("one-c1", "b"), ref("one-c2", "a")
	mustAdopt := func(r leasedb.BlobRef) {
		t.Helper()
		if ok, err := db.AdoptBlob(ctx, r, req); err != nil || !ok {
			t.Fatalf("AdoptBlob(%s) = %v, %v; want true", r, ok, err)
		}
	}
	refused := func(r leasedb.BlobRef, want error) {
		t.Helper()
		if ok, err := db.AdoptBlob(ctx, r, req); !errors.Is(err, want) || ok {
			t.Fatalf("AdoptBlob(%s) = %v, %v; want %v", r, ok, err, want)
		}
		if _, _, err := db.GetBlob(ctx, r, "", leasedb.Conditions{}); !svcerr.HasCode(err, svcerr.BlobNotFound) && !errors.Is(want, leasedb.ErrAdoptConflict) {
			t.Fatalf("refused adoption left a blob at %s (%v)", r, err)
		}
	}
	queue := func() []string {
		t.Helper()
		keys, err := s.CollectionKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(keys, func(k string) bool { return k != key })
	}

	mustAdopt(a)
	refused(b, leasedb.ErrAdoptShared)
	refused(other, leasedb.ErrAdoptShared)
	if ok, err := db.AdoptBlob(ctx, a, req); err != nil || ok {
		t.Fatalf("rerun AdoptBlob(%s) = %v, %v; want false", a, ok, err)
	}
	if q := queue(); len(q) != 0 {
		t.Fatalf("refused adoptions queued the key: %q", q)
	}

	// A snapshot keeps the key when the blob is overwritten: still held.
	if _, err := db.CreateSnapshot(ctx, a, "", leasedb.Conditions{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.AddIntent(ctx, "b/one-new", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: a, Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "b/one-new", Size: 3}}}); err != nil {
		t.Fatal(err)
	}
	if q := queue(); len(q) != 0 {
		t.Fatalf("overwriting a blob whose snapshot shares the key queued it: %q", q)
	}
	refused(other, leasedb.ErrAdoptShared)
	// Its last row goes: the key is queued, and adopting it now would lose
	// the bytes to the collector.
	if err := db.DeleteBlob(ctx, a, "", leasedb.Conditions{}, leasedb.OnlySnapshots); err != nil {
		t.Fatal(err)
	}
	if q := queue(); !slices.Equal(q, []string{key}) {
		t.Fatalf("queue after the last reference went = %q", q)
	}
	refused(other, leasedb.ErrAdoptQueued)
	// Collected and put back: another name takes it over, and from then on
	// that name holds it.
	if _, err := s.Forget(ctx, []string{key}); err != nil {
		t.Fatal(err)
	}
	mustAdopt(other)
	refused(a, leasedb.ErrAdoptConflict) // a is a different blob now
	refused(b, leasedb.ErrAdoptShared)

	// Deleting the holder's container lets the key go too.
	if err := db.DeleteContainer(ctx, "acct", "one-c2", "", leasedb.Conditions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, queue()); err != nil {
		t.Fatal(err)
	}
	mustAdopt(b)
	// And the name that adopted it may adopt it again after a delete.
	if err := db.DeleteBlob(ctx, b, "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, queue()); err != nil {
		t.Fatal(err)
	}
	mustAdopt(b)
	refused(ref("one-c1", "c"), leasedb.ErrAdoptShared)
}

// testAdoptConcurrent: of 16 racing adoptions of one object under 16 names,
// exactly one succeeds; the others are ErrAdoptShared and leave no blob.
func testAdoptConcurrent(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	if _, err := db.CreateContainer(ctx, "acct", "race", nil, ""); err != nil {
		t.Fatal(err)
	}
	const n = 16
	req := leasedb.AdoptRequest{Key: "x/cmFjZQ", Size: 4}
	refOf := func(i int) leasedb.BlobRef {
		return leasedb.BlobRef{Account: "acct", Container: "race", Name: fmt.Sprintf("n%02d", i)}
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []string
		others []error
		start  = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := db.AdoptBlob(ctx, refOf(i), req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ok:
				won = append(won, refOf(i).Name)
			case errors.Is(err, leasedb.ErrAdoptShared):
			default:
				others = append(others, fmt.Errorf("%s: %v, %w", refOf(i), ok, err))
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 || len(others) != 0 {
		t.Fatalf("%d adoptions succeeded (%q), unexpected outcomes %v; want exactly one and the rest ErrAdoptShared", len(won), won, others)
	}
	for i := range n {
		_, _, err := db.GetBlob(ctx, refOf(i), "", leasedb.Conditions{})
		if exists := err == nil; exists != (refOf(i).Name == won[0]) {
			t.Errorf("%s: exists %v (%v), winner %s", refOf(i), exists, err, won[0])
		}
	}
}
