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

// TestAccountKeyRotationsRacing: `blobgw account rotate-key --key 1` and
// `--key 2` of one account at once (two operators, two machines) each
// replace their own key and keep the other. A side connection holds the
// account's row lock until both wait, so they certainly overlap; each read
// the keys before any lock and wrote both back, so the one that wrote last
// put back the key the other had just rotated out: a key retired (maybe
// leaked) served again, and the new key printed to its operator refused.
func TestAccountKeyRotationsRacing(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	db := &leasedb.DB{Store: open(t, dsn)}
	if _, err := db.AddAccountKeys(ctx, "acct", "old1", "old2"); err != nil {
		t.Fatal(err)
	}
	pgtest.RaceBehindLock(t, dsn, `SELECT 1 FROM account_keys WHERE name = 'acct' FOR UPDATE`, nil,
		func() error { _, err := db.SetAccountKey(ctx, "acct", 1, "new1"); return err },
		func() error { _, err := db.SetAccountKey(ctx, "acct", 2, "new2"); return err })
	rows, _, err := db.ListAccountKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Key1 != "new1" || rows[0].Key2 != "new2" {
		t.Fatalf("accounts after both rotations = %+v, want acct with new1 and new2", rows)
	}
}
