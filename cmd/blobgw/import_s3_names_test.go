package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
)

// An S3 object whose name the gateway refuses as a blob name (a control
// character, U+FFFE, which List Blobs cannot write in XML) or maps to
// another name (a backslash, read as "/" in every request's path) must
// not be adopted: the blob would be unlistable or unaddressable. adoptOne
// refuses it before any request to S3 (the store here is nil: reaching it
// is the failure).
func TestAdoptOneRefusesUnaddressableNames(t *testing.T) {
	ctx := context.Background()
	store, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	db := &leasedb.DB{Store: store}
	for _, name := range []string{"a\x01b", "tab\there", "a\u0085b", "a\ufffeb", `dir\file.txt`} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("went on to S3: %v", r)
				}
			}()
			_, _, err = adoptOne(ctx, db, nil, "bucket", "data/"+name,
				leasedb.BlobRef{Account: "devstoreaccount1", Container: "c", Name: name}, 1)
			return err
		}()
		if err == nil || !strings.Contains(err.Error(), "not a valid blob name") {
			t.Errorf("adoptOne(%q) = %v; want the name refused", name, err)
		}
	}
}
