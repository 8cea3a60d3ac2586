package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// fillContainer gives container c of acct a blob with tags, a snapshot, a
// staged block and an adopted key; it returns the blob row.
func fillContainer(t *testing.T, s leasedb.Store, c string) *leasedb.Blob {
	t.Helper()
	mustInsertContainer(t, s, c)
	b := fullBlob(c, "b") // leased
	b.Extents = []leasedb.Extent{{Key: "obj/" + c + "/2", Size: 1 << 40}, {Key: "obj/" + c + "/1", Size: 17}, {Key: "x/adopted-" + c, Size: 3}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		snap := *b
		snap.Snapshot = "2024-01-01T00:00:00.0000000Z"
		if err := tx.PutSnapshot(ctx, &snap); err != nil {
			return err
		}
		if _, err := tx.StageBlock(ctx, acct, c, "staged", leasedb.Block{ID: "YmxrMQ==", Key: "blk/" + c, Size: 1, StagedAt: base}); err != nil {
			return err
		}
		_, claimed, err := tx.ClaimAdoptedKey(ctx, "x/adopted-"+c, leasedb.BlobRef{Account: acct, Container: c, Name: "b"})
		if err == nil && !claimed {
			t.Errorf("adopted key already held")
		}
		return err
	})
	return b
}

// contents reads what fillContainer put under (account, c).
type contents struct {
	container *leasedb.Container
	blob      *leasedb.Blob
	snapshots []*leasedb.Blob
	blocks    []leasedb.Block
	tagged    []leasedb.TaggedBlob
	holder    leasedb.BlobRef
}

func readContents(t *testing.T, s leasedb.Store, account, c string) contents {
	t.Helper()
	var out contents
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		if out.container, err = tx.Container(ctx, account, c, leasedb.LockNone); err != nil {
			return err
		}
		if out.blob, err = tx.Blob(ctx, account, c, "b", leasedb.LockNone); err != nil {
			return err
		}
		if out.snapshots, err = tx.Snapshots(ctx, account, c, "b"); err != nil {
			return err
		}
		if out.blocks, err = tx.Blocks(ctx, account, c, "staged"); err != nil {
			return err
		}
		eq := leasedb.TagRange{Key: "project", Lo: "blobgw", LoOp: ">=", Hi: "blobgw", HiOp: "<="}
		if out.tagged, err = tx.FindTagged(ctx, account, c, eq, "", "", 10); err != nil {
			return err
		}
		// A claim by another name reports the holder (and claims nothing
		// while one is recorded).
		out.holder, _, err = tx.ClaimAdoptedKey(ctx, "x/adopted-"+c, leasedb.BlobRef{Account: "probe", Container: "probe", Name: "probe"})
		return err
	})
	return out
}

func checkHolds(t *testing.T, what string, got contents, account, c string, want *leasedb.Blob) {
	t.Helper()
	if got.container == nil || got.container.Account != account || got.container.Name != c {
		t.Fatalf("%s: container %+v, want %s/%s", what, got.container, account, c)
	}
	w := *want
	w.Account = account
	checkBlob(t, &w, got.blob)
	if len(got.snapshots) != 1 || got.snapshots[0].Account != account || !reflect.DeepEqual(got.snapshots[0].Extents, want.Extents) {
		t.Errorf("%s: snapshots %+v", what, got.snapshots)
	}
	if len(got.blocks) != 1 || got.blocks[0].Key != "blk/"+c {
		t.Errorf("%s: blocks %+v", what, got.blocks)
	}
	if len(got.tagged) != 1 || got.tagged[0].Name != "b" {
		t.Errorf("%s: Find Blobs by Tags found %+v, want b", what, got.tagged)
	}
	if want := (leasedb.BlobRef{Account: account, Container: c, Name: "b"}); got.holder != want {
		t.Errorf("%s: adopted key held by %v, want %v", what, got.holder, want)
	}
}

