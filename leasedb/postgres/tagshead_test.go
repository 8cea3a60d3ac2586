package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/svcerr"
)

// TestTagsTierReadHead: Set Blob Tags and Set Blob Tier of a 4 KiB inline
// blob (its extents TOASTed) read the row's head alone and send their
// UPDATE with COMMIT: 1 transaction, at most 4 statements in 2 round
// trips; Get Blob Tags is 1 statement outside any transaction. No
// statement names the extents; the heads returned are the row's; the
// ETag, Last-Modified and bytes stay.
func TestTagsTierReadHead(t *testing.T) {
	ctx := context.Background()
	s, db, ref, data := inlineLeaseBlob(t, map[string]string{"t": "v"})
	before := readBlob(t, s, "b")
	var c postgres.Counter
	for _, op := range []struct {
		name                            string
		transactions, statements, trips int
		run                             func(ctx context.Context) (*leasedb.BlobHead, error)
	}{
		{"Set Blob Tags", 1, 4, 2, func(ctx context.Context) (*leasedb.BlobHead, error) {
			return db.SetBlobTags(ctx, ref, "", leasedb.Conditions{}, map[string]string{"k": "v", "n": "1"})
		}},
		{"Get Blob Tags", 0, 1, 1, func(ctx context.Context) (*leasedb.BlobHead, error) {
			return db.GetBlobTags(ctx, ref, "", leasedb.Conditions{})
		}},
		{"Set Blob Tier", 1, 4, 2, func(ctx context.Context) (*leasedb.BlobHead, error) {
			return db.SetBlobTier(ctx, ref, "", leasedb.Conditions{}, leasedb.TierCool)
		}},
	} {
		c.Reset()
		h, err := op.run(postgres.CountInto(ctx, &c))
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		got := c.Counts()
		sql := strings.Join(got.SQL, "\n")
		if got.Transactions != op.transactions || got.Statements > op.statements || got.RoundTrips > op.trips {
			t.Errorf("%s: %d transactions, %d statements, %d round trips; want %d, at most %d, at most %d:\n%s",
				op.name, got.Transactions, got.Statements, got.RoundTrips, op.transactions, op.statements, op.trips, sql)
		}
		if strings.Contains(sql, "extents") {
			t.Errorf("%s: a statement names the extents:\n%s", op.name, sql)
		}
		if want := readBlob(t, s, "b").Head(); h == nil || !headEqual(h, want) {
			t.Errorf("%s: returned %+v, the row's head is %+v", op.name, h, want)
		}
	}
	b := readBlob(t, s, "b")
	if b.ETag != before.ETag || !b.LastModified.Equal(before.LastModified) || b.AccessTier != leasedb.TierCool ||
		b.Tags["n"] != "1" || len(b.Extents) != 1 || !bytes.Equal(b.Extents[0].Data, data) {
		t.Fatalf("after the writes: %+v", b)
	}
}

// TestTagsTierUpdateRefused: when the server refuses the UPDATE sent with
// COMMIT (a trigger raises), nothing is committed, the transaction is
// rolled back (the pool's one connection serves the next write at once,
// the row's lock released) and the error is the server's, not an unknown
// outcome.
func TestTagsTierUpdateRefused(t *testing.T) {
	ctx := context.Background()
	s, db, ref := refusingStore(t, map[string]string{"k": "old"}, "NEW.tags LIKE '%refused%' OR NEW.access_tier = 'Archive'")
	wantRefused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "write refused by the test") || errors.Is(err, leasedb.ErrCommitUnknown) {
			t.Fatalf("%s: %v, want the server's refusal, not an unknown outcome", what, err)
		}
	}
	_, err := db.SetBlobTags(ctx, ref, "", leasedb.Conditions{}, map[string]string{"k": "refused"})
	wantRefused("Set Blob Tags", err)
	_, err = db.SetBlobTier(ctx, ref, "", leasedb.Conditions{}, leasedb.TierArchive)
	wantRefused("Set Blob Tier", err)
	if b := readBlob(t, s, "b"); b.Tags["k"] != "old" || b.AccessTier != "" {
		t.Fatalf("after refused writes: tags %v, tier %q", b.Tags, b.AccessTier)
	}
	tctx, cancel := context.WithTimeout(ctx, 10e9)
	defer cancel()
	if _, err := db.SetBlobTags(tctx, ref, "", leasedb.Conditions{}, map[string]string{"k": "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetBlobTier(tctx, ref, "", leasedb.Conditions{}, leasedb.TierCold); err != nil {
		t.Fatal(err)
	}
	if b := readBlob(t, s, "b"); b.Tags["k"] != "new" || b.AccessTier != leasedb.TierCold {
		t.Fatalf("after the writes: tags %v, tier %q", b.Tags, b.AccessTier)
	}
}

