package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// BEGIN travels with a write's first statement (LockForReplace of Put
// Blob, LockBlob of Lease Blob) in one round trip. A BEGIN the server
// refuses there is still what a refused BEGIN was: on a standby an outage
// (leasedb.ErrUnavailable), certainly not committed, whatever the layer
// above made of the statement's error.
func TestRefusedBeginWithFirstStatement(t *testing.T) {
	ctx := context.Background()
	s := openStandby(t, true)
	ref := leasedb.BlobRef{Account: "a", Container: "c", Name: "b"}
	// Until the standby replayed the schema, reads fail.
	for s.View(ctx, func(tx leasedb.Tx) error {
		_, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, leasedb.LockNone)
		return err
	}) != nil {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	db := &leasedb.DB{Store: s}
	for what, op := range map[string]func() error{
		"Put Blob": func() error {
			_, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref, Type: "BlockBlob"})
			return err
		},
		"LockBlob (Lease Blob)": func() error {
			return s.Update(ctx, func(tx leasedb.Tx) error {
				_, _, _, err := tx.(leasedb.BlobLocker).LockBlob(ctx, ref.Account, ref.Container, ref.Name)
				return err
			})
		},
		"an Update that swallows the error": func() error {
			return s.Update(ctx, func(tx leasedb.Tx) error {
				if l, ok := tx.(leasedb.BlobWriteLocker); ok {
					_, _ = l.LockForReplace(ctx, ref, leasedb.ReadWhole)
				}
				return nil
			})
		},
	} {
		checkRefusedAtBegin(t, what, op())
	}
}
