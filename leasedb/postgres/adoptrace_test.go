package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// nameRowsHookStore runs every Update with a Tx whose NameRows of the name
// hookRef calls hook (once) before it reads.
type nameRowsHookStore struct {
	leasedb.Store
	hookRef leasedb.BlobRef
	once    sync.Once
	hook    func()
}

func (h *nameRowsHookStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return h.Store.Update(ctx, func(tx leasedb.Tx) error { return fn(nameRowsHookTx{Tx: tx, h: h}) })
}

type nameRowsHookTx struct {
	leasedb.Tx
	h *nameRowsHookStore
}

func (t nameRowsHookTx) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if (leasedb.BlobRef{Account: account, Container: container, Name: blob}) == t.h.hookRef {
		t.h.once.Do(t.h.hook)
	}
	return t.Tx.NameRows(ctx, account, container, blob)
}

// TestAdoptRacesUndelete: an adopted key held only by its name's
// soft-deleted blob is that name's still. When Undelete Blob moves the row
// back to the live blob while AdoptBlob of the key under another name
// checks whether the holder still references it, the check must see the
// row in one place or the other: read between the two (the live blob
// before the move, the other rows after it), the key would be adopted by
// a second name with no share recorded, and a delete of either blob would
// collect the other's bytes.
func TestAdoptRacesUndelete(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	watcher := pgtest.Connect(t, dsn)
	addContainer(t, s)
	plain := &leasedb.DB{Store: s, Grace: time.Minute}
	if err := plain.SetServicePropertiesRetention(ctx, "a", "<StorageServiceProperties/>", 3); err != nil {
		t.Fatal(err)
	}
	holder := leasedb.BlobRef{Account: "a", Container: "c", Name: "h"}
	req := leasedb.AdoptRequest{Key: "adopted/k", Size: 5}
	if _, err := plain.AdoptBlob(ctx, holder, req); err != nil {
		t.Fatal(err)
	}
	if err := plain.DeleteBlob(ctx, holder, "", leasedb.Conditions{}, leasedb.KeepSnapshots); err != nil {
		t.Fatal(err)
	}
	undone := make(chan error, 1)
	hs := &nameRowsHookStore{Store: s, hookRef: holder}
	hs.hook = func() {
		// The adopter has read the holder's live blob (none): Undelete
		// Blob of the holder now, and wait for it to commit or to wait
		// for a lock the adopter holds.
		done := make(chan error, 1)
		go func() { done <- plain.UndeleteBlob(ctx, holder) }()
		if waited, err := awaitLockWait(t, watcher, done); waited {
			go func() { undone <- <-done }()
		} else {
			undone <- err
		}
	}
	adopter := &leasedb.DB{Store: hs, Grace: time.Minute}
	_, err := adopter.AdoptBlob(ctx, leasedb.BlobRef{Account: "a", Container: "c", Name: "r"}, req)
	if uerr := <-undone; uerr != nil {
		t.Fatalf("Undelete Blob: %v", uerr)
	}
	if !errors.Is(err, leasedb.ErrAdoptShared) {
		t.Fatalf("AdoptBlob of a key its holder's blob references: %v, want ErrAdoptShared", err)
	}
	if b := readBlob(t, s, "h"); b == nil || len(b.Extents) != 1 || b.Extents[0].Key != req.Key {
		t.Fatalf("the undeleted holder %+v, want it on %s", b, req.Key)
	}
	if b := readBlob(t, s, "r"); b != nil {
		t.Fatalf("the second name holds %+v", b.Extents)
	}
}
