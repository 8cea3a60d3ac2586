package sqlite

import (
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// TestTagsTierStatements: Set Blob Tags and Set Blob Tier of a 4 KiB
// inline blob take BEGIN IMMEDIATE once and COMMIT once and between them
// read the row's head and write their columns (2 statements); Get Blob
// Tags reads the head alone (1 statement, no transaction). No statement
// names the extents, which hold the bytes, and the bytes stay.
func TestTagsTierStatements(t *testing.T) {
	s, db, _ := hotStore(t)
	ctx := hotCtx(t)
	tags := map[string]string{"k": "v"}
	for _, op := range []struct {
		name               string
		begins, statements int
		run                func() error
	}{
		{"Set Blob Tags", 1, 2, func() error {
			_, err := db.SetBlobTags(ctx, hotRef, "", leasedb.Conditions{}, tags)
			return err
		}},
		{"Get Blob Tags", 0, 1, func() error {
			h, err := db.GetBlobTags(ctx, hotRef, "", leasedb.Conditions{})
			if err == nil && h.Tags["k"] != "v" {
				t.Errorf("Get Blob Tags: %v", h.Tags)
			}
			return err
		}},
		{"Set Blob Tier", 1, 2, func() error {
			_, err := db.SetBlobTier(ctx, hotRef, "", leasedb.Conditions{}, leasedb.TierCool)
			return err
		}},
	} {
		if err := op.run(); err != nil { // warm the statement caches
			t.Fatal(err)
		}
		var err error
		begins, commits, sql := traceRun(s, func() { err = op.run() })
		other := len(sql)
		if err != nil {
			t.Fatal(err)
		}
		if begins != op.begins || commits != op.begins || other != op.statements {
			t.Errorf("%s: %d BEGIN IMMEDIATE, %d COMMIT, %d other statements; want %d, %d, %d:\n%s",
				op.name, begins, commits, other, op.begins, op.begins, op.statements, strings.Join(sql, "\n"))
		}
		for _, q := range sql {
			if strings.Contains(q, "extents") {
				t.Errorf("%s: a statement names the extents: %s", op.name, q)
			}
		}
	}
	b, _, err := db.GetBlob(ctx, hotRef, "", leasedb.Conditions{})
	if err != nil || b.AccessTier != leasedb.TierCool || b.Tags["k"] != "v" || len(b.Extents) != 1 || string(b.Extents[0].Data) != string(hotBody) {
		t.Fatalf("after the writes: %+v, %v", b, err)
	}
}
