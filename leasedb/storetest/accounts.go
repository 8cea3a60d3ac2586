package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testAccountKeys: add, list (by name, exact round trip of the stored key
// text and UTC times), a taken name refused, rotation of one slot keeping
// the other, every change (a removal too) moving the generation, seeding
// that never overwrites and with onlyIfEmpty adds nothing to a non-empty
// store, and remove refused while the account has a container unless
// forced.
func testAccountKeys(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	gen := func() int64 {
		t.Helper()
		g, err := db.AccountKeysGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	list := func() []leasedb.AccountKeys {
		t.Helper()
		out, g, err := db.ListAccountKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g != gen() {
			t.Fatalf("ListAccountKeys generation %d, AccountKeysGeneration %d", g, gen())
		}
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("empty store lists %d accounts", len(got))
	}
	g0 := gen()
	long := "aesgcm1:" + strings.Repeat("Zm9v", 40) + "=="
	b, err := db.AddAccountKeys(ctx, "bravo", long, "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Generation <= g0 || gen() != b.Generation {
		t.Fatalf("add: account generation %d, store %d, before %d", b.Generation, gen(), g0)
	}
	a, err := db.AddAccountKeys(ctx, "alpha", "a1==", "a2==")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddAccountKeys(ctx, "alpha", "x", "y"); !errors.Is(err, leasedb.ErrExists) {
		t.Fatalf("second add: %v, want ErrExists", err)
	}
	got := list()
	if len(got) != 2 || got[0].Name != "alpha" || got[1].Name != "bravo" {
		t.Fatalf("list: %+v", got)
	}
	if got[0].Key1 != "a1==" || got[0].Key2 != "a2==" || got[1].Key1 != long || got[1].Key2 != "" {
		t.Fatalf("keys did not round-trip (or the refused add changed them): %+v", got)
	}
	checkUTC(t, "account times", got[0].CreatedAt, got[0].UpdatedAt)
	if !got[0].CreatedAt.Equal(a.CreatedAt) || got[0].Generation != a.Generation {
		t.Fatalf("stored %+v, added %+v", got[0], *a)
	}

	before := gen()
	r, err := db.SetAccountKey(ctx, "alpha", 2, "a3==")
	if err != nil {
		t.Fatal(err)
	}
	if r.Key1 != "a1==" || r.Key2 != "a3==" || r.Generation <= before || r.UpdatedAt.Before(r.CreatedAt) {
		t.Fatalf("rotate key2: %+v", r)
	}
	if got := list(); got[0].Key1 != "a1==" || got[0].Key2 != "a3==" || !got[0].CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("after rotate: %+v", got[0])
	}
	if _, err := db.SetAccountKey(ctx, "nosuch", 1, "k"); !errors.Is(err, leasedb.ErrNotFound) {
		t.Fatalf("rotate absent: %v, want ErrNotFound", err)
	}
	if _, err := db.SetAccountKey(ctx, "alpha", 3, "k"); err == nil {
		t.Fatal("slot 3 accepted")
	}

	// Seeding adds only absent names; onlyIfEmpty adds nothing here.
	added, err := db.SeedAccountKeys(ctx, []leasedb.AccountKeys{{Name: "alpha", Key1: "over"}, {Name: "charlie", Key1: "c1=="}}, false)
	if err != nil || fmt.Sprint(added) != "[charlie]" {
		t.Fatalf("seed: %v %v", added, err)
	}
	if added, err := db.SeedAccountKeys(ctx, []leasedb.AccountKeys{{Name: "delta", Key1: "d"}}, true); err != nil || len(added) != 0 {
		t.Fatalf("seed onlyIfEmpty on a non-empty store: %v %v", added, err)
	}
	if got := list(); len(got) != 3 || got[0].Key1 != "a1==" || got[2].Name != "charlie" {
		t.Fatalf("after seeding: %+v", got)
	}

	// Remove: refused while a container exists, unless forced.
	update(t, s, func(ctx2 context.Context, tx leasedb.Tx) error {
		c := fullContainer("box")
		c.Account = "alpha"
		return tx.InsertContainer(ctx2, c)
	})
	if err := db.RemoveAccountKeys(ctx, "alpha", false); !errors.Is(err, leasedb.ErrAccountHasContainers) {
		t.Fatalf("remove with a container: %v", err)
	}
	before = gen()
	if err := db.RemoveAccountKeys(ctx, "bravo", false); err != nil {
		t.Fatal(err)
	}
	if gen() <= before {
		t.Fatal("removal did not move the generation")
	}
	if err := db.RemoveAccountKeys(ctx, "alpha", true); err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveAccountKeys(ctx, "alpha", true); !errors.Is(err, leasedb.ErrNotFound) {
		t.Fatalf("second remove: %v, want ErrNotFound", err)
	}
	if got := list(); len(got) != 1 || got[0].Name != "charlie" {
		t.Fatalf("after removals: %+v", got)
	}
	// Every account removed: onlyIfEmpty seeds nothing into a store
	// whose accounts an operator emptied (the development account's
	// published key never comes back on its own).
	if err := db.RemoveAccountKeys(ctx, "charlie", true); err != nil {
		t.Fatal(err)
	}
	if added, err := db.SeedAccountKeys(ctx, []leasedb.AccountKeys{{Name: "devstoreaccount1", Key1: "k=="}}, true); err != nil || len(added) != 0 {
		t.Fatalf("seed onlyIfEmpty on an emptied store: %v %v", added, err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("emptied store seeded: %+v", got)
	}
	// A forced removal keeps the container.
	var kept *leasedb.Container
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		kept, err = tx.Container(ctx, "alpha", "box", leasedb.LockNone)
		return err
	})
	if kept == nil {
		t.Fatal("forced removal deleted the container")
	}
}

// testAccountKeysSeedEmpty: onlyIfEmpty seeds an empty store, once, even
// when replicas seed at the same time.
func testAccountKeysSeedEmpty(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	db := &leasedb.DB{Store: s}
	errs := concurrently(4, func(int) error {
		_, err := db.SeedAccountKeys(ctx, []leasedb.AccountKeys{{Name: "devstoreaccount1", Key1: "k=="}}, true)
		return err
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got, _, err := db.ListAccountKeys(ctx)
	if err != nil || len(got) != 1 || got[0].Name != "devstoreaccount1" || got[0].Key1 != "k==" {
		t.Fatalf("%+v %v", got, err)
	}
}
