// Package storetest is the conformance suite every leasedb.Store driver
// passes: each primitive of Store and Tx, exact round trips, byte-order
// listings, the collection queue, and concurrency (real goroutines,
// counted outcomes). A driver is done when Run passes, and a behaviour that
// differs between drivers is a bug in one of them.
//
// The suite only uses the leasedb interfaces; it must never reach into a
// driver's tables, and never share data between subtests (each asks
// newStore for an empty store).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

const acct = "acct"

// Run runs the suite. newStore must return an empty, migrated store that
// the test owns, and arrange for it to be closed when t ends (t.Cleanup).
// Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) leasedb.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s leasedb.Store)
	}{
		{"ContainerInsertGet", testContainerInsertGet},
		{"ContainerInsertExists", testContainerInsertExists},
		{"ContainerUpdate", testContainerUpdate},
		{"ContainerListOrderAndPaging", testContainerList},
		{"ContainerListPrefix", testContainerListPrefix},
		{"ContainerDelete", testContainerDelete},
		{"BlobPutGet", testBlobPutGet},
		{"BlobOverwrite", testBlobOverwrite},
		{"BlobDelete", testBlobDelete},
		{"BlobNeedsContainer", testBlobNeedsContainer},
		{"BlobListPrefixPaging", testBlobList},
		{"ListEntries", testListEntries},
		{"ListDelimited", testListDelimited},
		{"RoundTripTimes", testTimes},
		{"RoundTripMetadata", testMetadata},
		{"RoundTripLeaseSince", testLeaseSince},
		{"RoundTripExtentBlockID", testExtentBlockID},
		{"RoundTripTierTags", testTierTags},
		{"FindTagged", testFindTagged},
		{"RoundTripContainerACL", testContainerACL},
		{"ServiceProperties", testServiceProperties},
		{"StageBlock", testStageBlock},
		{"StageBlockOrder", testStageBlockOrder},
		{"StageBlockNeedsContainer", testStageBlockNeedsContainer},
		{"StageBlockConcurrent", testStageBlockConcurrent},
		{"BlockStats", testBlockStats},
		{"ContainerDeleteBlocks", testContainerDeleteBlocks},
		{"BlockExpiry", testBlockExpiry},
		{"SnapshotPutGet", testSnapshotPutGet},
		{"SnapshotExists", testSnapshotExists},
		{"SnapshotNeedsContainer", testSnapshotNeedsContainer},
		{"SnapshotList", testSnapshotList},
		{"SnapshotDelete", testSnapshotDelete},
		{"ContainerDeleteSnapshots", testContainerDeleteSnapshots},
		{"ListLeases", testListLeases},
		{"Names", testNames},
		{"Now", testNow},
		{"NextETagUnique", testNextETag},
		{"NextETagConcurrent", testNextETagConcurrent},
		{"IntentTakeOnce", testIntentTakeOnce},
		{"IntentClaimed", testIntentClaimed},
		{"ClaimDueOnlyDue", testClaimDueOnlyDue},
		{"ClaimDueLimit", testClaimDueLimit},
		{"ClaimDueReclaim", testClaimDueReclaim},
		{"ClaimDueConcurrent", testClaimDueConcurrent},
		{"AddGCForget", testAddGCForget},
		{"ShareRelease", testShareRelease},
		{"UpdateRollback", testUpdateRollback},
		{"UpdatePanic", testUpdatePanic},
		{"UpdateCanceled", testUpdateCanceled},
		{"ViewSeesCommitted", testView},
		{"ViewIsReadOnly", testViewReadOnly},
		{"CreateOnce", func(t *testing.T, s leasedb.Store) { CreateOnce(t, s) }},
		{"Counter", func(t *testing.T, s leasedb.Store) { Counter(t, s) }},
		{"AdoptBlob", testAdoptBlob},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func update(t *testing.T, s leasedb.Store, fn func(ctx context.Context, tx leasedb.Tx) error) {
	t.Helper()
	ctx := ctxT(t)
	if err := s.Update(ctx, func(tx leasedb.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s leasedb.Store, fn func(ctx context.Context, tx leasedb.Tx) error) {
	t.Helper()
	ctx := ctxT(t)
	if err := s.View(ctx, func(tx leasedb.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// base is a fixed instant with microsecond precision, not in UTC, so the
// suite sees whether drivers return UTC.
var base = time.Date(2024, 5, 17, 10, 11, 12, 345678000, time.FixedZone("X", 3*3600+1800))

func fullContainer(name string) *leasedb.Container {
	return &leasedb.Container{
		Account:      acct,
		Name:         name,
		ETag:         `"0x8D0000000000ABC"`,
		LastModified: base,
		Metadata:     map[string]string{"owner": "team-a", "empty": "", "unicode": "häßlich ☃"},
		PublicAccess: "blob",
		Lease: leasedb.Lease{
			ID:       "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
			State:    "breaking",
			Duration: 30,
			Expires:  base.Add(30 * time.Second),
			BreakAt:  base.Add(10*time.Second + 7*time.Microsecond),
			Since:    base.Add(-time.Minute + 3*time.Microsecond),
		},
	}
}

func mustInsertContainer(t *testing.T, s leasedb.Store, name string) {
	t.Helper()
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: name, ETag: `"0x8D0000000000001"`, LastModified: base})
	})
}

func fullBlob(container, name string) *leasedb.Blob {
	return &leasedb.Blob{
		Account:      acct,
		Container:    container,
		Name:         name,
		Type:         "BlockBlob",
		ETag:         `"0x8D0000000000DEF"`,
		Created:      base.Add(-time.Hour),
		LastModified: base,
		Size:         (1 << 40) + 17,
		Props: leasedb.Props{
			ContentType:        "application/json; charset=utf-8",
			ContentEncoding:    "gzip",
			ContentLanguage:    "de-CH",
			ContentDisposition: `attachment; filename="a b.json"`,
			CacheControl:       "max-age=60",
			ContentMD5:         []byte{0x00, 0x01, 0xfe, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0x00},
		},
		Metadata:   map[string]string{"k1": "v1", "Key_2": "<&>\"'", "x": ""},
		Extents:    []leasedb.Extent{{Key: "obj/" + name + "/2", Size: 1 << 40}, {Key: "obj/" + name + "/1", Size: 17}},
		BlockCount: 2,
		Lease: leasedb.Lease{
			ID:       "11111111-2222-3333-4444-555555555555",
			State:    "leased",
			Duration: -1,
			Since:    base.Add(-2 * time.Hour),
		},
		AccessTier: "Cool",
		Tags:       map[string]string{"project": "blobgw", "Env": "prod 1", "empty": ""},
		Copy: &leasedb.CopyInfo{ID: "c0c0c0c0-1111-2222-3333-444444444444", Status: "success",
			Source: "http://127.0.0.1:10000/devstoreaccount1/c/source%20blob?sv=2025-11-05&sp=r", Progress: "17/17",
			Completed: base.Add(-time.Minute)},
		Sealed: true,
	}
}

// normContainer and normBlob are what a store must return for a row
// written as c or b: times in UTC, truncated to microseconds (zero stays
// zero); nil metadata reads back as an empty map; no extents read back as
// nil. ContentMD5 is compared exactly (nil stays nil).
func normContainer(c *leasedb.Container) *leasedb.Container {
	n := *c
	n.LastModified = normTime(c.LastModified)
	n.Metadata = normMeta(c.Metadata)
	n.Lease = normLease(c.Lease)
	n.ACL = normACL(c.ACL)
	return &n
}

func normBlob(b *leasedb.Blob) *leasedb.Blob {
	n := *b
	n.Created, n.LastModified = normTime(b.Created), normTime(b.LastModified)
	n.Metadata = normMeta(b.Metadata)
	if len(b.Extents) == 0 {
		n.Extents = nil
	}
	if len(b.Tags) == 0 {
		n.Tags = nil
	}
	n.Lease = normLease(b.Lease)
	if b.Copy != nil {
		c := *b.Copy
		c.Completed = normTime(c.Completed)
		n.Copy = &c
	}
	return &n
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

func normMeta(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func normLease(l leasedb.Lease) leasedb.Lease {
	l.Expires, l.BreakAt, l.Since = normTime(l.Expires), normTime(l.BreakAt), normTime(l.Since)
	return l
}

// checkUTC fails unless every non-zero time is in UTC: drivers must not
// hand out local times.
func checkUTC(t *testing.T, what string, times ...time.Time) {
	t.Helper()
	for _, tm := range times {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: time %v has location %v, want UTC", what, tm, tm.Location())
		}
	}
}

func checkContainer(t *testing.T, want, got *leasedb.Container) {
	t.Helper()
	if got == nil {
		t.Fatalf("container %s: got nil, want a row", want.Name)
	}
	checkUTC(t, "container "+want.Name, got.LastModified, got.Lease.Expires, got.Lease.BreakAt, got.Lease.Since)
	if w := normContainer(want); !reflect.DeepEqual(w, got) {
		t.Errorf("container round trip:\n got %#v\nwant %#v", got, w)
	}
}

func checkBlob(t *testing.T, want, got *leasedb.Blob) {
	t.Helper()
	if got == nil {
		t.Fatalf("blob %s: got nil, want a row", want.Name)
	}
	checkUTC(t, "blob "+want.Name, got.Created, got.LastModified, got.Lease.Expires, got.Lease.BreakAt, got.Lease.Since)
	if (want.Props.ContentMD5 == nil) != (got.Props.ContentMD5 == nil) {
		t.Errorf("blob %s: ContentMD5 = %#v, want %#v (nil must stay nil)", want.Name, got.Props.ContentMD5, want.Props.ContentMD5)
	}
	if w := normBlob(want); !reflect.DeepEqual(w, got) {
		t.Errorf("blob round trip:\n got %#v\nwant %#v", got, w)
	}
}

func getContainer(t *testing.T, s leasedb.Store, name string) *leasedb.Container {
	t.Helper()
	var c *leasedb.Container
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		c, err = tx.Container(ctx, acct, name, leasedb.LockNone)
		return err
	})
	return c
}

func getBlob(t *testing.T, s leasedb.Store, container, name string) *leasedb.Blob {
	t.Helper()
	var b *leasedb.Blob
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		b, err = tx.Blob(ctx, acct, container, name, leasedb.LockNone)
		return err
	})
	return b
}

