package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// The statements and allocations of a small conditional Put Blob and of a
// Get Blob through leasedb.DB on this store, held as ceilings so that a
// change that adds a statement or a driver allocation per request fails
// here. The context carries a deadline, as the gateway's commit context
// does (a context without one takes cheaper paths in database/sql and
// modernc.org/sqlite).

// hotStore is a migrated store with container "c" and a 4 KiB inline blob
// "b"; it returns the blob's ETag.
func hotStore(t testing.TB) (*Store, *leasedb.DB, string) {
	t.Helper()
	s, _ := openStmtStore(t)
	db := &leasedb.DB{Store: s}
	ctx := context.Background()
	if _, err := db.CreateContainer(ctx, "acct", "c", nil, ""); err != nil {
		t.Fatal(err)
	}
	b, _, err := db.PutBlob(ctx, hotPut(""))
	if err != nil {
		t.Fatal(err)
	}
	return s, db, b.ETag
}

var hotBody = bytes.Repeat([]byte("x"), 4096)

// hotRef is the name of hotStore's blob.
var hotRef = leasedb.BlobRef{Account: "acct", Container: "c", Name: "b"}

// hotCtx is a test's context, ended after a minute or with the test.
func hotCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hotPut is put-small-ifmatch's request: 4 KiB inline, If-Match etag
// (none when etag is "").
func hotPut(etag string) leasedb.PutBlobRequest {
	req := leasedb.PutBlobRequest{
		Ref:     hotRef,
		Type:    "BlockBlob",
		Extents: []leasedb.Extent{{Size: int64(len(hotBody)), Data: hotBody}},
	}
	req.Props.ContentType = "application/octet-stream"
	if etag != "" {
		req.Cond.IfMatch = []string{strings.Trim(etag, `"`)}
	}
	return req
}

// traceStatements counts the statements the store's connections are asked
// for from now on: BEGIN, COMMIT and ROLLBACK in txEnds, the others in
// other.
func traceStatements(s *Store) (other, txEnds *int) {
	other, txEnds = new(int), new(int)
	s.stmts.trace = func(q string) {
		switch q {
		case "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK":
			*txEnds++
		default:
			*other++
		}
	}
	return other, txEnds
}

// TestHotPutStatements: an If-Match overwrite of a 4 KiB inline blob in an
// account without versioning or soft delete runs 3 statements besides
// BEGIN and COMMIT (fastput.go): the row, a new ETag read with the
// account's settings and whether the name has staged blocks, and the
// upsert. The generic sequence ran 7: the container, the row, the
// settings, the name's other rows, the ETag, the staged blocks and the
// upsert. BEGIN IMMEDIATE and COMMIT are statements of the cache too
// (writetx.go), compiled once per connection.
func TestHotPutStatements(t *testing.T) {
	s, db, etag := hotStore(t)
	ctx := hotCtx(t)
	for range 3 { // warm the statement caches
		b, _, err := db.PutBlob(ctx, hotPut(etag))
		if err != nil {
			t.Fatal(err)
		}
		etag = b.ETag
	}
	const n = 20
	other, txEnds := traceStatements(s)
	prepares := s.stmts.prepares.Load()
	for range n {
		b, _, err := db.PutBlob(ctx, hotPut(etag))
		if err != nil {
			t.Fatal(err)
		}
		etag = b.ETag
	}
	s.stmts.trace = nil
	if got := *other / n; got > 3 {
		t.Errorf("If-Match Put Blob: %d statements per put besides BEGIN and COMMIT, want at most 3", got)
	}
	if *txEnds != 2*n {
		t.Errorf("%d puts asked the statement cache for %d BEGIN and COMMIT, want %d", n, *txEnds, 2*n)
	}
	if got := s.stmts.prepares.Load() - prepares; got != 0 {
		t.Errorf("%d warm puts compiled %d statements, want 0", n, got)
	}
}

