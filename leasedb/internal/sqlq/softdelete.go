package sqlq

import (
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// DeletedBlobCols are the columns of a deleted_blobs row (blob soft
// delete, 0016_blob_soft_delete): SnapshotCols, then the deletion and
// expiry times as microseconds since the Unix epoch in both dialects.
const DeletedBlobCols = SnapshotCols + `, deleted_at, expires_at`

// DeletedBasePos is the snapshot part of a listing position right past a
// name's soft-deleted base blob: it sorts after every snapshot id and
// every VersionPos position, as the soft-deleted base follows the name's
// previous versions and precedes its current blob.
const DeletedBasePos = "w"

// deletedMark separates the parts of the snapshot column of a soft-deleted
// row in the listing queries: "<snapshot id or DeletedBasePos>/<deleted
// at>/<expires at>" (microseconds). Snapshot ids have a fixed length, so
// the suffix keeps them in id order among the live snapshots.
const deletedMark = "/"

// deletedSortCol and deletedKind are the snapshot and kind columns of a
// deleted_blobs row in ListEntries, ListDelimited and NameRows: a
// soft-deleted snapshot sorts among the snapshots, a soft-deleted base
// blob after the previous versions (KindVersion, DeletedBasePos).
const (
	deletedSortCol = `CAST((CASE WHEN snapshot = '' THEN '` + DeletedBasePos + `' ELSE snapshot END) || '` + deletedMark +
		`' || CAST(deleted_at AS TEXT) || '` + deletedMark + `' || CAST(expires_at AS TEXT) AS TEXT)`
	deletedKind = `(CASE WHEN snapshot = '' THEN ` + "1" + ` ELSE ` + "0" + ` END)`
)

func init() {
	// deletedKind spells the kinds out (a constant expression cannot call
	// strconv); keep them in step.
	if KindVersion != 1 || KindSnapshot != 0 {
		panic("sqlq: deletedKind is out of step with the kinds")
	}
}

// PutDeletedBlob is Tx.PutDeletedBlob's statement: the values of
// BlobValues, the snapshot id (” for a base blob), deleted_at and
// expires_at; an existing (name, snapshot) inserts nothing.
func PutDeletedBlob(placeholder func(n int) string) string {
	return `INSERT INTO deleted_blobs (` + DeletedBlobCols + `)
		VALUES (` + Placeholders(placeholder, blobColCount+3) + `)
		ON CONFLICT (account, container, name, snapshot) DO NOTHING`
}

// DeletedBlobsOf is Tx.DeletedBlobs' query (1: account, 2: container, 3:
// name): the name's soft-deleted rows, the base blob (”) first, then the
// snapshots by id.
func DeletedBlobsOf(placeholder func(n int) string) string {
	return `SELECT ` + DeletedBlobCols + ` FROM deleted_blobs WHERE account = ` + placeholder(1) +
		` AND container = ` + placeholder(2) + ` AND name = ` + placeholder(3) + ` ORDER BY snapshot`
}

// RemoveDeletedBlob is Tx.RemoveDeletedBlob's statement (1: account, 2:
// container, 3: name, 4: snapshot).
func RemoveDeletedBlob(placeholder func(n int) string) string {
	return `DELETE FROM deleted_blobs WHERE account = ` + placeholder(1) + ` AND container = ` + placeholder(2) +
		` AND name = ` + placeholder(3) + ` AND snapshot = ` + placeholder(4)
}

// ExpiredBlobs is Tx.ExpiredBlobs' query (1: the time in microseconds, 2:
// the limit), read from the index of expires_at.
func ExpiredBlobs(placeholder func(n int) string) string {
	return `SELECT account, container, name, snapshot FROM deleted_blobs WHERE expires_at <= ` + placeholder(1) +
		` ORDER BY expires_at LIMIT ` + placeholder(2)
}

// DeletedBlobValues are PutDeletedBlob's arguments for b.
func DeletedBlobValues(b *leasedb.Blob, toTime func(time.Time) any) ([]any, error) {
	vals, err := BlobValues(b, toTime)
	if err != nil {
		return nil, err
	}
	return append(vals, b.Snapshot, b.DeletedTime.UnixMicro(), b.DeleteExpires.UnixMicro()), nil
}

// ScanDeletedBlobs reads rows of DeletedBlobCols.
func ScanDeletedBlobs[T any](rows Rows, fromTime func(T) time.Time) ([]*leasedb.Blob, error) {
	type times struct{ del, exp int64 }
	var ts []*times
	bs, err := ScanBlobs(rows, fromTime, func(b *leasedb.Blob) []any {
		t := new(times)
		ts = append(ts, t)
		return []any{&b.Snapshot, &t.del, &t.exp}
	})
	for i, b := range bs {
		b.DeletedTime, b.DeleteExpires = time.UnixMicro(ts[i].del).UTC(), time.UnixMicro(ts[i].exp).UTC()
	}
	return bs, err
}

// ScanBlobRefs reads the rows of ExpiredBlobs.
func ScanBlobRefs(rows Rows) ([]leasedb.DeletedRef, error) {
	var out []leasedb.DeletedRef
	for rows.Next() {
		var r leasedb.DeletedRef
		if err := rows.Scan(&r.Account, &r.Container, &r.Name, &r.Snapshot); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// markDeleted reads the snapshot column of a soft-deleted row in a listing
// query (deletedSortCol) into b: its snapshot id ("" for a base blob) and
// its times. It reports false for the column of a live row.
func markDeleted(b *leasedb.Blob) bool {
	parts := strings.Split(b.Snapshot, deletedMark)
	if len(parts) != 3 {
		return false
	}
	del, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	b.Snapshot = parts[0]
	if b.Snapshot == DeletedBasePos {
		b.Snapshot = ""
	}
	b.DeletedTime, b.DeleteExpires = time.UnixMicro(del).UTC(), time.UnixMicro(exp).UTC()
	return true
}

// hasDeletedRest reports whether the cursor's name (the cursor being in
// its rows at afterSnapshot) has soft-deleted rows still to list: its
// soft-deleted snapshots (with snapshots) or its soft-deleted base, unless
// the cursor is past it.
func hasDeletedRest(afterSnapshot string, inc leasedb.ListInclude) bool {
	return inc.Snapshots || afterSnapshot < DeletedBasePos
}

// deletedCursorRest is the condition (after account and container) of
// the deleted_blobs rows of ListEntries that are the rest of the cursor's
// name (see hasDeletedRest). It binds its arguments in text order, as
// plain "?" placeholders need.
func deletedCursorRest(arg func(v any) string, after, afterSnapshot string, inc leasedb.ListInclude) string {
	c := `name = ` + arg(after) + ` AND (`
	if inc.Snapshots {
		c += `snapshot > ` + arg(afterSnapshot)
		if afterSnapshot < DeletedBasePos {
			c += ` OR `
		}
	}
	if afterSnapshot < DeletedBasePos {
		c += `snapshot = ''`
	}
	return c + `)`
}

// deletedOnly narrows the deleted_blobs rows to base blobs unless the
// listing includes snapshots.
func deletedOnly(inc leasedb.ListInclude) string {
	if inc.Snapshots {
		return ""
	}
	return ` AND snapshot = ''`
}

// PutAccountSettings is Tx.PutAccountSettings' statement (1: account, 2:
// versioning, 3: delete retention days).
func PutAccountSettings(placeholder func(n int) string) string {
	return `INSERT INTO account_settings (account, versioning, delete_retention_days) VALUES (` + Placeholders(placeholder, 3) + `)
		ON CONFLICT (account) DO UPDATE SET versioning = excluded.versioning, delete_retention_days = excluded.delete_retention_days`
}