func testContainerInsertGet(t *testing.T, s leasedb.Store) {
	want := fullContainer("c1")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, want) })
	checkContainer(t, want, getContainer(t, s, "c1"))
	// Inside the writing transaction, with each lock mode.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockShare, leasedb.LockExclusive} {
			got, err := tx.Container(ctx, acct, "c1", m)
			if err != nil {
				return err
			}
			checkContainer(t, want, got)
			absent, err := tx.Container(ctx, acct, "nope", m)
			if err != nil {
				return err
			}
			if absent != nil {
				t.Errorf("absent container (lock %d): got %+v, want nil", m, absent)
			}
		}
		return nil
	})
	// Another account does not see it.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		c, err := tx.Container(ctx, "other", "c1", leasedb.LockNone)
		if c != nil {
			t.Errorf("container visible from another account")
		}
		return err
	})
}

func testContainerInsertExists(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		err := tx.InsertContainer(ctx, fullContainer("c1"))
		if !errors.Is(err, leasedb.ErrExists) {
			t.Errorf("second InsertContainer: got %v, want ErrExists", err)
		}
		return err
	})
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("Update: got %v, want ErrExists unchanged", err)
	}
	// The original row is untouched; the same name in another account is fine.
	got := getContainer(t, s, "c1")
	if got.PublicAccess != "" || got.ETag != `"0x8D0000000000001"` {
		t.Errorf("failed insert changed the row: %+v", got)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		c := fullContainer("c1")
		c.Account = "other"
		return tx.InsertContainer(ctx, c)
	})
}

func testContainerUpdate(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	want := fullContainer("c1")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, want) })
	checkContainer(t, want, getContainer(t, s, "c1"))

	// Every column is overwritten, including back to zero values.
	cleared := &leasedb.Container{Account: acct, Name: "c1", ETag: `"0x8D0000000000002"`}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, cleared) })
	checkContainer(t, cleared, getContainer(t, s, "c1"))

	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.UpdateContainer(ctx, fullContainer("missing")) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("UpdateContainer on a missing row: got %v, want ErrNotFound", err)
	}
	if c := getContainer(t, s, "missing"); c != nil {
		t.Errorf("UpdateContainer created a row: %+v", c)
	}
}

// orderNames are names whose byte order differs from most collations'.
var orderNames = []string{
	"a-b", "a_b", "aB", "a/b", "a", "A", "b", "B", "ab", "a%b", "a.b", "a b", "a~", "a0",
	"é", "e", "z", "Z", "\u00ff", "\u4e16\u754c", "\U0001F600", "a\u00e9", "ae", "AE", "_", "-", "0",
}

// uniq returns ss sorted without duplicates.
func uniq(ss []string) []string {
	var out []string
	for i, v := range sortedCopy(ss) {
		if i == 0 || v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func testContainerList(t *testing.T, s leasedb.Store) {
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range orderNames {
			if err := tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: n, ETag: `"x"`}); err != nil {
				return err
			}
			// Same names in other accounts must not show up.
			for _, a := range []string{"acc", "acct0", "acct_"} {
				if err := tx.InsertContainer(ctx, &leasedb.Container{Account: a, Name: n, ETag: `"x"`}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	want := sortedCopy(orderNames)

	// One page.
	var all []string
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		cs, err := tx.ListContainers(ctx, acct, "", "", 1000)
		for _, c := range cs {
			all = append(all, c.Name)
			if c.Account != acct {
				t.Errorf("listed container of account %q", c.Account)
			}
		}
		return err
	})
	if !reflect.DeepEqual(all, want) {
		t.Errorf("ListContainers order:\n got %q\nwant %q (Go's sort.Strings, byte order)", all, want)
	}

	// Pages of every size, each continuing after the last name.
	for _, size := range []int{1, 2, 3, 7, len(want), len(want) + 1} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("page size %d: paging does not end", size)
			}
			var page []*leasedb.Container
			view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
				var err error
				page, err = tx.ListContainers(ctx, acct, "", after, size)
				return err
			})
			if len(page) > size {
				t.Fatalf("page size %d: got %d rows", size, len(page))
			}
			for _, c := range page {
				got = append(got, c.Name)
			}
			if len(page) < size {
				break
			}
			after = page[len(page)-1].Name
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("page size %d:\n got %q\nwant %q", size, got, want)
		}
	}
}

