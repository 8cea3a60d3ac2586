package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/svcerr"
)

// TestLockForReplacePlanShape: LockForReplace's statement, as the cached
// generic plan runs it, joins four times (the container's lock, the
// settings, the container with the name's lock, the row, the container's
// key share): every join is set up on every run, and with a constant
// first relation and the name's lock a subquery of its own it joined six
// times.
func TestLockForReplacePlanShape(t *testing.T) {
	ctx := context.Background()
	dsn, _, _ := containerStore(t)
	conn := pgtest.Connect(t, dsn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var plan string
	if _, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err == nil {
		_, err = tx.Prepare(ctx, "lock_for_replace", postgres.LockForReplaceSQL)
	}
	if err == nil {
		err = tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE lock_for_replace('a', 'c', 'b', 1, 2, true)`,
			pgx.QueryExecModeSimpleProtocol).Scan(&plan)
	}
	if err != nil {
		t.Fatal(err)
	}
	joins := 0
	if err := planNodes(plan, func(m map[string]any) {
		if m["Node Type"] == "Nested Loop" {
			joins++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if joins > 4 {
		t.Errorf("LockForReplace's generic plan has %d joins, want at most 4\n%s", joins, plan)
	}
}

// TestLockForReplaceLockOrder: LockForReplace takes the container's lock
// (shared) before the name's, and the name's only when the container
// exists. While a Delete Container holds the container's lock, a Put Blob
// of a name in it waits for that lock holding nothing; once it is
// granted, the put goes on. A put in an absent container holds the
// container's lock alone, never the name's.
func TestLockForReplaceLockOrder(t *testing.T) {
	ctx := context.Background()
	dsn, s, db := containerStore(t)
	watcher := pgtest.Connect(t, dsn)
	// advisory is the advisory locks of the database's backends, granted
	// and awaited, by mode.
	advisory := func() map[string]int {
		t.Helper()
		rows, err := watcher.Query(ctx, `SELECT mode || CASE WHEN granted THEN ' granted' ELSE ' awaited' END, count(*)::int
			FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
			k string
			n int
		}, error) {
			var v struct {
				k string
				n int
			}
			return v, r.Scan(&v.k, &v.n)
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, v := range got {
			m[v.k] = v.n
		}
		return m
	}
	want := func(what string, got map[string]int, want map[string]int) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: advisory locks %v, want %v", what, got, want)
		}
	}

	// The container's lock held exclusive, as Delete Container takes it.
	locked, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.Update(ctx, func(tx leasedb.Tx) error {
			if _, err := tx.Container(ctx, "a", "c", leasedb.LockExclusive); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	select {
	case <-locked:
	case err := <-held:
		t.Fatal(err)
	}
	put := make(chan error, 1)
	go func() {
		_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "c", Name: "b"},
			Type: "BlockBlob", Extents: []leasedb.Extent{{Size: 1, Data: []byte{1}}}})
		put <- err
	}()
	if waited, err := awaitLockWait(t, watcher, put); !waited {
		t.Fatalf("Put Blob did not wait for the container's lock: %v", err)
	}
	want("a put awaiting the container's lock", advisory(), map[string]int{"ExclusiveLock granted": 1, "ShareLock awaited": 1})
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-put:
		if err != nil {
			t.Fatalf("Put Blob once the container's lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Put Blob still waits once the container's lock was released")
	}

	// Within one transaction: the locks LockForReplace holds.
	errDone := errors.New("done")
	for _, tc := range []struct {
		container string
		locks     map[string]int
	}{
		{"c", map[string]int{"ExclusiveLock granted": 1, "ShareLock granted": 1}},
		{"missing", map[string]int{"ShareLock granted": 1}},
	} {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			st, err := tx.(leasedb.BlobWriteLocker).LockForReplace(ctx, leasedb.BlobRef{Account: "a", Container: tc.container, Name: "n"}, leasedb.ReadKeysIfPlain)
			if err != nil {
				return err
			}
			if st.ContainerExists != (tc.container == "c") {
				t.Errorf("container %s: ContainerExists %v", tc.container, st.ContainerExists)
			}
			want("LockForReplace in container "+tc.container, advisory(), tc.locks)
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatal(err)
		}
	}
	// And the put in the absent container fails as it did.
	_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: "a", Container: "missing", Name: "n"},
		Type: "BlockBlob", Extents: []leasedb.Extent{{Size: 1, Data: []byte{1}}}})
	if !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		t.Fatalf("Put Blob in an absent container: %v, want ContainerNotFound", err)
	}
}
