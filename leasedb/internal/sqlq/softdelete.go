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
// The snapshot column is the row's place among its name's rows: empty for a
// soft-deleted base blob, the snapshot id for a soft-deleted snapshot,
// VersionPos and the version id for a soft-deleted version (Delete Blob
// ?versionid= under a DeleteRetentionPolicy), which sorts after every
// snapshot id and before DeletedBasePos, where the previous versions
// are listed (leasedb.DeletedKey).
const DeletedBlobCols = SnapshotCols + `, deleted_at, expires_at`

// fromDeletedKey sets b's Snapshot and NonCurrent from the snapshot column
// of its deleted_blobs row (leasedb.DeletedKey), the version id being in
// version_id.
func fromDeletedKey(b *leasedb.Blob, key string) {
	if strings.HasPrefix(key, VersionPos) {
		b.Snapshot, b.NonCurrent = "", true
		return
	}
	b.Snapshot = key
}

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
// soft-deleted snapshot sorts among the snapshots, a soft-deleted version
// among the previous versions by its id (KindVersion, VersionPos and the
// id), a soft-deleted base blob after the previous versions (KindVersion,
// DeletedBasePos).
const (
	deletedSortCol = `CAST((CASE WHEN snapshot = '' THEN '` + DeletedBasePos + `' ELSE snapshot END) || '` + deletedMark +
		`' || CAST(deleted_at AS TEXT) || '` + deletedMark + `' || CAST(expires_at AS TEXT) AS TEXT)`
	deletedKind = `(CASE WHEN snapshot = '' OR snapshot >= '` + VersionPos + `' THEN ` + "1" + ` ELSE ` + "0" + ` END)`
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
// snapshots by id, then the versions by id (leasedb.DeletedKey).
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
	return append(vals, leasedb.DeletedKey(b), b.DeletedTime.UnixMicro(), b.DeleteExpires.UnixMicro()), nil
}

// ScanDeletedBlobs reads rows of DeletedBlobCols.
func ScanDeletedBlobs[T any](rows Rows, fromTime func(T) time.Time) ([]*leasedb.Blob, error) {
	type extra struct {
		key      string
		del, exp int64
	}
	var xs []*extra
	bs, err := ScanBlobs(rows, fromTime, func(b *leasedb.Blob) []any {
		x := new(extra)
		xs = append(xs, x)
		return []any{&x.key, &x.del, &x.exp}
	})
	for i, b := range bs {
		fromDeletedKey(b, xs[i].key)
		b.DeletedTime, b.DeleteExpires = time.UnixMicro(xs[i].del).UTC(), time.UnixMicro(xs[i].exp).UTC()
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
	if parts[0] == DeletedBasePos {
		parts[0] = ""
	}
	fromDeletedKey(b, parts[0])
	b.DeletedTime, b.DeleteExpires = time.UnixMicro(del).UTC(), time.UnixMicro(exp).UTC()
	return true
}

// deletedOthers narrows the deleted_blobs rows other than base blobs to
// the kinds the listing includes: snapshots with snapshots, versions with
// versions.
func deletedOthers(inc leasedb.ListInclude) string {
	switch {
	case inc.Snapshots && inc.Versions:
		return ""
	case inc.Snapshots:
		return ` AND snapshot < '` + VersionPos + `'`
	default:
		return ` AND snapshot >= '` + VersionPos + `'`
	}
}

// deletedRows narrows the deleted_blobs rows to the kinds the listing
// includes: base blobs always, snapshots with snapshots, versions with
// versions (include=deleted,versions: Azure lists a soft-deleted version
// only among the versions).
func deletedRows(inc leasedb.ListInclude) string {
	switch {
	case inc.Snapshots && inc.Versions:
		return ""
	case inc.Snapshots:
		return ` AND snapshot < '` + VersionPos + `'`
	case inc.Versions:
		return ` AND (snapshot = '' OR snapshot >= '` + VersionPos + `')`
	default:
		return ` AND snapshot = ''`
	}
}

// PutAccountSettings is Tx.PutAccountSettings' statement (1: account, 2:
// versioning, 3: delete retention days).
func PutAccountSettings(placeholder func(n int) string) string {
	return `INSERT INTO account_settings (account, versioning, delete_retention_days) VALUES (` + Placeholders(placeholder, 3) + `)
		ON CONFLICT (account) DO UPDATE SET versioning = excluded.versioning, delete_retention_days = excluded.delete_retention_days`
}