func checkEmpty(t *testing.T, what string, got contents) {
	t.Helper()
	if got.container != nil || got.blob != nil || len(got.snapshots) != 0 || len(got.blocks) != 0 || len(got.tagged) != 0 {
		t.Errorf("%s: rows left: container %v, blob %v, %d snapshots, %d blocks, %d tagged",
			what, got.container != nil, got.blob != nil, len(got.snapshots), len(got.blocks), len(got.tagged))
	}
}

// testContainerMove: MoveContainer takes the container row and every row
// under it to the other account, exactly, and back; the keys stay
// referenced throughout; a missing source is ErrNotFound and a taken
// target ErrExists, and neither moves anything.
func testContainerMove(t *testing.T, s leasedb.Store) {
	b := fillContainer(t, s, "c")
	keysBefore := referencedKeys(t, s)
	hidden := leasedb.DeletedAccount(acct, "01D60F8BB59A4652")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.MoveContainer(ctx, acct, "c", hidden) })
	checkEmpty(t, "source after the move", readContents(t, s, acct, "c"))
	checkHolds(t, "target after the move", readContents(t, s, hidden, "c"), hidden, "c", b)
	if got := referencedKeys(t, s); !slices.Equal(got, keysBefore) {
		t.Errorf("referenced keys after the move %q, want %q", got, keysBefore)
	}

	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.MoveContainer(ctx, acct, "c", hidden) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("moving a moved container: %v, want ErrNotFound", err)
	}
	// A live container of the name: moving back is refused, both stay.
	mustInsertContainer(t, s, "c")
	err = s.Update(ctx, func(tx leasedb.Tx) error { return tx.MoveContainer(ctx, hidden, "c", acct) })
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("moving onto a taken name: %v, want ErrExists", err)
	}
	if got := readContents(t, s, acct, "c"); got.blob != nil || len(got.snapshots) != 0 || len(got.blocks) != 0 {
		t.Errorf("a refused move put rows into the live container")
	}
	checkHolds(t, "target after a refused move", readContents(t, s, hidden, "c"), hidden, "c", b)

	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, err := tx.DeleteContainer(ctx, acct, "c")
		return err
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.MoveContainer(ctx, hidden, "c", acct) })
	checkHolds(t, "moved back", readContents(t, s, acct, "c"), acct, "c", b)
	checkEmpty(t, "hidden account after the move back", readContents(t, s, hidden, "c"))
}

