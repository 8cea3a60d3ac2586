package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/postgres"
)

// TestSetBlobAttrsWriteColumns: Set Blob Metadata and Set Blob Properties
// on a plain account over a 4 KiB inline blob update the columns they
// change (leasedb.ReplaceWrite.Attrs), and Set Blob Tags its tags and
// lease (leasedb.BlobTagsWriter), not the whole row: no upsert that
// sends the extents, and with them the blob's bytes, to be written again
// (TOAST chunks); still one transaction of at most 4 statements, and the
// bytes, tags and every column neither changes read back as they were.
func TestSetBlobAttrsWriteColumns(t *testing.T) {
	ctx := context.Background()
	tags := map[string]string{"t": "v"}
	s, db, ref, data := inlineLeaseBlob(t, tags)
	before := readBlob(t, s, "b")
	var c postgres.Counter
	ops := []struct {
		name string
		run  func(ctx context.Context) (*leasedb.Blob, error)
	}{
		{"Set Blob Metadata", func(ctx context.Context) (*leasedb.Blob, error) {
			return db.SetBlobMetadata(ctx, ref, "", leasedb.Conditions{}, map[string]string{"m": "1"})
		}},
		{"Set Blob Properties", func(ctx context.Context) (*leasedb.Blob, error) {
			return db.SetBlobProperties(ctx, ref, "", leasedb.Conditions{}, leasedb.Props{ContentType: "text/plain"})
		}},
	}
	for _, op := range ops {
		c.Reset()
		out, err := op.run(postgres.CountInto(ctx, &c))
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		got := c.Counts()
		sql := strings.Join(got.SQL, "\n")
		if got.Transactions != 1 || got.Statements > 4 {
			t.Errorf("%s: %d transactions, %d statements, want 1 and at most 4:\n%s", op.name, got.Transactions, got.Statements, sql)
		}
		if strings.Contains(sql, "INSERT INTO blobs") || strings.Contains(sql, "extents =") || !strings.Contains(sql, "UPDATE blobs SET etag") {
			t.Errorf("%s: written with the whole row, not the columns it changes:\n%s", op.name, sql)
		}
		b := readBlob(t, s, "b")
		if b.ETag != out.ETag || b.ETag == before.ETag {
			t.Errorf("%s: stored ETag %s, answered %s, before %s", op.name, b.ETag, out.ETag, before.ETag)
		}
	}
	// Set Blob Tags: the tags and lease columns alone.
	c.Reset()
	if _, err := db.SetBlobTags(postgres.CountInto(ctx, &c), ref, "", leasedb.Conditions{}, map[string]string{"t": "w"}); err != nil {
		t.Fatal(err)
	}
	if sql := strings.Join(c.Counts().SQL, "\n"); strings.Contains(sql, "INSERT INTO blobs") || !strings.Contains(sql, "UPDATE blobs SET tags") {
		t.Errorf("Set Blob Tags: written with the whole row, not its tags:\n%s", sql)
	}
	tags["t"] = "w"
	b := readBlob(t, s, "b")
	if len(b.Extents) != 1 || !bytes.Equal(b.Extents[0].Data, data) || b.Size != before.Size || b.Tags["t"] != tags["t"] ||
		b.Created != before.Created || b.Metadata["m"] != "1" || b.Props.ContentType != "text/plain" {
		t.Fatalf("after Set Blob Metadata, Properties and Tags: size %d, tags %v, metadata %v, content type %q, created %v (was %v), bytes kept %t",
			b.Size, b.Tags, b.Metadata, b.Props.ContentType, b.Created, before.Created, len(b.Extents) == 1 && bytes.Equal(b.Extents[0].Data, data))
	}
}