// TestHotPutNewStatements: put-small's Put Blob, every one to a new
// name, runs 3 statements besides BEGIN and COMMIT too: the container's
// presence is read with the ETag (lockForReplaceSQL), not by a statement
// of its own after the row was found absent (4 before).
func TestHotPutNewStatements(t *testing.T) {
	s, db, _ := hotStore(t)
	ctx := hotCtx(t)
	put := func(i int) {
		req := hotPut("")
		req.Ref.Name = fmt.Sprintf("new/%d", i)
		if _, _, err := db.PutBlob(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // warm the statement caches
		put(i)
	}
	const n = 20
	other, txEnds := traceStatements(s)
	for i := range n {
		put(100 + i)
	}
	s.stmts.trace = nil
	if got := *other / n; got > 3 || *other%n != 0 {
		t.Errorf("Put Blob of a new name: %d statements in %d puts besides BEGIN and COMMIT, want at most 3 per put", *other, n)
	}
	if *txEnds != 2*n {
		t.Errorf("%d puts asked the statement cache for %d BEGIN and COMMIT, want %d", n, *txEnds, 2*n)
	}
	// Into a missing container: ContainerNotFound, nothing written.
	req := hotPut("")
	req.Ref.Container = "gone"
	if _, _, err := db.PutBlob(ctx, req); !svcerr.HasCode(err, svcerr.ContainerNotFound) {
		t.Fatalf("Put Blob into a missing container: %v, want ContainerNotFound", err)
	}
}

// TestHotPutAllocs: allocations and heap bytes of the same Put Blob
// (store and leasedb included; the request's own are the caller's).
func TestHotPutAllocs(t *testing.T) {
	_, db, etag := hotStore(t)
	ctx := hotCtx(t)
	put := func() {
		b, _, err := db.PutBlob(ctx, hotPut(etag))
		if err != nil {
			t.Fatal(err)
		}
		etag = b.ETag
	}
	allocs := testing.AllocsPerRun(50, put)
	const n = 50
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		put()
	}
	runtime.ReadMemStats(&m1)
	heap := (m1.TotalAlloc - m0.TotalAlloc) / n
	t.Logf("If-Match Put Blob: %.0f allocations, %d heap bytes", allocs, heap)
	if allocs > hotPutMaxAllocs {
		t.Errorf("If-Match Put Blob: %.0f allocations, want at most %d", allocs, hotPutMaxAllocs)
	}
	if heap > hotPutMaxBytes {
		t.Errorf("If-Match Put Blob: %d heap bytes, want at most %d", heap, hotPutMaxBytes)
	}
	// put-small's Put Blob: a new name each time.
	i := 0
	allocs = testing.AllocsPerRun(50, func() {
		i++
		req := hotPut("")
		req.Ref.Name = "new/" + strconv.Itoa(i)
		if _, _, err := db.PutBlob(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Put Blob of a new name: %.0f allocations", allocs)
	if allocs > hotPutNewMaxAllocs {
		t.Errorf("Put Blob of a new name: %.0f allocations, want at most %d", allocs, hotPutNewMaxAllocs)
	}
}

// TestHotGetAllocs: allocations of a Get Blob's read of the same blob.
func TestHotGetAllocs(t *testing.T) {
	_, db, _ := hotStore(t)
	ctx := hotCtx(t)
	ref := hotRef
	allocs := testing.AllocsPerRun(50, func() {
		if _, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Get Blob: %.0f allocations", allocs)
	if allocs > hotGetMaxAllocs {
		t.Errorf("Get Blob: %.0f allocations, want at most %d", allocs, hotGetMaxAllocs)
	}
}

const (
	hotPutMaxAllocs    = 113      // 177 before the quiet result columns (resultcols.go), 180 before PutBlob's state was one allocation, 183 before LockForReplace read the replaced row without its inline bytes, 312 before fastput.go (463 before the trimmed reads and writetx.go)
	hotPutMaxBytes     = 22 << 10 // 24 KB before the quiet result columns, 27.6 KB before LockForReplace read the replaced row without its inline bytes
	hotPutNewMaxAllocs = 90       // 173 before the container's presence was read with the ETag and the quiet result columns
	hotGetMaxAllocs    = 44       // 102 before the quiet result columns, 109 before ReadBlob ran detached on a connection of its own
)

// TestQuietColumns: the quietly named result columns (resultcols.go)
// read exactly what the plain column list reads, every column set to a
// value other than its default, and the driver reports neither a name
// longer than one byte nor a declared type for them.
func TestQuietColumns(t *testing.T) {
	s, _ := openStmtStore(t)
	ctx := context.Background()
	db := &leasedb.DB{Store: s}
	if _, err := db.CreateContainer(ctx, "acct", "c", nil, ""); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	b := &leasedb.Blob{Account: "acct", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x1"`,
		Created: now.Add(-time.Hour), LastModified: now, Size: 3, Metadata: map[string]string{"k": "v"},
		Extents: []leasedb.Extent{{Key: "key1", Size: 2}, {Size: 1, Data: []byte("x")}}, BlockCount: 2,
		Tags: map[string]string{"t": "1"}, AccessTier: "Cool", Sealed: true, SequenceNumber: 7,
		Lease: leasedb.Lease{ID: "id", State: "leased", Duration: 30, Expires: now.Add(time.Minute), BreakAt: now.Add(2 * time.Minute), Since: now.Add(-time.Minute)}}
	b.Props.ContentType, b.Props.ContentEncoding, b.Props.ContentLanguage = "text/plain", "gzip", "en"
	b.Props.ContentDisposition, b.Props.CacheControl, b.Props.ContentMD5 = "inline", "no-cache", []byte{1, 2, 3}
	var plain, quietRow *leasedb.Blob
	err := s.Update(ctx, func(ltx leasedb.Tx) error {
		t := ltx.(*tx)
		if err := t.PutBlob(ctx, b); err != nil {
			return err
		}
		for _, q := range []struct {
			query string
			row   **leasedb.Blob
		}{{`SELECT ` + blobCols + ` FROM blobs WHERE account = ? AND container = ? AND name = ?`, &plain}, {blobRowSQL, &quietRow}} {
			rows, err := t.tx.QueryContext(ctx, q.query, "acct", "c", "b")
			if err != nil {
				return err
			}
			bs, err := scanBlobs(rows, false)
			if err != nil {
				return err
			}
			if len(bs) != 1 {
				return fmt.Errorf("%d rows, want 1", len(bs))
			}
			*q.row = bs[0]
		}
		rows, err := t.tx.QueryContext(ctx, blobRowSQL, "acct", "c", "b")
		if err != nil {
			return err
		}
		defer rows.Close()
		types, err := rows.ColumnTypes()
		if err != nil {
			return err
		}
		if n := len(strings.Split(blobCols, ",")); len(types) != n {
			return fmt.Errorf("%d quiet columns, want %d", len(types), n)
		}
		for i, ct := range types {
			if len(ct.Name()) != 1 || ct.DatabaseTypeName() != "" {
				return fmt.Errorf("column %d: name %q, declared type %q, want one byte and none", i, ct.Name(), ct.DatabaseTypeName())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, quietRow) {
		t.Errorf("quiet columns read\n%+v\nthe plain ones\n%+v", quietRow, plain)
	}
	if plain.AccessTier != "Cool" || !plain.Sealed || plain.Lease.ID != "id" || len(plain.Extents) != 2 || string(plain.Extents[1].Data) != "x" {
		t.Errorf("row read back %+v, want what was written", plain)
	}
}

// TestUpdateContextEnds: statements of a write transaction run detached
// from the context once it was checked (stmtCtx), so a context that ends
// in the middle must still fail the next statement and roll back what the
// transaction wrote.
func TestUpdateContextEnds(t *testing.T) {
	s, _ := openStmtStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Update(ctx, func(ltx leasedb.Tx) error {
		if err := ltx.AddIntent(ctx, "k1", time.Now().Add(time.Hour)); err != nil {
			return err
		}
		cancel()
		return ltx.AddIntent(ctx, "k2", time.Now().Add(time.Hour))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update after cancel: %v, want context.Canceled", err)
	}
	keys, err := s.CollectionKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("queued after a canceled transaction: %q, want none", keys)
	}
}

// TestUpdatePanics: a function that panics in Update rolls its writes
// back and leaves the write connection usable (writetx.go ends the
// transaction itself).
func TestUpdatePanics(t *testing.T) {
	s, _ := openStmtStore(t)
	ctx := context.Background()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Update did not pass the panic on")
			}
		}()
		_ = s.Update(ctx, func(ltx leasedb.Tx) error {
			if err := ltx.AddIntent(ctx, "k1", time.Now().Add(time.Hour)); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if err := s.Update(ctx, func(ltx leasedb.Tx) error {
		return ltx.AddIntent(ctx, "k2", time.Now().Add(time.Hour))
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.CollectionKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "k2" {
		t.Errorf("queued: %q, want [k2]", keys)
	}
}
