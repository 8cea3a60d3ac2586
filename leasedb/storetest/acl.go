package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// normACL is what a store returns for stored access policies: nil when
// none, times in UTC with their full precision (SAS times carry up to 7
// fractional digits).
func normACL(acl []leasedb.SignedIdentifier) []leasedb.SignedIdentifier {
	if len(acl) == 0 {
		return nil
	}
	out := make([]leasedb.SignedIdentifier, len(acl))
	for i, si := range acl {
		if !si.Start.IsZero() {
			si.Start = si.Start.UTC()
		}
		if !si.Expiry.IsZero() {
			si.Expiry = si.Expiry.UTC()
		}
		out[i] = si
	}
	return out
}

// testContainerACL: stored access policies round-trip through every path
// that writes or reads a container row (insert, update, get, list), in
// order, with zero fields kept zero; clearing them reads back nil.
func testContainerACL(t *testing.T, s leasedb.Store) {
	acl := []leasedb.SignedIdentifier{
		{ID: "read-list", Start: base.Add(-time.Hour), Expiry: base.Add(time.Hour + 1234567*time.Nanosecond), Permission: "rl"},
		{ID: "only-expiry", Expiry: base.Add(24 * time.Hour)},
		{ID: strings.Repeat("x", 64), Permission: "racwdl"},
		{ID: "héllo <&>\"'"},
		{ID: "empty-perm", Start: base},
	}
	c := fullContainer("with-acl")
	c.ACL = acl
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "with-acl"))
	for _, si := range getContainer(t, s, "with-acl").ACL {
		checkUTC(t, "acl "+si.ID, si.Start, si.Expiry)
	}

	// A container without policies reads back nil, and so does an empty
	// (non-nil) list.
	plain := fullContainer("plain")
	plain.ACL = []leasedb.SignedIdentifier{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, plain) })
	if got := getContainer(t, s, "plain"); got.ACL != nil {
		t.Errorf("empty ACL read back as %#v, want nil", got.ACL)
	}

	// Update replaces the list and can clear it.
	c.ACL = acl[:2]
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "with-acl"))
	plain.ACL = acl[3:]
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, plain) })
	checkContainer(t, plain, getContainer(t, s, "plain"))

	// Listing carries the policies too; the locked read as well.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		cs, err := tx.ListContainers(ctx, acct, "", "", 0)
		if err != nil {
			return err
		}
		if len(cs) != 2 {
			t.Fatalf("listed %d containers, want 2", len(cs))
		}
		checkContainer(t, plain, cs[0])
		checkContainer(t, c, cs[1])
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		got, err := tx.Container(ctx, acct, "with-acl", leasedb.LockExclusive)
		if err != nil {
			return err
		}
		checkContainer(t, c, got)
		got.ACL = nil
		return tx.UpdateContainer(ctx, got)
	})
	if got := getContainer(t, s, "with-acl"); got.ACL != nil {
		t.Errorf("cleared ACL read back as %#v, want nil", got.ACL)
	}
}

// testServiceProperties: absent reads "", put inserts then replaces, each
// account has its own document, a rolled-back put leaves nothing, and
// concurrent puts leave one of the documents whole.
func testServiceProperties(t *testing.T, s leasedb.Store) {
	get := func(account string) string {
		t.Helper()
		var doc string
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			doc, err = tx.ServiceProperties(ctx, account)
			return err
		})
		return doc
	}
	put := func(account, doc string) {
		t.Helper()
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutServiceProperties(ctx, account, doc) })
	}
	if got := get(acct); got != "" {
		t.Fatalf("unset service properties = %q, want \"\"", got)
	}
	doc1 := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins></CorsRule></Cors></StorageServiceProperties>`
	doc2 := `<StorageServiceProperties><Cors /><Note>häßlich ☃ ` + strings.Repeat("z", 40000) + `</Note></StorageServiceProperties>`
	put(acct, doc1)
	if got := get(acct); got != doc1 {
		t.Fatalf("service properties = %q, want %q", got, doc1)
	}
	put(acct, doc2)
	if got := get(acct); got != doc2 {
		t.Fatalf("replaced service properties differ (len %d, want %d)", len(got), len(doc2))
	}
	if got := get("other"); got != "" {
		t.Fatalf("another account's service properties = %q, want \"\"", got)
	}

	// Rolled back.
	ctx := ctxT(t)
	errBoom := context.DeadlineExceeded
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		if err := tx.PutServiceProperties(ctx, "rolled", doc1); err != nil {
			return err
		}
		return errBoom
	})
	if err != errBoom {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	if got := get("rolled"); got != "" {
		t.Fatalf("rolled-back put left %q", got)
	}

	// Concurrent puts: the last commit wins, whole.
	docs := []string{doc1, doc2, "<StorageServiceProperties/>", "<StorageServiceProperties><A/></StorageServiceProperties>"}
	var wg sync.WaitGroup
	for _, d := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutServiceProperties(ctx, "race", d) }); err != nil {
				t.Errorf("concurrent put: %v", err)
			}
		}()
	}
	wg.Wait()
	got := get("race")
	found := false
	for _, d := range docs {
		found = found || got == d
	}
	if !found {
		t.Fatalf("after concurrent puts the document is none of those written (len %d)", len(got))
	}
}

// testLockedSettings: LockServiceProperties and LockAccountSettings read
// what is stored ("" and the defaults when nothing is) and change nothing,
// and writers that change what they read under them lose no one's change.
func testLockedSettings(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	lockDoc := func(account string) string {
		t.Helper()
		var doc string
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			doc, err = tx.LockServiceProperties(ctx, account)
			return err
		})
		return doc
	}
	if got := lockDoc(acct); got != "" {
		t.Fatalf("locked unset service properties = %q, want \"\"", got)
	}
	doc := "<StorageServiceProperties><Cors /></StorageServiceProperties>"
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutServiceProperties(ctx, acct, doc) })
	if got := lockDoc(acct); got != doc {
		t.Fatalf("locked service properties = %q, want %q", got, doc)
	}
	var got leasedb.AccountSettings
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		if got, err = tx.LockAccountSettings(ctx, acct); err != nil {
			return err
		}
		if got != (leasedb.AccountSettings{}) {
			t.Errorf("locked unset settings = %+v, want the defaults", got)
		}
		return tx.PutAccountSettings(ctx, acct, leasedb.AccountSettings{Versioning: true, DeleteRetentionDays: 4})
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		got, err = tx.LockAccountSettings(ctx, acct)
		return err
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		after, err := tx.AccountSettings(ctx, acct)
		if want := (leasedb.AccountSettings{Versioning: true, DeleteRetentionDays: 4}); got != want || after != want {
			t.Errorf("locked settings = %+v, then read %+v; want %+v both times", got, after, want)
		}
		return err
	})

	// Read-modify-writes at once, each adding its mark to what it read
	// under the lock: every mark stays.
	const writers = 8
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx leasedb.Tx) error {
				cur, err := tx.LockServiceProperties(ctx, "rmw")
				if err != nil {
					return err
				}
				return tx.PutServiceProperties(ctx, "rmw", cur+string(rune('a'+i)))
			})
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if final := lockDoc("rmw"); len(final) != writers {
		t.Errorf("after %d read-modify-writes the document is %q: some were lost", writers, final)
	}
}
