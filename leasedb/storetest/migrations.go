package storetest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// Migrator is a store that can report and move its schema version, as
// both drivers' Store can; the migration checks below need nothing else.
type Migrator interface {
	leasedb.Store
	SchemaVersion(ctx context.Context) (int, error)
	Migrate(ctx context.Context) (from, to int, err error)
	MigrateTo(ctx context.Context, target int) (from, to int, err error)
}

// RefuseNewerSchema checks that s, migrated to latest, refuses a database a
// newer blobgw migrated: record inserts a schema_version row for version
// (latest+1) in the driver's own SQL. Migrate then fails with
// ErrSchemaTooNew, reports the newer version as both from and to, and names
// both versions in its error.
func RefuseNewerSchema(t *testing.T, s Migrator, latest int, record func(t *testing.T, version int)) {
	t.Helper()
	ctx := ctxT(t)
	record(t, latest+1)
	from, to, err := s.Migrate(ctx)
	if !errors.Is(err, leasedb.ErrSchemaTooNew) {
		t.Fatalf("Migrate of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if from != latest+1 || to != latest+1 {
		t.Errorf("Migrate of a newer schema = %d, %d; want %d, %d", from, to, latest+1, latest+1)
	}
	for _, want := range []string{strconv.Itoa(latest + 1), strconv.Itoa(latest)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name version %s", err, want)
		}
	}
}

// MigrateFromVersion1 checks that a database a version-1 blobgw wrote
// migrates to the newest schema (latest) with its rows intact, and that the
// new columns and tables work on it. s must be empty and not migrated;
// writeV1 writes, in the driver's own SQL (Tx writes columns version 1
// lacks), the rows version 1 wrote: container acct/c (ETag "0x1", last
// modified lm, metadata {"k":"v"}, public access blob, an infinite lease
// 11111111-2222-3333-4444-555555555555), its block blob b (ETag "0x2",
// created and modified lm, 5 bytes of text/plain in extent obj/1, lease
// state broken) and the collection intent intent/1.
func MigrateFromVersion1(t *testing.T, s Migrator, latest int, writeV1 func(t *testing.T, lm time.Time)) {
	ctx := ctxT(t)
	if from, to, err := s.MigrateTo(ctx, 1); err != nil || from != 0 || to != 1 {
		t.Fatalf("MigrateTo(1) = %d, %d, %v; want 0, 1", from, to, err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != 1 {
		t.Fatalf("SchemaVersion = %d, %v; want 1", v, err)
	}

	lm := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	writeV1(t, lm)
	// The store really is at version 1: the current driver cannot read it.
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.Container(ctx, "acct", "c", leasedb.LockNone)
		return err
	}); err == nil {
		t.Fatalf("reading a version-1 row with the new columns succeeded; is the schema really at version 1?")
	}

	// MigrateTo a version already reached does nothing; past the newest fails.
	if from, to, err := s.MigrateTo(ctx, 1); err != nil || from != 1 || to != 1 {
		t.Errorf("MigrateTo(1) again = %d, %d, %v; want 1, 1", from, to, err)
	}
	if _, _, err := s.MigrateTo(ctx, latest+1); err == nil {
		t.Errorf("MigrateTo(%d) succeeded", latest+1)
	}
	if from, to, err := s.Migrate(ctx); err != nil || from != 1 || to != latest {
		t.Fatalf("Migrate = %d, %d, %v; want 1, %d", from, to, err, latest)
	}

	// Old rows read back unchanged, with no lease_since.
	err := s.View(ctx, func(tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "acct", "c", leasedb.LockNone)
		if err != nil {
			return err
		}
		wantC := &leasedb.Container{Account: "acct", Name: "c", ETag: `"0x1"`, LastModified: lm,
			Metadata: map[string]string{"k": "v"}, PublicAccess: "blob",
			Lease: leasedb.Lease{ID: "11111111-2222-3333-4444-555555555555", State: "leased", Duration: -1}}
		if !reflect.DeepEqual(c, wantC) {
			t.Errorf("migrated container:\n got %#v\nwant %#v", c, wantC)
		}
		b, err := tx.Blob(ctx, "acct", "c", "b", leasedb.LockNone)
		if err != nil {
			return err
		}
		wantB := &leasedb.Blob{Account: "acct", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x2"`,
			Created: lm, LastModified: lm, Size: 5, Props: leasedb.Props{ContentType: "text/plain"},
			Metadata: map[string]string{}, Extents: []leasedb.Extent{{Key: "obj/1", Size: 5}},
			Lease: leasedb.Lease{State: "broken"}}
		if !reflect.DeepEqual(b, wantB) {
			t.Errorf("migrated blob:\n got %#v\nwant %#v", b, wantB)
		}
		leases, err := tx.ListLeases(ctx, leasedb.LeaseFilter{})
		if err != nil {
			return err
		}
		if len(leases) != 2 || leases[0].Blob != "" || leases[1].Blob != "b" {
			t.Errorf("ListLeases on the migrated rows: %+v", leases)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := s.CollectionKeys(ctx)
	if err != nil || !reflect.DeepEqual(keys, []string{"intent/1"}) {
		t.Errorf("CollectionKeys = %q, %v", keys, err)
	}

	// The new columns and table work on the migrated database.
	since := lm.Add(time.Hour)
	err = s.Update(ctx, func(tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "acct", "c", leasedb.LockExclusive)
		if err != nil {
			return err
		}
		c.Lease.Since = since
		if err := tx.UpdateContainer(ctx, c); err != nil {
			return err
		}
		if c, err = tx.Container(ctx, "acct", "c", leasedb.LockNone); err != nil {
			return err
		}
		if !c.Lease.Since.Equal(since) {
			t.Errorf("Since = %v, want %v", c.Lease.Since, since)
		}
		if _, err := tx.StageBlock(ctx, "acct", "c", "b", leasedb.Block{ID: "YQ==", Key: "blk/1", Size: 3, StagedAt: since}); err != nil {
			return err
		}
		// A snapshot of the migrated blob shares its extent.
		snap := &leasedb.Blob{Account: "acct", Container: "c", Name: "b", Snapshot: "2024-01-02T03:04:05.0000060Z",
			Type: "BlockBlob", ETag: `"0x3"`, Created: lm, LastModified: since, Size: 8,
			Extents: []leasedb.Extent{{Key: "obj/1", Size: 5}, {Key: "obj/2", Size: 3}}}
		if err := tx.PutSnapshot(ctx, snap); err != nil {
			return err
		}
		got, err := tx.Snapshot(ctx, "acct", "c", "b", snap.Snapshot)
		if err != nil {
			return err
		}
		if got == nil || got.Snapshot != snap.Snapshot || !reflect.DeepEqual(got.Extents, snap.Extents) {
			t.Errorf("Snapshot = %+v, want %+v", got, snap)
		}
		if b, err := tx.Blob(ctx, "acct", "c", "b", leasedb.LockNone); err != nil || b == nil || b.Snapshot != "" {
			t.Errorf("Blob after PutSnapshot = %+v, %v; want the base row", b, err)
		}
		keys, err := tx.DeleteContainer(ctx, "acct", "c")
		if err != nil {
			return err
		}
		if want := []string{"obj/1", "obj/2", "blk/1"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("DeleteContainer = %q, want %q", keys, want)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
}
