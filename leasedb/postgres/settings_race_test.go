package postgres_test

import (
	"context"
	"testing"

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
	pgtest.RaceBehindLock(t, dsn, `SELECT 1 FROM account_settings WHERE account = 'a' FOR UPDATE`, nil,
		func() error { return db.SetVersioning(ctx, "a", true) },
		func() error {
			return db.MergeServiceProperties(ctx, "a", func(string) (string, error) { return "<StorageServiceProperties/>", nil }, 3)
		})
	got, err := db.GetAccountSettings(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := (leasedb.AccountSettings{Versioning: true, DeleteRetentionDays: 3}); got != want {
		t.Fatalf("settings after both writes = %+v, want %+v", got, want)
	}
}