func testContainerListPrefix(t *testing.T, s leasedb.Store) {
	names := uniq(append([]string{"a%", "a%%", "a_", "a_x", "a\\b", "a\\", "ab%", "\U0010FFFF", "\U0010FFFFa", "\uD7FFx", "\uE000"}, orderNames...))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range names {
			if err := tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: n, ETag: `"x"`}); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct{ prefix, after string }{
		{"a", ""}, {"a_", ""}, {"a%", ""}, {"a\\", ""}, {"a-", ""}, {"A", ""}, {"ab", ""},
		{"a", "a/b"}, {"a", "a_"}, {"a", "b"}, {"a", "0"}, {"b", "a"}, {"", "a_b"},
		{"\U0010FFFF", ""}, {"\uD7FF", ""}, {"\u4e16", ""}, {"é", ""}, {"zz", ""}, {"", ""},
	} {
		var want []string
		for _, n := range sortedCopy(names) {
			if len(n) >= len(tc.prefix) && n[:len(tc.prefix)] == tc.prefix && n > tc.after {
				want = append(want, n)
			}
		}
		for _, size := range []int{1000, 2} {
			var got []string
			after := tc.after
			for {
				var page []*leasedb.Container
				view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
					var err error
					page, err = tx.ListContainers(ctx, acct, tc.prefix, after, size)
					return err
				})
				for _, c := range page {
					got = append(got, c.Name)
				}
				if len(page) < size {
					break
				}
				after = page[len(page)-1].Name
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("prefix %q after %q (page %d):\n got %q\nwant %q", tc.prefix, tc.after, size, got, want)
			}
		}
	}
}

func testContainerDelete(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	mustInsertContainer(t, s, "c2")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range []string{"x", "y", "z"} {
			if err := tx.PutBlob(ctx, fullBlob("c1", n)); err != nil {
				return err
			}
		}
		empty := fullBlob("c1", "empty")
		empty.Extents = nil
		if err := tx.PutBlob(ctx, empty); err != nil {
			return err
		}
		return tx.PutBlob(ctx, fullBlob("c2", "x"))
	})
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c1")
		return err
	})
	var want []string
	for _, n := range []string{"x", "y", "z"} {
		want = append(want, fullBlob("c1", n).Keys()...)
	}
	if !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
		t.Errorf("DeleteContainer keys:\n got %q\nwant %q", keys, want)
	}
	if c := getContainer(t, s, "c1"); c != nil {
		t.Errorf("container still there: %+v", c)
	}
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c1", "", "", 100)
		if len(bs) != 0 {
			t.Errorf("blobs of the deleted container remain: %d", len(bs))
		}
		b, err2 := tx.Blob(ctx, acct, "c2", "x", leasedb.LockNone)
		if b == nil {
			t.Errorf("blob in another container was deleted")
		}
		return errors.Join(err, err2)
	})
	// The name can be reused, and the new container is empty.
	mustInsertContainer(t, s, "c1")
	if b := getBlob(t, s, "c1", "x"); b != nil {
		t.Errorf("re-created container has an old blob")
	}

	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		_, err := tx.DeleteContainer(ctx, acct, "missing")
		return err
	})
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("DeleteContainer of a missing container: got %v, want ErrNotFound", err)
	}
}

func testBlobPutGet(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	want := fullBlob("c", "dir/name with spaces ☃")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, want) })
	checkBlob(t, want, getBlob(t, s, "c", want.Name))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockShare, leasedb.LockExclusive} {
			got, err := tx.Blob(ctx, acct, "c", want.Name, m)
			if err != nil {
				return err
			}
			checkBlob(t, want, got)
		}
		for _, m := range []leasedb.LockMode{leasedb.LockNone, leasedb.LockExclusive} {
			for _, where := range [][2]string{{"c", "absent"}, {"no-container", want.Name}} {
				got, err := tx.Blob(ctx, acct, where[0], where[1], m)
				if err != nil {
					return err
				}
				if got != nil {
					t.Errorf("absent blob %v: got %+v, want nil", where, got)
				}
			}
		}
		return nil
	})
	if got := getBlob(t, s, "c", want.Name); got == nil || !reflect.DeepEqual(got.Keys(), []string{"obj/" + want.Name + "/2", "obj/" + want.Name + "/1"}) {
		t.Errorf("extent order not kept: %+v", got)
	}
}

func testBlobOverwrite(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "b")) })
	// Every column replaced, including with zero values.
	want := &leasedb.Blob{Account: acct, Container: "c", Name: "b", Type: "AppendBlob", ETag: `"0x8D0000000000FFF"`}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, want) })
	checkBlob(t, want, getBlob(t, s, "c", "b"))
	// And back.
	full := fullBlob("c", "b")
	full.Extents = append(full.Extents, leasedb.Extent{Key: "third", Size: 0})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, full) })
	checkBlob(t, full, getBlob(t, s, "c", "b"))
}

func testBlobDelete(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c", "b")); err != nil {
			return err
		}
		return tx.PutBlob(ctx, fullBlob("c", "b2"))
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "c", "b") })
	if b := getBlob(t, s, "c", "b"); b != nil {
		t.Errorf("deleted blob still there")
	}
	if b := getBlob(t, s, "c", "b2"); b == nil {
		t.Errorf("DeleteBlob removed a neighbour")
	}
	for _, where := range [][2]string{{"c", "b"}, {"c", "never"}, {"nope", "b2"}} {
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, where[0], where[1]) })
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Errorf("DeleteBlob %v: got %v, want ErrNotFound", where, err)
		}
	}
}

func testBlobNeedsContainer(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("missing", "b")) })
	if !errors.Is(err, leasedb.ErrNotFound) {
		t.Errorf("PutBlob into a missing container: got %v, want ErrNotFound", err)
	}
}

func testBlobList(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	names := []string{"dir/a", "dir/b", "dir/sub/c", "dir%", "dir_x", "dirX", "dir", "dir/", "dir0", "d", "e", "dir-",
		"dir\\x", "dïr", "dir/\u00e9", "dir/\U0001F600"}
	names = uniq(append(names, orderNames...))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, n := range names {
			if err := tx.PutBlob(ctx, fullBlob("c", n)); err != nil {
				return err
			}
		}
		// Same names in a neighbour container must not show up.
		for _, n := range names[:5] {
			if err := tx.PutBlob(ctx, fullBlob("c2", n)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct{ prefix, after string }{
		{"", ""}, {"dir", ""}, {"dir/", ""}, {"dir_", ""}, {"dir%", ""}, {"dir\\", ""}, {"dir", "dir/a"},
		{"dir/", "dir/b"}, {"dir/", "dir/sub/c"}, {"a", "a-b"}, {"", "dir/zzz"}, {"x", ""},
	} {
		var want []string
		for _, n := range sortedCopy(names) {
			if len(n) >= len(tc.prefix) && n[:len(tc.prefix)] == tc.prefix && n > tc.after {
				want = append(want, n)
			}
		}
		for _, size := range []int{1000, 1, 3} {
			var got []string
			after := tc.after
			for {
				var page []*leasedb.Blob
				view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
					var err error
					page, err = tx.ListBlobs(ctx, acct, "c", tc.prefix, after, size)
					return err
				})
				if len(page) > size {
					t.Fatalf("page of %d rows, limit %d", len(page), size)
				}
				for _, b := range page {
					got = append(got, b.Name)
					if b.Container != "c" {
						t.Errorf("listed blob of container %q", b.Container)
					}
				}
				if len(page) < size {
					break
				}
				after = page[len(page)-1].Name
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ListBlobs prefix %q after %q (page %d):\n got %q\nwant %q", tc.prefix, tc.after, size, got, want)
			}
		}
	}
	// Listed rows are complete rows.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "dir/a", "", 1)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("got %d rows", len(bs))
		}
		checkBlob(t, fullBlob("c", "dir/a"), bs[0])
		return nil
	})
}