func referencedKeys(t *testing.T, s leasedb.Store) []string {
	t.Helper()
	var keys []string
	if err := s.ReferencedKeys(ctxT(t), func(key, _ string) error {
		keys = append(keys, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// testDeletedContainerRecords: the records of soft-deleted containers
// round-trip, list by name then version with prefix and position, and
// come back by expiry time.
func testDeletedContainerRecords(t *testing.T, s leasedb.Store) {
	rec := func(name, version string, expires time.Duration) *leasedb.DeletedContainer {
		return &leasedb.DeletedContainer{Account: acct, Name: name, Version: version, DeletedAt: base, ExpiresAt: base.Add(expires)}
	}
	all := []*leasedb.DeletedContainer{
		rec("a", "01D60F8BB59A4652", 3*time.Hour), rec("b", "01D60F8BB59A4652", time.Hour),
		rec("b", "01D60F8BB59A4653", 2*time.Hour), rec("b-x", "01D60F8BB59A4650", 4*time.Hour),
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, r := range []int{2, 0, 3, 1} {
			if err := tx.InsertDeletedContainer(ctx, all[r]); err != nil {
				return err
			}
		}
		other := rec("b", "01D60F8BB59A4652", time.Hour)
		other.Account = "other"
		return tx.InsertDeletedContainer(ctx, other)
	})
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.InsertDeletedContainer(ctx, rec("b", "01D60F8BB59A4652", 0)) })
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("second insert: %v, want ErrExists", err)
	}
	norm := func(r *leasedb.DeletedContainer) leasedb.DeletedContainer {
		n := *r
		n.DeletedAt, n.ExpiresAt = normTime(r.DeletedAt), normTime(r.ExpiresAt)
		return n
	}
	names := func(rs []*leasedb.DeletedContainer) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name+"@"+r.Version)
		}
		return out
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		got, err := tx.DeletedContainer(ctx, acct, "b", "01D60F8BB59A4653")
		if err != nil {
			return err
		}
		if got == nil || norm(got) != norm(all[2]) {
			t.Errorf("DeletedContainer = %+v, want %+v", got, all[2])
		} else {
			checkUTC(t, "deleted container", got.DeletedAt, got.ExpiresAt)
		}
		if none, err := tx.DeletedContainer(ctx, acct, "b", "01D60F8BB59A4654"); err != nil || none != nil {
			t.Errorf("absent record: %+v, %v", none, err)
		}
		for _, tc := range []struct {
			prefix, after, afterVersion string
			limit                       int
			want                        []string
		}{
			{"", "", "", 10, names(all)},
			{"", "", "", 2, names(all[:2])},
			{"", "a", "01D60F8BB59A4652", 10, names(all[1:])},
			{"", "b", "", 10, names(all[1:])},
			{"", "b", "01D60F8BB59A4652", 10, names(all[2:])},
			{"", "b", "01D60F8BB59A4653", 10, names(all[3:])},
			{"b", "", "", 10, names(all[1:])},
			{"b-", "", "", 10, names(all[3:])},
			{"b", "a", "zzz", 10, names(all[1:])},
			{"c", "", "", 10, nil},
		} {
			got, err := tx.ListDeletedContainers(ctx, acct, tc.prefix, tc.after, tc.afterVersion, tc.limit)
			if err != nil {
				return err
			}
			if !slices.Equal(names(got), tc.want) {
				t.Errorf("ListDeletedContainers(%q, %q, %q, %d) = %q, want %q", tc.prefix, tc.after, tc.afterVersion, tc.limit, names(got), tc.want)
			}
		}
		exp, err := tx.ExpiredContainers(ctx, base.Add(2*time.Hour), 10)
		if err != nil {
			return err
		}
		// Soonest first; the other account's too.
		if got := names(exp); len(got) != 3 || got[2] != "b@01D60F8BB59A4653" {
			t.Errorf("ExpiredContainers = %q, want the two b@...52 then b@...53", got)
		}
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.RemoveDeletedContainer(ctx, acct, "b", "01D60F8BB59A4652")
	})
	err = s.Update(ctx, func(tx leasedb.Tx) error { return tx.RemoveDeletedContainer(ctx, acct, "b", "01D60F8BB59A4652") })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("second remove: %v, want ErrNotFound", err)
	}
}