// TestTagsTierHoldContainer: Set Blob Tags, Set Blob Tier and Lease Blob
// hold the blob's container as the Tx sequence did (its row FOR SHARE there, its
// advisory lock shared here): a container soft delete, which copies the
// container's rows without locking them (MoveContainer) after it took the
// container exclusive, makes them wait, and they then find the blob gone
// (404), so the copy holds the tags, tier and lease as they were and no
// acknowledged change is left out of it.
func TestTagsTierHoldContainer(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	watcher := pgtest.Connect(t, dsn)
	db := &leasedb.DB{Store: s}
	for _, op := range []struct {
		name string
		run  func(ref leasedb.BlobRef) error
	}{
		{"Set Blob Tags", func(ref leasedb.BlobRef) error {
			_, err := db.SetBlobTags(ctx, ref, "", leasedb.Conditions{}, map[string]string{"k": "new"})
			return err
		}},
		{"Set Blob Tier", func(ref leasedb.BlobRef) error {
			_, err := db.SetBlobTier(ctx, ref, "", leasedb.Conditions{}, leasedb.TierCool)
			return err
		}},
		{"Lease Blob", func(ref leasedb.BlobRef) error {
			_, _, err := db.LeaseBlob(ctx, ref, leasedb.LeaseRequest{Action: leasedb.LeaseAcquire,
				ProposedID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", Duration: -1, BreakPeriod: -1}, leasedb.Conditions{}, "")
			return err
		}},
	} {
		container := strings.ToLower(strings.ReplaceAll(op.name, " ", ""))
		ref := leasedb.BlobRef{Account: "a", Container: container, Name: "b"}
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: container, ETag: `"0x1"`, LastModified: now})
		})
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
			Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}, BlobContent: leasedb.BlobContent{Tags: map[string]string{"k": "old"}}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		held := s.Update(ctx, func(tx leasedb.Tx) error {
			if _, err := tx.Container(ctx, "a", container, leasedb.LockExclusive); err != nil {
				return err
			}
			go func() { done <- op.run(ref) }()
			if waited, err := awaitLockWait(t, watcher, done); !waited {
				t.Errorf("%s did not wait for the container's lock: %v", op.name, err)
				done <- err
			}
			return tx.MoveContainer(ctx, "a", container, "hidden")
		})
		if held != nil {
			t.Fatal(held)
		}
		err := <-done
		if e, ok := svcerr.As(err); !ok || (e.Code != svcerr.BlobNotFound && e.Code != svcerr.ContainerNotFound) {
			t.Fatalf("%s racing a container soft delete: %v, want 404", op.name, err)
		}
		var moved *leasedb.Blob
		if err := s.View(ctx, func(tx leasedb.Tx) error {
			var err error
			moved, err = tx.Blob(ctx, "hidden", container, "b", leasedb.LockNone)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if moved == nil || moved.Tags["k"] != "old" || moved.AccessTier != "" || moved.Lease.ID != "" {
			t.Fatalf("%s: the moved row is %+v", op.name, moved)
		}
	}
}

// TestLockBlobTierCommitAllocs pins the allocations of Set Blob Tags'
// and Set Blob Tier's transactions below leasedb: LockBlobTier (BEGIN
// with it) and the UPDATE with COMMIT, two pairs: 31 and 25 measured
// (the tags' JSON encoded and, once the row has them, decoded: about 10
// of Set Blob Tags').
func TestLockBlobTierCommitAllocs(t *testing.T) {
	ctx := context.Background()
	s := smallBlobStore(t)
	tags := map[string]string{"k": "v"}
	lockThen := func(then func(tx leasedb.Tx, h *leasedb.BlobTierHead) error) func() {
		return func() {
			if err := s.Update(ctx, func(tx leasedb.Tx) error {
				h, _, _, err := tx.(leasedb.BlobTierLocker).LockBlobTier(ctx, "a", "c", "b")
				if err != nil {
					return err
				}
				if h == nil {
					t.Fatal("blob not found")
				}
				return then(tx, h)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantAllocs(t, "LockBlobTier and CommitBlobTags", 100, 36, lockThen(func(tx leasedb.Tx, h *leasedb.BlobTierHead) error {
		return tx.(leasedb.BlobTagsCommitter).CommitBlobTags(ctx, h.Ref, tags, h.Lease)
	}))
	wantAllocs(t, "LockBlobTier and CommitBlobTier", 100, 30, lockThen(func(tx leasedb.Tx, h *leasedb.BlobTierHead) error {
		return tx.(leasedb.BlobTierCommitter).CommitBlobTier(ctx, h.Ref, leasedb.TierCool)
	}))
}

// TestLockBlobTierLockOrder: LockBlobTier takes the container's advisory
// lock before the row's lock, in the order of every write that takes
// both (LockForReplace, Delete Container), so that they cannot deadlock:
// while the row is locked by another transaction, Set Blob Tags waits for
// it holding the container's lock shared.
func TestLockBlobTierLockOrder(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn)
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
		Extents: []leasedb.Extent{{Size: 4, Data: []byte("data")}}}); err != nil {
		t.Fatal(err)
	}
	holder, watcher := pgtest.Connect(t, dsn), pgtest.Connect(t, dsn)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := htx.Exec(ctx, `SELECT 1 FROM blobs WHERE account = 'a' AND container = 'c' AND name = 'b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.SetBlobTags(ctx, ref, "", leasedb.Conditions{}, map[string]string{"k": "v"})
		done <- err
	}()
	if waited, err := awaitLockWait(t, watcher, done); !waited {
		t.Fatalf("Set Blob Tags did not wait for the row's lock: %v", err)
	}
	var shared int
	if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&shared); err != nil {
		t.Fatal(err)
	}
	if shared != 1 {
		t.Errorf("while waiting for the row: %d shared advisory locks granted, want 1 (the container's)", shared)
	}
	if err := htx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := readBlob(t, s, "b"); b.Tags["k"] != "v" {
		t.Fatalf("tags %v", b.Tags)
	}
}
