package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// testListLeases: every leased, breaking or broken container and blob,
// nothing available, filtered and ordered by account, container, blob
// (a container's own row first, with Blob ""), byte order throughout.
func testListLeases(t *testing.T, s leasedb.Store) {
	type row struct{ account, container, blob, state string }
	rows := []row{
		{"acct", "aB", "", "leased"},
		{"acct", "aB", "x", "breaking"},
		{"acct", "aB", "y", "available"},
		{"acct", "aB", "Z", "broken"},
		{"acct", "aB", "Z/é", "leased"},
		{"acct", "a_b", "", ""},
		{"acct", "a_b", "b", "leased"},
		{"acct", "a_b", "é", "leased"},
		{"acct", "a_b", "e", ""},
		{"acct", "a-b", "", "broken"},
		{"acct", "a-b", "q", ""},
		{"acct", "A", "", "available"},
		{"acct2", "aB", "", "breaking"},
		{"acct2", "aB", "x", "leased"},
		{"acc", "zz", "", "available"},
		{"acc", "zz", "m", "leased"},
		{"acc", "zz", "n", "broken"},
	}
	leaseOf := func(i int, state string) leasedb.Lease {
		l := leasedb.Lease{State: state}
		at := base.Add(time.Duration(i) * time.Minute)
		switch state {
		case "leased":
			l.ID = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
			l.Duration = -1
			if i%2 == 0 {
				l.Duration, l.Expires = 15, at.Add(15*time.Second)
			}
			l.Since = at
		case "breaking":
			l.ID = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
			l.Duration, l.Expires, l.BreakAt, l.Since = 60, at.Add(time.Minute), at.Add(10*time.Second), at.Add(-time.Second)
		case "broken":
			l.ID = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
			l.Since = at
		case "available":
			l.ID = "ffffffff-0000-0000-0000-000000000000" // kept after release; still not a lease
		}
		return l
	}
	var all []leasedb.LeaseRow
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i, r := range rows {
			l := leaseOf(i, r.state)
			if r.blob == "" {
				c := &leasedb.Container{Account: r.account, Name: r.container, ETag: `"e"`, Lease: l}
				if err := tx.InsertContainer(ctx, c); err != nil {
					return err
				}
			} else {
				b := &leasedb.Blob{Account: r.account, Container: r.container, Name: r.blob, Type: "BlockBlob", ETag: `"e"`, Lease: l}
				if err := tx.PutBlob(ctx, b); err != nil {
					return err
				}
			}
			if r.state != "" && r.state != "available" {
				all = append(all, leasedb.LeaseRow{Account: r.account, Container: r.container, Blob: r.blob, Lease: normLease(l)})
			}
		}
		return nil
	})
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.Container != b.Container {
			return a.Container < b.Container
		}
		return a.Blob < b.Blob // "" (the container) first
	})
	list := func(f leasedb.LeaseFilter) []leasedb.LeaseRow {
		t.Helper()
		var got []leasedb.LeaseRow
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			got, err = tx.ListLeases(ctx, f)
			return err
		})
		return got
	}
	for _, f := range []leasedb.LeaseFilter{
		{}, {Account: "acct"}, {Account: "acct2"}, {Account: "acc"}, {Container: "aB"},
		{Account: "acct", Container: "aB"}, {Account: "acct", Container: "a_b"}, {Account: "acct", Container: "a-b"},
		{Account: "acct", Container: "A"}, {Account: "acct", Container: "a"}, {Account: "nope"}, {Container: "zz"},
	} {
		var want []leasedb.LeaseRow
		for _, r := range all {
			if (f.Account == "" || r.Account == f.Account) && (f.Container == "" || r.Container == f.Container) {
				want = append(want, r)
			}
		}
		got := list(f)
		for _, r := range got {
			checkUTC(t, "ListLeases", r.Lease.Expires, r.Lease.BreakAt, r.Lease.Since)
		}
		if len(want) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ListLeases(%+v):\n got %+v\nwant %+v", f, got, want)
		}
	}

	// Releasing takes a row out of the list; it is read inside Update too.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "acct", "aB", leasedb.LockExclusive)
		if err != nil {
			return err
		}
		c.Lease = leasedb.Lease{State: "available"}
		if err := tx.UpdateContainer(ctx, c); err != nil {
			return err
		}
		b, err := tx.Blob(ctx, "acct", "aB", "x", leasedb.LockExclusive)
		if err != nil {
			return err
		}
		b.Lease = leasedb.Lease{}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		got, err := tx.ListLeases(ctx, leasedb.LeaseFilter{Account: "acct", Container: "aB"})
		if err != nil {
			return err
		}
		var blobs []string
		for _, r := range got {
			blobs = append(blobs, r.Blob)
		}
		if want := []string{"Z", "Z/é"}; !reflect.DeepEqual(blobs, want) {
			t.Errorf("ListLeases after release: blobs %q, want %q", blobs, want)
		}
		return nil
	})
	// A deleted container's leases are gone with it.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, err := tx.DeleteContainer(ctx, "acc", "zz")
		return err
	})
	if got := list(leasedb.LeaseFilter{Account: "acc"}); len(got) != 0 {
		t.Errorf("ListLeases of a deleted container: %+v", got)
	}
}
