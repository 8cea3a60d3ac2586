package storetest

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

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

// concurrently runs fn(0) … fn(n-1), each in its own goroutine, released
// together so that they contend, and returns the errors they returned.
func concurrently(n int, fn func(g int) error) []error {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := fn(g); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// deleteContainer runs Tx.DeleteContainer of acct's container name in its
// own Update and returns the keys it freed.
func deleteContainer(t *testing.T, s leasedb.Store, name string) []string {
	t.Helper()
	var keys []string
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		var err error
		keys, err = tx.DeleteContainer(ctx, acct, name)
		return err
	})
	return keys
}

// putBlobsAndSnapshots writes in container c a blob under each of names
// and, for each name snaps holds, a snapshot with each of its ids.
func putBlobsAndSnapshots(ctx context.Context, tx leasedb.Tx, c string, names []string, snaps map[string][]string) error {
	for _, n := range names {
		if err := tx.PutBlob(ctx, fullBlob(c, n)); err != nil {
			return err
		}
	}
	for n, ids := range snaps {
		for _, id := range ids {
			if err := tx.PutSnapshot(ctx, fullSnapshot(c, n, id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillNeighbour gives container c2 a blob, a snapshot (snap1) and a
// staged block under each of names (the block under the name and suffix):
// entries of another container before, between and after those listed.
func fillNeighbour(ctx context.Context, tx leasedb.Tx, names []string, suffix string) error {
	for _, n := range names {
		if err := tx.PutBlob(ctx, fullBlob("c2", n)); err != nil {
			return err
		}
		if err := tx.PutSnapshot(ctx, fullSnapshot("c2", n, snap1)); err != nil {
			return err
		}
		if _, err := tx.StageBlock(ctx, acct, "c2", n+suffix, leasedb.Block{ID: "YQ==", Key: "k/c2/" + n, Size: 1, StagedAt: base}); err != nil {
			return err
		}
	}
	return nil
}

// accountQueue is what the collection queue holds of account's keys
// (those under "account/", the prefix cut), and of those what ClaimDue
// claims at once: each sorted.
func accountQueue(t *testing.T, s leasedb.Store, account string) (queued, due []string) {
	t.Helper()
	mine := func(keys []string) []string {
		var out []string
		for _, key := range keys {
			if strings.HasPrefix(key, account+"/") {
				out = append(out, strings.TrimPrefix(key, account+"/"))
			}
		}
		sort.Strings(out)
		return out
	}
	queued = mine(keysOf(t, s))
	claimed, err := s.ClaimDue(ctxT(t), 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	return queued, mine(claimed)
}

// stepOutcome is a step's outcome as the paths tests compare them: "step:
// ok", or "step: " and the Azure error code; any other error fails t.
func stepOutcome(t *testing.T, account, step string, err error) string {
	t.Helper()
	code := "ok"
	if e, ok := svcerr.As(err); ok {
		code = string(e.Code)
	} else if err != nil {
		t.Fatalf("%s %s: %v", account, step, err)
	}
	return step + ": " + code
}

// insertAccountContainer inserts container c of account.
func insertAccountContainer(t *testing.T, s leasedb.Store, account string) {
	t.Helper()
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: account, Name: "c", ETag: `"0x8D0000000000001"`, LastModified: base})
	})
}