// testContainerSoftDelete: the operations. Delete Container with a
// retention hides the container and frees the name; List Containers with
// deleted shows it beside a new container of the name; Restore Container
// refuses the taken name, then brings everything back; an expired one is
// purged with its keys queued, an unexpired one stays.
func testContainerSoftDelete(t *testing.T, s leasedb.Store) {
	db := &leasedb.DB{Store: s}
	ctx := ctxT(t)
	b := fillContainer(t, s, "c")
	if err := db.DeleteContainerRetained(ctx, acct, "c", "", leasedb.Conditions{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	checkEmpty(t, "after a soft delete", readContents(t, s, acct, "c"))
	// Operators' lease listings pass the deleted container's blobs by.
	if rows, _, err := db.ListLeases(ctx, leasedb.LeaseFilter{}); err != nil || len(rows) != 0 {
		t.Errorf("ListLeases after a soft delete: %+v, %v; want none", rows, err)
	}
	if _, _, err := db.GetContainer(ctx, acct, "c", ""); !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		t.Fatalf("Get Container Properties of a deleted container: %v", err)
	}
	if n := len(collectionKeys(t, s)); n != 0 {
		t.Errorf("a soft delete queued %d keys", n)
	}
	if _, err := db.CreateContainer(ctx, acct, "c", nil, ""); err != nil {
		t.Fatalf("re-creating the name: %v", err)
	}
	list, next, now, err := db.ListContainersDeleted(ctx, acct, "", "", 10, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || next != "" || list[0].Deleted != nil || list[1].Deleted == nil || list[1].Name != "c" || list[1].Account != acct {
		t.Fatalf("List with deleted: %+v (next %q), want live c, deleted c", list, next)
	}
	del := list[1].Deleted
	if len(del.Version) != 16 || del.RemainingDays(now) != 1 || !del.ExpiresAt.Equal(del.DeletedAt.Add(time.Hour)) {
		t.Errorf("deleted c: %+v, remaining %d days", del, del.RemainingDays(now))
	}
	// Paging one at a time walks the same two.
	page, next, _, err := db.ListContainersDeleted(ctx, acct, "", "", 1, true)
	if err != nil || len(page) != 1 || page[0].Deleted != nil || next != "c" {
		t.Fatalf("page 1: %+v next %q err %v", page, next, err)
	}
	page, next, _, err = db.ListContainersDeleted(ctx, acct, "", next, 1, true)
	if err != nil || len(page) != 1 || page[0].Deleted == nil || next != "" {
		t.Fatalf("page 2: %+v next %q err %v", page, next, err)
	}
	if plain, _, _, err := db.ListContainersDeleted(ctx, acct, "", "", 10, false); err != nil || len(plain) != 1 {
		t.Errorf("List without deleted: %d entries, %v", len(plain), err)
	}

	if err := db.RestoreContainer(ctx, acct, "c", del.Version); !svcerr.HasCode(err, svcerr.ContainerAlreadyExists) {
		t.Fatalf("restore onto a taken name: %v", err)
	}
	if err := db.RestoreContainer(ctx, acct, "c", "01D60F8BB59A4652"); !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		t.Fatalf("restore of an unknown version: %v", err)
	}
	if err := db.DeleteContainer(ctx, acct, "c", "", leasedb.Conditions{}); err != nil {
		t.Fatal(err)
	}
	if err := db.RestoreContainer(ctx, acct, "c", del.Version); err != nil {
		t.Fatalf("restore: %v", err)
	}
	checkHolds(t, "restored", readContents(t, s, acct, "c"), acct, "c", b)
	if rows, _, err := db.ListLeases(ctx, leasedb.LeaseFilter{}); err != nil || len(rows) != 1 || rows[0].Blob != "b" {
		t.Errorf("ListLeases after the restore: %+v, %v; want blob b", rows, err)
	}
	if err := db.RestoreContainer(ctx, acct, "c", del.Version); !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		t.Fatalf("second restore: %v", err)
	}

	// Expiry: one deleted with a microsecond of retention expires (the
	// wait only makes sure of it), one with an hour stays.
	fillContainer(t, s, "short")
	if err := db.DeleteContainerRetained(ctx, acct, "short", "", leasedb.Conditions{}, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContainerRetained(ctx, acct, "c", "", leasedb.Conditions{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	n, err := db.PurgeExpiredContainers(ctx, 100)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1", n, err)
	}
	queued := collectionKeys(t, s)
	for _, k := range []string{"obj/short/1", "obj/short/2", "x/adopted-short", "blk/short"} {
		if !slices.Contains(queued, k) {
			t.Errorf("purged container's key %s not queued (queue %q)", k, queued)
		}
	}
	list, _, _, err = db.ListContainersDeleted(ctx, acct, "", "", 10, true)
	if err != nil || len(list) != 1 || list[0].Name != "c" || list[0].Deleted == nil {
		t.Fatalf("after the purge: %+v, %v; want deleted c only", list, err)
	}
	if n, err := db.PurgeExpiredContainers(ctx, 100); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v", n, err)
	}
}

func collectionKeys(t *testing.T, s leasedb.Store) []string {
	t.Helper()
	keys, err := s.CollectionKeys(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
