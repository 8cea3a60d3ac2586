package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"syscall"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// The database server's disk fills up under the blobs table (a tablespace
// on a small tmpfs): a write the server refuses with disk_full (53100) is
// an outage (leasedb.ErrUnavailable, 503 ServerBusy, as a full filesystem
// under the disk backend is), not a failure of the request (500), and
// certainly not committed.
func TestServerDiskFullIsUnavailable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs (needs root)")
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skip(err)
	}
	// Mounted before the server starts, unmounted after it stopped.
	dir, err := os.MkdirTemp("", "blobgw-tablespace-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700,uid="+pg.Uid+",gid="+pg.Gid); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	srv := pgtest.PrivateServer(t)
	dsn := srv.NewDatabase(t)
	s := open(t, dsn)
	ctx := context.Background()
	admin := pgtest.Connect(t, dsn)
	for _, q := range []string{`CREATE TABLESPACE tiny LOCATION '` + dir + `'`, `ALTER TABLE blobs SET TABLESPACE tiny`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"e"`})
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if i == 2000 {
			t.Fatal("2000 writes of 7 KB went into a 1 MB tablespace")
		}
		// Random text: TOAST's compression gains nothing on it.
		raw := make([]byte, 3500)
		rand.Read(raw)
		value := hex.EncodeToString(raw)
		err := s.Update(ctx, func(tx leasedb.Tx) error {
			return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: fmt.Sprintf("b%04d", i), Type: "BlockBlob",
				ETag: `"e"`, Metadata: map[string]string{"m": value}})
		})
		if err == nil {
			continue
		}
		if !errors.Is(err, leasedb.ErrUnavailable) {
			t.Errorf("write %d with the server's disk full: %v, want leasedb.ErrUnavailable", i, err)
		}
		if leasedb.MayHaveCommitted(err) {
			t.Errorf("a statement the server refused is marked as maybe committed: %v", err)
		}
		break
	}
}
