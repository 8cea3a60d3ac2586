package postgres_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/svcerr"
)

// replacePausingStore runs every Update with a Tx whose LockForReplace,
// the first time it is called after pause, signals locked once it holds
// its locks and waits for proceed: a few-statement Put Blob between its
// locks and its commit.
type replacePausingStore struct {
	*postgres.Store
	mu              sync.Mutex
	locked, proceed chan struct{}
}

func (p *replacePausingStore) pause() (locked, proceed chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.locked, p.proceed = make(chan struct{}), make(chan struct{})
	return p.locked, p.proceed
}

func (p *replacePausingStore) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return p.Store.Update(ctx, func(tx leasedb.Tx) error {
		return fn(replacePausingTx{Tx: tx, l: tx.(leasedb.BlobWriteLocker), p: p})
	})
}

type replacePausingTx struct {
	leasedb.Tx
	l leasedb.BlobWriteLocker
	p *replacePausingStore
}

func (t replacePausingTx) LockForReplace(ctx context.Context, ref leasedb.BlobRef, read leasedb.ReplaceRead) (leasedb.ReplaceState, error) {
	st, err := t.l.LockForReplace(ctx, ref, read)
	t.p.mu.Lock()
	locked, proceed := t.p.locked, t.p.proceed
	t.p.locked = nil
	t.p.mu.Unlock()
	if locked != nil {
		close(locked)
		<-proceed
	}
	return st, err
}

func (t replacePausingTx) CommitReplace(ctx context.Context, w leasedb.ReplaceWrite) error {
	return t.l.CommitReplace(ctx, w)
}

// TestPutBlobRacesContainerDelete: a few-statement Put Blob (an overwrite
// with If-Match, or a new name) racing Delete Container, with and without
// container soft delete, lands before the delete (the delete waits for
// it, and then deletes or moves the row the put wrote, whose key goes with
// it) or, when the delete came first, waits for it and fails
// ContainerNotFound; never a row in the soft-deleted container that is
// not the one the put acknowledged (its key freed by the put: a restore
// would bring back a row whose bytes are collected).
func TestPutBlobRacesContainerDelete(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*replacePausingStore, *leasedb.DB, string, func(done <-chan error) (bool, error)) {
		t.Helper()
		dsn := pgtest.Start(t)
		s := &replacePausingStore{Store: open(t, dsn)}
		db := &leasedb.DB{Store: s, Grace: time.Minute}
		watcher := pgtest.Connect(t, dsn)
		if _, err := db.CreateContainer(ctx, "a", "c", nil, ""); err != nil {
			t.Fatal(err)
		}
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, "old", now.Add(time.Hour)) })
		b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Key: "old", Size: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		// waits is awaitLockWait: when the operation ended without
		// waiting, its result.
		waits := func(done <-chan error) (bool, error) { return awaitLockWait(t, watcher, done) }
		return s, db, strings.Trim(b.ETag, `"`), waits
	}
	put := func(t *testing.T, db *leasedb.DB, s leasedb.Store, name, key string, cond leasedb.Conditions) func() error {
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		return func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: name},
				Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 1}}, Cond: cond})
			return err
		}
	}
	queued := func(t *testing.T, s leasedb.Store) []string {
		t.Helper()
		keys, err := s.CollectionKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	hiddenAccount := func(t *testing.T, s leasedb.Store) string {
		t.Helper()
		var account string
		if err := s.View(ctx, func(tx leasedb.Tx) error {
			ds, err := tx.ListDeletedContainers(ctx, "a", "", "", "", 10)
			if err != nil {
				return err
			}
			if len(ds) != 1 {
				t.Fatalf("%d soft-deleted containers, want 1", len(ds))
			}
			account = leasedb.DeletedAccount("a", ds[0].Version)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return account
	}

	for _, retention := range []time.Duration{0, time.Hour} {
		what := "delete"
		if retention > 0 {
			what = "soft delete"
		}
		t.Run("put first, then "+what, func(t *testing.T) {
			s, db, oldETag, waits := setup(t)
			locked, proceed := s.pause()
			putDone := make(chan error, 1)
			go func() { putDone <- put(t, db, s, "b", "new", leasedb.Conditions{IfMatch: []string{oldETag}})() }()
			<-locked
			delDone := make(chan error, 1)
			go func() {
				delDone <- db.DeleteContainerRetained(ctx, "a", "c", "", leasedb.Conditions{}, retention)
			}()
			waited, delErr := waits(delDone)
			close(proceed)
			if err := <-putDone; err != nil {
				t.Fatalf("the put that held its locks first: %v", err)
			}
			if waited {
				delErr = <-delDone
			}
			if delErr != nil {
				t.Fatal(delErr)
			}
			keys := queued(t, s)
			if !slices.Contains(keys, "old") {
				t.Errorf("the key the put replaced is not queued: %v", keys)
			}
			if retention == 0 {
				if !slices.Contains(keys, "new") {
					t.Errorf("the key of the row the put wrote, deleted with its container, is not queued: %v", keys)
				}
				return
			}
			if slices.Contains(keys, "new") {
				t.Errorf("the key of the row the soft-deleted container keeps is queued: %v", keys)
			}
			b := readBlobIn(t, s, hiddenAccount(t, s), "b")
			if b == nil || len(b.Extents) != 1 || b.Extents[0].Key != "new" {
				t.Fatalf("the soft-deleted container keeps %+v, want the row the put acknowledged (key new)", b)
			}
		})
		for _, tc := range []struct {
			name string
			blob string
			cond func(etag string) leasedb.Conditions
		}{
			{"overwrite with If-Match", "b", func(etag string) leasedb.Conditions { return leasedb.Conditions{IfMatch: []string{etag}} }},
			{"new name", "fresh", func(string) leasedb.Conditions { return leasedb.Conditions{} }},
		} {
			t.Run(what+" first, then put: "+tc.name, func(t *testing.T) {
				s, db, oldETag, waits := setup(t)
				// The delete holds the container's lock, as Delete
				// Container does, until the put waits for it.
				locked, proceed := make(chan struct{}), make(chan struct{})
				delDone := make(chan error, 1)
				go func() {
					delDone <- s.Store.Update(ctx, func(tx leasedb.Tx) error {
						if _, err := tx.Container(ctx, "a", "c", leasedb.LockExclusive); err != nil {
							return err
						}
						close(locked)
						<-proceed
						if retention > 0 {
							return tx.MoveContainer(ctx, "a", "c", leasedb.DeletedAccount("a", "v1"))
						}
						_, err := tx.DeleteContainer(ctx, "a", "c")
						return err
					})
				}()
				<-locked
				putDone := make(chan error, 1)
				go func() { putDone <- put(t, db, s, tc.blob, "new", tc.cond(oldETag))() }()
				waited, err := waits(putDone)
				close(proceed)
				if derr := <-delDone; derr != nil {
					t.Fatal(derr)
				}
				if waited {
					err = <-putDone
				}
				if !svcerr.HasCode(err, svcerr.ContainerNotFound) {
					t.Fatalf("put after the delete: %v, want ContainerNotFound", err)
				}
				if retention > 0 {
					b := readBlobIn(t, s, leasedb.DeletedAccount("a", "v1"), "b")
					if b == nil || b.Extents[0].Key != "old" {
						t.Fatalf("the moved container keeps %+v, want the row before the put (key old)", b)
					}
				}
				if b := readBlobIn(t, s, "a", tc.blob); b != nil {
					t.Fatalf("a row in the deleted container: %+v", b)
				}
			})
		}
	}
}
