package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// viewOnly hides the store's one-statement read (leasedb.BlobReader), so
// DB.GetBlob takes the View path.
type viewOnly struct{ leasedb.Store }

// BenchmarkGetBlob: DB.GetBlob (Get Blob's metadata read) in one
// statement (ReadBlob) and in a View (BEGIN, blob, ROLLBACK).
func BenchmarkGetBlob(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "meta.db"))
	if err := s.Update(ctx, func(tx leasedb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if err := tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "c", ETag: `"0x1"`, LastModified: now}); err != nil {
			return err
		}
		return tx.PutBlob(ctx, &leasedb.Blob{Account: "a", Container: "c", Name: "b", Type: "BlockBlob", ETag: `"0x2"`,
			Created: now, LastModified: now, Size: 3})
	}); err != nil {
		b.Fatal(err)
	}
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	for _, bc := range []struct {
		name  string
		store leasedb.Store
	}{{"OneStatement", s}, {"View", viewOnly{s}}} {
		db := &leasedb.DB{Store: bc.store}
		b.Run(bc.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