func testTimes(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	times := []time.Time{
		{}, // zero stays zero
		time.Unix(0, 0),
		time.Unix(0, 1000),
		time.Unix(-1, 999999000),
		time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2038, 1, 19, 3, 14, 8, 1000, time.FixedZone("minus", -7*3600)),
		time.Date(2262, 4, 11, 23, 47, 16, 854775000, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 123456789, time.UTC), // nanoseconds are truncated
		time.Now(), // carries a monotonic reading
	}
	for i, tm := range times {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			Created: tm, LastModified: tm, Lease: leasedb.Lease{Expires: tm, BreakAt: tm, Since: tm}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && !got.LastModified.Equal(normTime(tm)) {
			t.Errorf("time %v came back as %v", tm, got.LastModified)
		}
		cname := "c" + strconv.Itoa(i)
		c := &leasedb.Container{Account: acct, Name: cname, ETag: `"e"`, LastModified: tm, Lease: leasedb.Lease{Expires: tm, BreakAt: tm, Since: tm}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
		checkContainer(t, c, getContainer(t, s, cname))
	}
}

func testMetadata(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	cases := []struct {
		meta map[string]string
		md5  []byte
		ext  []leasedb.Extent
	}{
		{nil, nil, nil},
		{map[string]string{}, []byte{1}, []leasedb.Extent{}},
		{map[string]string{"a": "1", "B": "2", "quote": `"'\`, "nl": "x\ty", "long": strings.Repeat("v", 4000)},
			[]byte("0123456789abcdef"), []leasedb.Extent{{Key: "k", Size: 0}}},
	}
	for i, tc := range cases {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			Metadata: tc.meta, Extents: tc.ext, Props: leasedb.Props{ContentMD5: tc.md5}}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && got.Metadata == nil {
			t.Errorf("metadata came back as a nil map; want an empty map")
		}
		cname := "c" + strconv.Itoa(i)
		c := &leasedb.Container{Account: acct, Name: cname, ETag: `"e"`, Metadata: tc.meta}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
		checkContainer(t, c, getContainer(t, s, cname))
	}
}

// testNames: names that cannot be stored in every database are refused the
// same way by every store; long and unusual valid names round-trip.
func testNames(t *testing.T, s leasedb.Store) {
	long := strings.Repeat("ß/", 400)
	valid := []string{long, " leading", "trailing ", "..", "%", "_", "'; DROP TABLE blobs; --", "\u200b", "\U0010FFFF"}
	mustInsertContainer(t, s, "c")
	for _, n := range valid {
		b := fullBlob("c", n)
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		checkBlob(t, b, getBlob(t, s, "c", n))
	}
	for _, bad := range []string{"nul\x00byte", "bad\xffutf8"} {
		ctx := ctxT(t)
		err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", bad)) })
		if err == nil {
			t.Errorf("PutBlob(%q) succeeded; want an error (not storable in every database)", bad)
		}
		err = s.Update(ctx, func(tx leasedb.Tx) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: bad, ETag: `"e"`})
		})
		if err == nil {
			t.Errorf("InsertContainer(%q) succeeded; want an error", bad)
		}
	}
}

// testLeaseSince: Lease.Since is stored like the other lease times (UTC,
// microseconds, zero stays zero) on containers and blobs, through insert,
// update and overwrite.
func testLeaseSince(t *testing.T, s leasedb.Store) {
	since := time.Date(2023, 11, 5, 1, 2, 3, 456789123, time.FixedZone("Y", -5*3600))
	c := fullContainer("c")
	c.Lease.Since = since
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.InsertContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "c"))
	// Only Since changes: the update still writes it.
	c.Lease.Since = since.Add(time.Hour + time.Microsecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, c) })
	checkContainer(t, c, getContainer(t, s, "c"))
	// Released: back to zero.
	c.Lease = leasedb.Lease{State: "available"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.UpdateContainer(ctx, c) })
	got := getContainer(t, s, "c")
	checkContainer(t, c, got)
	if got != nil && !got.Lease.Since.IsZero() {
		t.Errorf("cleared container Since came back as %v", got.Lease.Since)
	}

	b := fullBlob("c", "b")
	b.Lease.Since = since
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	b.Lease.Since = since.Add(-time.Microsecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	b.Lease = leasedb.Lease{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	gb := getBlob(t, s, "c", "b")
	checkBlob(t, b, gb)
	if gb != nil && !gb.Lease.Since.IsZero() {
		t.Errorf("cleared blob Since came back as %v", gb.Lease.Since)
	}
}

// testExtentBlockID: the block id of an extent round-trips; extents
// without one keep "".
func testExtentBlockID(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	b := fullBlob("c", "b")
	b.Extents = []leasedb.Extent{
		{Key: "k1", Size: 4 << 20, BlockID: "AAAAAA=="},
		{Key: "k2", Size: 1, BlockID: "+/+/ab=="},
		{Key: "k3", Size: 0},                            // Put Blob or append extent: no id
		{Key: "k1", Size: 4 << 20, BlockID: "AAAAAA=="}, // one block committed twice
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "", "", 10)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("ListBlobs: %d rows", len(bs))
		}
		checkBlob(t, b, bs[0])
		return nil
	})
	// Overwritten with extents that carry no id: none comes back.
	b.Extents = []leasedb.Extent{{Key: "k5", Size: 3}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "b"))
}

func stageBlock(t *testing.T, s leasedb.Store, container, blob string, b leasedb.Block) string {
	t.Helper()
	var old string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		old, err = tx.StageBlock(ctx, acct, container, blob, b)
		return err
	})
	return old
}

func getBlocks(t *testing.T, s leasedb.Store, container, blob string) []leasedb.Block {
	t.Helper()
	var bs []leasedb.Block
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		bs, err = tx.Blocks(ctx, acct, container, blob)
		return err
	})
	return bs
}

// checkBlocks compares staged blocks; want's times are normalized like
// every other stored time. nil and empty lists are equal.
func checkBlocks(t *testing.T, what string, want, got []leasedb.Block) {
	t.Helper()
	var w []leasedb.Block
	for _, b := range want {
		b.StagedAt = normTime(b.StagedAt)
		w = append(w, b)
	}
	for _, b := range got {
		checkUTC(t, what+" block "+b.ID, b.StagedAt)
	}
	if len(w) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(w, got) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, w)
	}
}

// testStageBlock: staging needs no blob row, replacing a block id returns
// the replaced key, blocks are per (account, container, blob), and
// DeleteBlocks removes one blob name's blocks.
func testStageBlock(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	mustInsertContainer(t, s, "c2")
	a1 := leasedb.Block{ID: "YQ==", Key: "k/a1", Size: 10, StagedAt: base}
	b1 := leasedb.Block{ID: "Yg==", Key: "k/b1", Size: (1 << 40) + 3, StagedAt: base.Add(time.Second + 999*time.Nanosecond)}
	if old := stageBlock(t, s, "c", "new", a1); old != "" {
		t.Errorf("first StageBlock replaced %q", old)
	}
	if old := stageBlock(t, s, "c", "new", b1); old != "" {
		t.Errorf("StageBlock of another id replaced %q", old)
	}
	// The same id under another container or blob name is another block.
	other := leasedb.Block{ID: "YQ==", Key: "k/other", Size: 1, StagedAt: base}
	if old := stageBlock(t, s, "c2", "new", other); old != "" {
		t.Errorf("StageBlock in another container replaced %q", old)
	}
	if old := stageBlock(t, s, "c", "new2", other); old != "" {
		t.Errorf("StageBlock under another blob name replaced %q", old)
	}
	if b := getBlob(t, s, "c", "new"); b != nil {
		t.Errorf("staging created a blob row: %+v", b)
	}
	checkBlocks(t, "Blocks", []leasedb.Block{a1, b1}, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "Blocks of an unknown name", nil, getBlocks(t, s, "c", "nothing"))
	checkBlocks(t, "Blocks of a missing container", nil, getBlocks(t, s, "missing", "new"))

	// Replacing: the replaced key comes back, the new key, size and time
	// stand, and the block moves to its new place in the order.
	a2 := leasedb.Block{ID: "YQ==", Key: "k/a2", Size: 20, StagedAt: base.Add(2 * time.Second)}
	if old := stageBlock(t, s, "c", "new", a2); old != "k/a1" {
		t.Errorf("replacing StageBlock returned %q, want k/a1", old)
	}
	checkBlocks(t, "Blocks after replace", []leasedb.Block{b1, a2}, getBlocks(t, s, "c", "new"))

	// Twice in one transaction: each sees the previous one.
	a3, a4 := a2, a2
	a3.Key, a4.Key = "k/a3", "k/a4"
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, tc := range []struct {
			b    leasedb.Block
			want string
		}{{a3, "k/a2"}, {a4, "k/a3"}} {
			old, err := tx.StageBlock(ctx, acct, "c", "new", tc.b)
			if err != nil {
				return err
			}
			if old != tc.want {
				t.Errorf("StageBlock %s in one transaction returned %q, want %q", tc.b.Key, old, tc.want)
			}
		}
		// The transaction sees its own writes.
		bs, err := tx.Blocks(ctx, acct, "c", "new")
		checkBlocks(t, "Blocks inside the transaction", []leasedb.Block{b1, a4}, bs)
		return err
	})

	// A rolled-back replace leaves the block alone.
	ctx := ctxT(t)
	sentinel := errors.New("roll back")
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		if _, err := tx.StageBlock(ctx, acct, "c", "new", a1); err != nil {
			return err
		}
		if _, err := tx.StageBlock(ctx, acct, "c", "rolled-back", a1); err != nil {
			return err
		}
		return sentinel
	})
	if err != sentinel {
		t.Fatalf("Update: %v", err)
	}
	checkBlocks(t, "Blocks after a rolled-back replace", []leasedb.Block{b1, a4}, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "Blocks of a rolled-back stage", nil, getBlocks(t, s, "c", "rolled-back"))

	// DeleteBlocks removes exactly one blob name's blocks.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "c", "new") })
	checkBlocks(t, "Blocks after DeleteBlocks", nil, getBlocks(t, s, "c", "new"))
	checkBlocks(t, "neighbour blob's blocks", []leasedb.Block{other}, getBlocks(t, s, "c", "new2"))
	checkBlocks(t, "other container's blocks", []leasedb.Block{other}, getBlocks(t, s, "c2", "new"))
	// Deleting nothing is fine, and a deleted id is staged afresh.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "c", "new") })
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlocks(ctx, acct, "missing", "x") })
	if old := stageBlock(t, s, "c", "new", a1); old != "" {
		t.Errorf("StageBlock after DeleteBlocks replaced %q", old)
	}
	// A committed blob of the same name has nothing to do with its blocks.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "new")) })
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "c", "new") })
	checkBlocks(t, "Blocks after the blob row came and went", []leasedb.Block{a1}, getBlocks(t, s, "c", "new"))

	// Writes fail in a View; unstorable names are refused.
	if err := s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.StageBlock(ctx, acct, "c", "v", a1)
		return err
	}); err == nil {
		t.Errorf("StageBlock in a View succeeded")
	}
	for _, bad := range []string{"nul\x00byte", "bad\xffutf8"} {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, acct, "c", bad, a1)
			return err
		})
		if err == nil {
			t.Errorf("StageBlock under blob name %q succeeded", bad)
		}
		bb := a1
		bb.ID = bad
		err = s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, acct, "c", "n", bb)
			return err
		})
		if err == nil {
			t.Errorf("StageBlock of block id %q succeeded", bad)
		}
	}
}

// testStageBlockOrder: Blocks lists oldest StagedAt first, then block id
// in byte order, whatever order they were staged in. Times are compared
// after truncation to microseconds; the zero time is kept and sorts first.
func testStageBlockOrder(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ids := []string{"QUE=", "YWE=", "Ymc=", "+w==", "/w==", "MDA=", "ZA==", "aA==", "Bw==", "bw==", "_w==", "-w=="}
	var staged []leasedb.Block
	for i, id := range ids {
		var at time.Time
		switch i % 4 {
		case 0:
			at = base
		case 1:
			at = base.Add(-time.Minute)
		case 2:
			at = base.Add(456 * time.Nanosecond) // same microsecond as base
		case 3:
			if i == 3 {
				at = time.Time{}
			} else {
				at = base.Add(time.Hour)
			}
		}
		staged = append(staged, leasedb.Block{ID: id, Key: "k/" + strconv.Itoa(i), Size: int64(i), StagedAt: at})
	}
	// Staged in reverse, in two transactions.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := len(staged) - 1; i >= len(staged)/2; i-- {
			if _, err := tx.StageBlock(ctx, acct, "c", "b", staged[i]); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := len(staged)/2 - 1; i >= 0; i-- {
			if _, err := tx.StageBlock(ctx, acct, "c", "b", staged[i]); err != nil {
				return err
			}
		}
		return nil
	})
	want := append([]leasedb.Block(nil), staged...)
	sort.Slice(want, func(i, j int) bool {
		ti, tj := normTime(want[i].StagedAt), normTime(want[j].StagedAt)
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return want[i].ID < want[j].ID
	})
	checkBlocks(t, "Blocks order", want, getBlocks(t, s, "c", "b"))
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.Blocks(ctx, acct, "c", "b")
		checkBlocks(t, "Blocks order in Update", want, bs)
		return err
	})
}

// testStageBlockConcurrent: goroutines stage the same block id of one blob
// name at once, each in its own transaction with no other lock. Every key
// but the last one standing must be returned as replaced exactly once, or
// its object would never be collected.
func testStageBlockConcurrent(t *testing.T, s leasedb.Store) {
	const goroutines, per = 8, 15
	mustInsertContainer(t, s, "c")
	ctx := ctxT(t)
	var mu sync.Mutex
	replaced := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < per; i++ {
				key := fmt.Sprintf("k/%d/%d", g, i)
				var old string
				err := s.Update(ctx, func(tx leasedb.Tx) error {
					var err error
					old, err = tx.StageBlock(ctx, acct, "c", "b", leasedb.Block{ID: "YQ==", Key: key, Size: 1, StagedAt: base})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if old != "" {
					mu.Lock()
					replaced[old]++
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bs := getBlocks(t, s, "c", "b")
	if len(bs) != 1 {
		t.Fatalf("Blocks = %+v, want the one block", bs)
	}
	if _, ok := replaced[bs[0].Key]; ok {
		t.Errorf("the standing key %s was also returned as replaced", bs[0].Key)
	}
	for g := 0; g < goroutines; g++ {
		for i := 0; i < per; i++ {
			key := fmt.Sprintf("k/%d/%d", g, i)
			if n := replaced[key]; key != bs[0].Key && n != 1 {
				t.Errorf("key %s returned as replaced %d times, want 1", key, n)
			}
		}
	}
}

func testStageBlockNeedsContainer(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ctx := ctxT(t)
	blk := leasedb.Block{ID: "YQ==", Key: "k", Size: 1, StagedAt: base}
	for _, where := range [][2]string{{acct, "missing"}, {"other", "c"}} {
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, where[0], where[1], "b", blk)
			return err
		})
		if !errors.Is(err, leasedb.ErrNotFound) {
			t.Errorf("StageBlock into missing container %s/%s: got %v, want ErrNotFound", where[0], where[1], err)
		}
	}
	checkBlocks(t, "Blocks of a missing container", nil, getBlocks(t, s, "missing", "b"))
	// The existing container is fine.
	if old := stageBlock(t, s, "c", "b", blk); old != "" {
		t.Errorf("StageBlock replaced %q", old)
	}
}

// testContainerDeleteBlocks: DeleteContainer removes the staged blocks of
// committed and uncommitted blobs and returns their keys with the blobs'.
func testContainerDeleteBlocks(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c1")
	mustInsertContainer(t, s, "c2")
	blk := func(id, key string) leasedb.Block {
		return leasedb.Block{ID: id, Key: key, Size: 5, StagedAt: base}
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.PutBlob(ctx, fullBlob("c1", "x")); err != nil {
			return err
		}
		for _, st := range []struct {
			container, blob string
			b               leasedb.Block
		}{
			{"c1", "x", blk("YQ==", "blk/x/a")},
			{"c1", "uncommitted", blk("YQ==", "blk/u/a")},
			{"c1", "uncommitted", blk("Yg==", "blk/u/b")},
			{"c2", "x", blk("YQ==", "blk/c2/x")},
		} {
			if _, err := tx.StageBlock(ctx, acct, st.container, st.blob, st.b); err != nil {
				return err
			}
		}
		return nil
	})
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c1")
		return err
	})
	want := append(fullBlob("c1", "x").Keys(), "blk/x/a", "blk/u/a", "blk/u/b")
	if !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
		t.Errorf("DeleteContainer keys:\n got %q\nwant %q", keys, want)
	}
	checkBlocks(t, "blocks of a deleted blob", nil, getBlocks(t, s, "c1", "x"))
	checkBlocks(t, "blocks of a deleted uncommitted blob", nil, getBlocks(t, s, "c1", "uncommitted"))
	checkBlocks(t, "blocks in another container", []leasedb.Block{blk("YQ==", "blk/c2/x")}, getBlocks(t, s, "c2", "x"))
	// A re-created container has no old blocks.
	mustInsertContainer(t, s, "c1")
	checkBlocks(t, "blocks of a re-created container", nil, getBlocks(t, s, "c1", "uncommitted"))
	// A container holding only staged blocks.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, "c2")
		return err
	})
	if !reflect.DeepEqual(keys, []string{"blk/c2/x"}) {
		t.Errorf("DeleteContainer of a container with only blocks: keys %q", keys)
	}
	if c := getContainer(t, s, "c2"); c != nil {
		t.Errorf("container still there")
	}
}

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

func testNow(t *testing.T, s leasedb.Store) {
	var first time.Time
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		a, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
		b, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if !a.Equal(b) {
			t.Errorf("Now changed within a transaction: %v then %v", a, b)
		}
		first = a
		return nil
	})
	checkUTC(t, "Now", first)
	if first.Truncate(time.Microsecond) != first || first.Nanosecond()%1000 != 0 {
		t.Errorf("Now %v is not truncated to microseconds", first)
	}
	if d := time.Since(first); d < -time.Minute || d > time.Minute {
		t.Errorf("Now %v is %v away from this host's clock", first, d)
	}
	time.Sleep(2 * time.Millisecond)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		second, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if !second.After(first) {
			t.Errorf("Now of a later transaction %v is not after %v", second, first)
		}
		return nil
	})
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, err := tx.Now(ctx)
		return err
	})
}

var etagRE = regexp.MustCompile(`^"0x[0-9A-F]{15,}"$`)

func testNextETag(t *testing.T, s leasedb.Store) {
	seen := map[string]bool{}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := 0; i < 1000; i++ {
			e, err := tx.NextETag(ctx)
			if err != nil {
				return err
			}
			if !etagRE.MatchString(e) {
				t.Fatalf("ETag %q does not match %v", e, etagRE)
			}
			if seen[e] {
				t.Fatalf("ETag %q returned twice", e)
			}
			seen[e] = true
		}
		return nil
	})
	// A rolled-back transaction's ETags may be skipped but never reused.
	ctx := ctxT(t)
	sentinel := errors.New("roll back")
	_ = s.Update(ctx, func(tx leasedb.Tx) error {
		if _, err := tx.NextETag(ctx); err != nil {
			return err
		}
		return sentinel
	})
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		e, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		if seen[e] {
			t.Errorf("ETag %q reused after rollback", e)
		}
		return nil
	})
}

func testNextETagConcurrent(t *testing.T, s leasedb.Store) {
	const workers, per = 8, 40
	ctx := ctxT(t)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				var got []string
				err := s.Update(ctx, func(tx leasedb.Tx) error {
					got = got[:0]
					for j := 0; j < 3; j++ {
						e, err := tx.NextETag(ctx)
						if err != nil {
							return err
						}
						got = append(got, e)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, e := range got {
					seen[e]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != workers*per*3 {
		t.Errorf("got %d distinct ETags, want %d", len(seen), workers*per*3)
	}
	for e, n := range seen {
		if n != 1 || !etagRE.MatchString(e) {
			t.Errorf("ETag %q seen %d times", e, n)
		}
	}
}

// dbNow is the store's clock, for due times relative to it.
func dbNow(t *testing.T, s leasedb.Store) time.Time {
	t.Helper()
	var now time.Time
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		now, err = tx.Now(ctx)
		return err
	})
	return now
}

func keysOf(t *testing.T, s leasedb.Store) []string {
	t.Helper()
	keys, err := s.CollectionKeys(ctxT(t))
	if err != nil {
		t.Fatalf("CollectionKeys: %v", err)
	}
	return keys
}

func take(t *testing.T, s leasedb.Store, key string) bool {
	t.Helper()
	var ok bool
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		ok, err = tx.TakeIntent(ctx, key)
		return err
	})
	return ok
}

func claim(t *testing.T, s leasedb.Store, limit int, reclaimAfter time.Duration) []string {
	t.Helper()
	keys, err := s.ClaimDue(ctxT(t), limit, reclaimAfter)
	if err != nil {
		t.Fatalf("ClaimDue: %v", err)
	}
	return sortedCopy(keys)
}

func testIntentTakeOnce(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddIntent(ctx, "intent/1", now.Add(time.Hour))
	})
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"intent/1"}) {
		t.Errorf("CollectionKeys = %q, want the intent", got)
	}
	ctx := ctxT(t)
	err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.AddIntent(ctx, "intent/1", now) })
	if !errors.Is(err, leasedb.ErrExists) {
		t.Errorf("AddIntent twice: got %v, want ErrExists", err)
	}
	if !take(t, s, "intent/1") {
		t.Errorf("TakeIntent: false, want true")
	}
	if take(t, s, "intent/1") {
		t.Errorf("second TakeIntent: true, want false")
	}
	if take(t, s, "never-added") {
		t.Errorf("TakeIntent of an unknown key: true")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("CollectionKeys after take = %q, want none", got)
	}
	// A plain collection entry is not an intent.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddGC(ctx, []string{"gc/1"}, now.Add(time.Hour))
	})
	if take(t, s, "gc/1") {
		t.Errorf("TakeIntent took a collection entry")
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"gc/1"}) {
		t.Errorf("CollectionKeys = %q, want [gc/1]", got)
	}
	// A taken intent rolled back is still there.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddIntent(ctx, "intent/2", now.Add(time.Hour))
	})
	sentinel := errors.New("no")
	_ = s.Update(ctx, func(tx leasedb.Tx) error {
		if ok, err := tx.TakeIntent(ctx, "intent/2"); err != nil || !ok {
			t.Errorf("TakeIntent = %v, %v", ok, err)
		}
		return sentinel
	})
	if !take(t, s, "intent/2") {
		t.Errorf("intent taken in a rolled-back transaction is gone")
	}
}

func testIntentClaimed(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddIntent(ctx, "late", now.Add(-time.Second)); err != nil {
			return err
		}
		return tx.AddIntent(ctx, "on-time", now.Add(time.Hour))
	})
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"late"}) {
		t.Fatalf("ClaimDue = %q, want [late]", got)
	}
	if take(t, s, "late") {
		t.Errorf("TakeIntent succeeded on a claimed intent")
	}
	if !take(t, s, "on-time") {
		t.Errorf("TakeIntent failed on an unclaimed intent")
	}
	// The claimed entry stays until Forget.
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"late"}) {
		t.Errorf("CollectionKeys = %q, want [late]", got)
	}
}

func testClaimDueOnlyDue(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddGC(ctx, []string{"gc/past1", "gc/past2"}, now.Add(-time.Minute)); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc/future"}, now.Add(time.Hour)); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, "intent/past", now.Add(-time.Millisecond)); err != nil {
			return err
		}
		return tx.AddIntent(ctx, "intent/future", now.Add(time.Hour))
	})
	want := []string{"gc/past1", "gc/past2", "intent/past"}
	if got := claim(t, s, 100, time.Hour); !reflect.DeepEqual(got, want) {
		t.Errorf("ClaimDue = %q, want %q", got, want)
	}
	if got := claim(t, s, 100, time.Hour); len(got) != 0 {
		t.Errorf("second ClaimDue = %q, want nothing (claims are fresh)", got)
	}
	// reclaimAfter <= 0 never reclaims.
	if got := claim(t, s, 100, 0); len(got) != 0 {
		t.Errorf("ClaimDue with reclaimAfter 0 = %q, want nothing", got)
	}
	if got := claim(t, s, 0, time.Hour); len(got) != 0 {
		t.Errorf("ClaimDue with limit 0 = %q", got)
	}
	if got := keysOf(t, s); len(got) != 5 {
		t.Errorf("CollectionKeys = %q, want all 5 entries", got)
	}
}

func testClaimDueLimit(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	var all []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for i := 0; i < 5; i++ {
			k := fmt.Sprintf("gc/%d", i)
			all = append(all, k)
			// Earlier due first.
			if err := tx.AddGC(ctx, []string{k}, now.Add(-time.Duration(10-i)*time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	first := claim(t, s, 2, time.Hour)
	if !reflect.DeepEqual(first, all[:2]) {
		t.Errorf("ClaimDue(2) = %q, want the two earliest %q", first, all[:2])
	}
	rest := claim(t, s, 10, time.Hour)
	if !reflect.DeepEqual(rest, all[2:]) {
		t.Errorf("ClaimDue(10) = %q, want %q", rest, all[2:])
	}
}

func testClaimDueReclaim(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.AddGC(ctx, []string{"k"}, now.Add(-time.Second))
	})
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"k"}) {
		t.Fatalf("ClaimDue = %q", got)
	}
	time.Sleep(100 * time.Millisecond)
	if got := claim(t, s, 10, time.Hour); len(got) != 0 {
		t.Errorf("fresh claim reclaimed: %q", got)
	}
	// Claimed more than 50ms ago: the collector is presumed dead.
	if got := claim(t, s, 10, 50*time.Millisecond); !reflect.DeepEqual(got, []string{"k"}) {
		t.Errorf("stale claim not reclaimed: %q", got)
	}
	// Reclaiming renews the claim.
	if got := claim(t, s, 10, time.Hour); len(got) != 0 {
		t.Errorf("renewed claim reclaimed: %q", got)
	}
	if err := s.Forget(ctxT(t), []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("Forget left %q", got)
	}
}

func testClaimDueConcurrent(t *testing.T, s leasedb.Store) {
	const n = 300
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("gc/%04d", i)
		}
		return tx.AddGC(ctx, keys, now.Add(-time.Second))
	})
	const workers = 8
	ctx := ctxT(t)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				keys, err := s.ClaimDue(ctx, 7, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if len(keys) == 0 {
					return
				}
				mu.Lock()
				for _, k := range keys {
					got[k]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("claimed %d distinct keys, want %d", len(got), n)
	}
	for k, c := range got {
		if c != 1 {
			t.Errorf("key %s claimed %d times", k, c)
		}
	}
}

func testAddGCForget(t *testing.T, s leasedb.Store) {
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		if err := tx.AddGC(ctx, nil, now); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"b", "a", "c", "a"}, now.Add(time.Hour)); err != nil {
			return err
		}
		// An intent handed to the collector is no longer an intent.
		if err := tx.AddIntent(ctx, "i", now.Add(time.Hour)); err != nil {
			return err
		}
		return tx.AddGC(ctx, []string{"i"}, now.Add(-time.Second))
	})
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"a", "b", "c", "i"}) {
		t.Errorf("CollectionKeys = %q", got)
	}
	if take(t, s, "i") {
		t.Errorf("TakeIntent took a key queued for collection")
	}
	if got := claim(t, s, 10, time.Hour); !reflect.DeepEqual(got, []string{"i"}) {
		t.Errorf("ClaimDue = %q, want [i] (re-queued as due)", got)
	}
	ctx := ctxT(t)
	if err := s.Forget(ctx, nil); err != nil {
		t.Errorf("Forget(nil): %v", err)
	}
	if err := s.Forget(ctx, []string{"a", "i", "unknown"}); err != nil {
		t.Errorf("Forget: %v", err)
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("CollectionKeys after Forget = %q", got)
	}
	// Many keys at once.
	many := make([]string, 2500)
	for i := range many {
		many[i] = fmt.Sprintf("m/%05d", i)
	}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddGC(ctx, many, now) })
	if err := s.Forget(ctx, many); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, s); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("CollectionKeys after Forget(many) has %d keys", len(got))
	}
}

func testUpdateRollback(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "keep")
	ctx := ctxT(t)
	sentinel := errors.New("sentinel")
	runs := 0
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		runs++
		if err := tx.InsertContainer(ctx, fullContainer("c")); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, fullBlob("c", "b")); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, fullBlob("keep", "b")); err != nil {
			return err
		}
		if err := tx.AddGC(ctx, []string{"gc"}, base); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, "intent", base); err != nil {
			return err
		}
		if _, err := tx.DeleteContainer(ctx, acct, "keep"); err != nil {
			return err
		}
		return sentinel
	})
	if err != sentinel {
		t.Errorf("Update returned %v, want fn's error unchanged", err)
	}
	if runs != 1 {
		t.Errorf("fn ran %d times; an error of fn must not be retried", runs)
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("rolled-back container is visible")
	}
	if c := getContainer(t, s, "keep"); c == nil {
		t.Errorf("rolled-back delete took effect")
	}
	if b := getBlob(t, s, "keep", "b"); b != nil {
		t.Errorf("rolled-back blob is visible")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("rolled-back collection entries are visible: %q", got)
	}
}

func testUpdatePanic(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = s.Update(ctx, func(tx leasedb.Tx) error {
			if err := tx.InsertContainer(ctx, fullContainer("c")); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("container of a panicking Update is visible")
	}
	// The store is still usable: nothing leaked the write lock or a connection.
	for i := 0; i < 20; i++ {
		mustInsertContainer(t, s, "after"+strconv.Itoa(i))
	}
}

func testUpdateCanceled(t *testing.T, s leasedb.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		ran = true
		return tx.InsertContainer(ctx, fullContainer("c"))
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a canceled context: got %v (fn ran: %v), want context.Canceled", err, ran)
	}
	// Canceled in the middle.
	ctx2, cancel2 := context.WithCancel(context.Background())
	err = s.Update(ctx2, func(tx leasedb.Tx) error {
		if err := tx.InsertContainer(ctx2, fullContainer("c")); err != nil {
			return err
		}
		cancel2()
		return tx.PutBlob(ctx2, fullBlob("c", "b"))
	})
	if err == nil {
		t.Errorf("Update canceled mid-way committed")
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("canceled Update is visible")
	}
	mustInsertContainer(t, s, "after")
}

func testView(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "b")) })
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		b, err := tx.Blob(ctx, acct, "c", "b", leasedb.LockNone)
		if err != nil {
			return err
		}
		checkBlob(t, fullBlob("c", "b"), b)
		// Lock modes are accepted (and meaningless) in a View.
		if _, err := tx.Blob(ctx, acct, "c", "b", leasedb.LockExclusive); err != nil {
			return err
		}
		if _, err := tx.Container(ctx, acct, "c", leasedb.LockShare); err != nil {
			return err
		}
		cs, err := tx.ListContainers(ctx, acct, "", "", 10)
		if len(cs) != 1 {
			t.Errorf("ListContainers in View: %d rows", len(cs))
		}
		return err
	})
	// A View is one snapshot: a commit during it is not seen.
	ctx := ctxT(t)
	err := s.View(ctx, func(tx leasedb.Tx) error {
		before, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if err != nil {
			return err
		}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, fullBlob("c", "new")) })
		after, err := tx.ListBlobs(ctx, acct, "c", "", "", 100)
		if err != nil {
			return err
		}
		if len(before) != len(after) {
			t.Errorf("View saw a concurrent commit: %d rows, then %d", len(before), len(after))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b := getBlob(t, s, "c", "new"); b == nil {
		t.Errorf("a later View does not see the commit")
	}
	// fn's error comes back unchanged.
	sentinel := errors.New("sentinel")
	if err := s.View(ctx, func(leasedb.Tx) error { return sentinel }); err != sentinel {
		t.Errorf("View returned %v, want fn's error", err)
	}
}

func testViewReadOnly(t *testing.T, s leasedb.Store) {
	ctx := ctxT(t)
	err := s.View(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, fullContainer("c"))
	})
	if err == nil {
		t.Errorf("InsertContainer in a View succeeded")
	}
	err = s.View(ctx, func(tx leasedb.Tx) error { return tx.AddGC(ctx, []string{"k"}, base) })
	if err == nil {
		t.Errorf("AddGC in a View succeeded")
	}
	if c := getContainer(t, s, "c"); c != nil {
		t.Errorf("write in a View is visible")
	}
	if got := keysOf(t, s); len(got) != 0 {
		t.Errorf("write in a View is visible: %q", got)
	}
}

// CreateOnce races 16 goroutines, spread over stores (all on one database),
// each running Update{ Blob(LockExclusive); if absent, PutBlob } on the same
// new name. Exactly one may see it absent: the exclusive lock covers names
// that have no row yet.
func CreateOnce(t *testing.T, stores ...leasedb.Store) {
	const goroutines = 16
	s0 := stores[0]
	mustInsertContainer(t, s0, "c")
	ctx := ctxT(t)
	var absent atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		s := stores[g%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var sawAbsent bool
			err := s.Update(ctx, func(tx leasedb.Tx) error {
				sawAbsent = false // fn may be re-run
				b, err := tx.Blob(ctx, acct, "c", "the-name", leasedb.LockExclusive)
				if err != nil {
					return err
				}
				if b != nil {
					return nil
				}
				sawAbsent = true
				// Widen the window a concurrent creator would need.
				time.Sleep(5 * time.Millisecond)
				nb := fullBlob("c", "the-name")
				nb.ETag, err = tx.NextETag(ctx)
				if err != nil {
					return err
				}
				return tx.PutBlob(ctx, nb)
			})
			if err != nil {
				errs <- err
				return
			}
			if sawAbsent {
				absent.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Update: %v", err)
	}
	if n := absent.Load(); n != 1 {
		t.Errorf("%d of %d transactions saw the name absent and created it; want exactly 1", n, goroutines)
	}
}

// Counter runs 8 goroutines × 25 read-modify-write increments of
// Metadata["n"] of one blob under LockExclusive, spread over stores (all on
// one database). No increment may be lost: the result is exactly 200.
func Counter(t *testing.T, stores ...leasedb.Store) {
	const goroutines, per = 8, 25
	s0 := stores[0]
	mustInsertContainer(t, s0, "c")
	update(t, s0, func(ctx context.Context, tx leasedb.Tx) error {
		b := fullBlob("c", "counter")
		b.Metadata = map[string]string{"n": "0"}
		return tx.PutBlob(ctx, b)
	})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		s := stores[g%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				err := s.Update(ctx, func(tx leasedb.Tx) error {
					b, err := tx.Blob(ctx, acct, "c", "counter", leasedb.LockExclusive)
					if err != nil {
						return err
					}
					if b == nil {
						return errors.New("counter blob vanished")
					}
					n, err := strconv.Atoi(b.Metadata["n"])
					if err != nil {
						return err
					}
					b.Metadata["n"] = strconv.Itoa(n + 1)
					if b.ETag, err = tx.NextETag(ctx); err != nil {
						return err
					}
					return tx.PutBlob(ctx, b)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Update: %v", err)
	}
	b := getBlob(t, s0, "c", "counter")
	if b == nil || b.Metadata["n"] != strconv.Itoa(goroutines*per) {
		t.Errorf("counter = %v, want %d", b, goroutines*per)
	}
}

// testBlockStats: count and id length of staged blocks, per blob name.
func testBlockStats(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	stats := func(blob string) (int, int) {
		t.Helper()
		var n, l int
		err := s.View(context.Background(), func(tx leasedb.Tx) error {
			var err error
			n, l, err = tx.BlockStats(context.Background(), acct, "c", blob)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, l
	}
	if n, l := stats("b"); n != 0 || l != 0 {
		t.Fatalf("no blocks: count %d len %d", n, l)
	}
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "YWJj", Key: "k/1", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "ZGVm", Key: "k/2", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "b", leasedb.Block{ID: "YWJj", Key: "k/3", Size: 1, StagedAt: base})
	stageBlock(t, s, "c", "other", leasedb.Block{ID: "YQ==", Key: "k/4", Size: 1, StagedAt: base})
	if n, l := stats("b"); n != 2 || l != 4 {
		t.Fatalf("two blocks of id length 4: count %d len %d", n, l)
	}
}

// testTierTags: the access tier and the index tags round-trip; an unset
// tier reads back as "", no tags (nil or empty) as a nil map; overwriting a
// row replaces both.
func testTierTags(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	ten := map[string]string{}
	for i := 0; i < 10; i++ {
		ten["k"+strconv.Itoa(i)] = strings.Repeat("v", 256)
	}
	ten[strings.Repeat("K", 128)] = "a+b-c./:=_ Z9"
	cases := []struct {
		tier string
		tags map[string]string
	}{
		{"", nil},
		{"Hot", map[string]string{}},
		{"Archive", map[string]string{"a": "1"}},
		{"Cold", ten},
	}
	for i, tc := range cases {
		name := "b" + strconv.Itoa(i)
		b := &leasedb.Blob{Account: acct, Container: "c", Name: name, Type: "BlockBlob", ETag: `"e"`,
			AccessTier: tc.tier, Tags: tc.tags}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		got := getBlob(t, s, "c", name)
		checkBlob(t, b, got)
		if got != nil && len(tc.tags) == 0 && got.Tags != nil {
			t.Errorf("%s: no tags came back as %#v; want nil", name, got.Tags)
		}
	}
	// Overwrite clears both; and back.
	b := fullBlob("c", "x")
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	b.AccessTier, b.Tags = "", nil
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	b.AccessTier, b.Tags = "Archive", map[string]string{"z": "y"}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	checkBlob(t, b, getBlob(t, s, "c", "x"))
	// Listed rows carry them too.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		bs, err := tx.ListBlobs(ctx, acct, "c", "x", "", 10)
		if err != nil {
			return err
		}
		if len(bs) != 1 {
			t.Fatalf("got %d rows", len(bs))
		}
		checkBlob(t, b, bs[0])
		return nil
	})
}
