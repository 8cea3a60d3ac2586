package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
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

// testBlobLeaseWrite: SetBlobLease (leasedb.BlobLeaseWriter, where the
// store's Tx offers it) changes the lease columns alone: every other
// column of the row, an inline blob's bytes among them, reads back as it
// was, and an absent name is ErrNotFound. Then one sequence of lease
// actions (Lease Blob acquire, renew, change, break with a period,
// release, an infinite acquire; the operator's break and release) on an
// inline blob runs once through the store as it is and once through the
// generic Tx methods (genericOnly: the whole row written by PutBlob), and
// both leave the same outcomes and the same rows.
func testBlobLeaseWrite(t *testing.T, s leasedb.Store) {
	inline := make([]byte, 4096) // over Postgres's TOAST threshold once encoded
	for i := range inline {
		inline[i] = byte(i*7 + i/256)
	}
	var offered bool
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, offered = tx.(leasedb.BlobLeaseWriter)
		return nil
	})
	if offered {
		mustInsertContainer(t, s, "leasewrite")
		b := fullBlob("leasewrite", "x")
		b.Extents, b.Size = []leasedb.Extent{{Size: int64(len(inline)), Data: inline}}, int64(len(inline))
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		l := leasedb.Lease{ID: "11111111-2222-4333-8444-555555555555", State: "leased", Duration: 15,
			Expires: base.Add(15 * time.Second), Since: base.Add(time.Microsecond)}
		ref := leasedb.BlobRef{Account: acct, Container: "leasewrite", Name: "x"}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			if _, err := tx.Blob(ctx, acct, ref.Container, ref.Name, leasedb.LockExclusive); err != nil {
				return err
			}
			return tx.(leasedb.BlobLeaseWriter).SetBlobLease(ctx, ref, l)
		})
		want := *b
		want.Lease = l
		checkBlob(t, &want, getBlob(t, s, ref.Container, ref.Name))
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			return tx.(leasedb.BlobLeaseWriter).SetBlobLease(ctx, leasedb.BlobRef{Account: acct, Container: "leasewrite", Name: "absent"}, l)
		})
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Fatalf("SetBlobLease of an absent name: %v, want ErrNotFound", err)
		}
	}

	run := func(db *leasedb.DB, container string) []string {
		ctx := ctxT(t)
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: container, ETag: `"0x8D0000000000001"`, LastModified: base})
		})
		ref := leasedb.BlobRef{Account: acct, Container: container, Name: "x"}
		if _, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob",
			Extents:     []leasedb.Extent{{Size: int64(len(inline)), Data: inline}},
			BlobContent: leasedb.BlobContent{Metadata: map[string]string{"m": "v"}, Tags: map[string]string{"t": "v"}}}); err != nil {
			t.Fatal(err)
		}
		var out []string
		row := func(step string) {
			b := getBlob(t, s, container, "x")
			l := b.Lease
			// The clock of each run differs: times are kept as whether they are set.
			out = append(out, fmt.Sprintf("%s: row %s size=%d data=%t meta=%v tags=%v lease=%s/%s/%d expires=%t break=%t since=%t",
				step, b.Name, b.Size, len(b.Extents) == 1 && string(b.Extents[0].Data) == string(inline), b.Metadata, b.Tags,
				l.ID, l.State, l.Duration, !l.Expires.IsZero(), !l.BreakAt.IsZero(), !l.Since.IsZero()))
		}
		const a, c = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
		steps := []struct {
			name string
			req  leasedb.LeaseRequest
		}{
			{"acquire", leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: a, Duration: 15, BreakPeriod: -1}},
			{"acquire again", leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: c, Duration: 15, BreakPeriod: -1}},
			{"renew", leasedb.LeaseRequest{Action: leasedb.LeaseRenew, ID: a, BreakPeriod: -1}},
			{"change", leasedb.LeaseRequest{Action: leasedb.LeaseChange, ID: a, ProposedID: c, BreakPeriod: -1}},
			{"break 30", leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 30}},
			{"release", leasedb.LeaseRequest{Action: leasedb.LeaseRelease, ID: c, BreakPeriod: -1}},
			{"acquire infinite", leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: a, Duration: -1, BreakPeriod: -1}},
		}
		for _, st := range steps {
			_, res, err := db.LeaseBlob(ctx, ref, st.req, leasedb.Conditions{}, "")
			code := "ok"
			if e, ok := svcerr.As(err); ok {
				code = string(e.Code)
			} else if err != nil {
				t.Fatalf("%s %s: %v", container, st.name, err)
			}
			out = append(out, fmt.Sprintf("%s: %s id=%s", st.name, code, res.ID))
			row(st.name)
		}
		o, err := db.BreakLease(ctx, ref, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("operator break: changed=%t %s", o.Changed, o.After.State))
		row("operator break")
		if o, err = db.ForceReleaseLease(ctx, ref, ""); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("operator release: changed=%t %s", o.Changed, o.After.State))
		row("operator release")
		return out
	}
	fast := run(&leasedb.DB{Store: s, Grace: time.Hour}, "leasefast")
	generic := run(&leasedb.DB{Store: genericOnly{s}, Grace: time.Hour}, "leasegeneric")
	if !reflect.DeepEqual(fast, generic) {
		t.Fatalf("lease actions through the store and through the generic Tx differ:\n store:   %q\n generic: %q", fast, generic)
	}
	for _, want := range []string{"acquire again: LeaseAlreadyPresent", "release: ok", "operator break: changed=true broken"} {
		found := false
		for _, line := range fast {
			found = found || strings.HasPrefix(line, want)
		}
		if !found {
			t.Fatalf("no %q in %q", want, fast)
		}
	}
}
