package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestAccountSettingsRacingWrites: `blobgw account versioning` on one
// machine and a Set Blob Service Properties with a DeleteRetentionPolicy on
// a replica elsewhere, at once, each change one of the account's settings
// and keep the other. A side connection holds the settings row's lock
// until both wait for it, so they certainly overlap; each read the row
// before that lock and wrote both columns back, so the one that wrote
// last turned the other's change back (versioning silently off: writes
// kept no versions).
func TestAccountSettingsRacingWrites(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	db := &leasedb.DB{Store: open(t, dsn)}
	if err := db.SetVersioning(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	holder := pgtest.Connect(t, dsn)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer htx.Rollback(ctx)
	if _, err := htx.Exec(ctx, `SELECT 1 FROM account_settings WHERE account = 'a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- db.SetVersioning(ctx, "a", true) }()
	go func() {
		done <- db.MergeServiceProperties(ctx, "a", func(string) (string, error) { return "<StorageServiceProperties/>", nil }, 3)
	}()
	watcher := pgtest.Connect(t, dsn)
	for deadline := time.Now().Add(20 * time.Second); ; {
		var n int
		if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers wait for the settings row's lock, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := htx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.GetAccountSettings(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := (leasedb.AccountSettings{Versioning: true, DeleteRetentionDays: 3}); got != want {
		t.Fatalf("settings after both writes = %+v, want %+v", got, want)
	}
}
