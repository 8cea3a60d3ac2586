package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/sqlite"
)

// The filesystem of the database fills up (ENOSPC) while writes go on:
// each write either commits, or fails as an outage (leasedb.ErrUnavailable:
// 503 ServerBusy, never a 500); once space is freed the store writes
// again, and after a restart every acknowledged write is there. In
// "fresh" the WAL must grow for the first write after the filesystem
// filled; in "checkpointed" the WAL was checkpointed and is reused from
// its start (no growth), so the writes go on until a checkpoint needs
// the database file to grow and cannot, and the WAL then must grow; in
// "spilled" each write is larger than SQLite's page cache, which spills
// to the WAL in the middle of the transaction, so a statement, not the
// COMMIT, meets the full filesystem.
func TestFilesystemFull(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before int // writes before the filesystem fills
		rows   int // rows per write
	}{{"fresh", 0, 1}, {"checkpointed", 1200, 1}, {"spilled", 0, 1000}} {
		t.Run(tc.name, func(t *testing.T) { testFilesystemFull(t, tc.before, tc.rows) })
	}
}

func testFilesystemFull(t *testing.T, before, rows int) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=32m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "meta.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 6000)
	// A write is rows blobs: name, then name/1 ... name/(rows-1).
	put := func(name string) error {
		return s.Update(ctx, func(tx leasedb.Tx) error {
			for i := range rows {
				n := name
				if i > 0 {
					n = fmt.Sprintf("%s/%d", name, i)
				}
				if err := tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: n, Type: "BlockBlob",
					ETag: `"e"`, Metadata: map[string]string{"m": value}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var acked []string
	for i := 0; i < before; i++ {
		name := fmt.Sprintf("pre%04d", i)
		if err := put(name); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, name)
	}
	if before > 0 {
		if fi, err := os.Stat(path + "-wal"); err == nil {
			t.Logf("WAL %d bytes before the filesystem fills", fi.Size())
		}
	}
	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	failed := 0
	var refused []string // certainly not committed
	for i := 0; i < 3000 && failed < 20; i++ {
		name := fmt.Sprintf("b%03d", i)
		err := put(name)
		switch {
		case err == nil:
			acked = append(acked, name)
		case errors.Is(err, leasedb.ErrUnavailable):
			if failed == 0 {
				t.Logf("first refusal: %v", err)
			}
			if !leasedb.MayHaveCommitted(err) {
				refused = append(refused, name)
			}
			failed++
		default:
			t.Fatalf("write %s on a full filesystem: %v, want leasedb.ErrUnavailable", name, err)
		}
	}
	if failed == 0 {
		t.Fatal("no write failed: the filesystem never filled")
	}
	t.Logf("%d writes acknowledged, %d refused on the full filesystem", len(acked)-before, failed)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("write once space is free: %v", err)
	}
	acked = append(acked, "after")
	if err := s.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	s2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.View(ctx, func(tx leasedb.Tx) error {
		for _, name := range acked {
			for _, n := range []string{name, fmt.Sprintf("%s/%d", name, rows-1)} {
				if rows == 1 && n != name {
					continue
				}
				b, err := tx.Blob(ctx, "a", "c", n, leasedb.LockNone)
				if err != nil {
					return err
				}
				if b == nil || b.Metadata["m"] != value {
					t.Errorf("acknowledged write %s lost after the restart", n)
				}
			}
		}
		for _, name := range refused {
			b, err := tx.Blob(ctx, "a", "c", name, leasedb.LockNone)
			if err != nil {
				return err
			}
			if b != nil {
				t.Errorf("write %s was refused as not committed, and its row is there after the restart", name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// fill writes path until its filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{64 << 10, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}
