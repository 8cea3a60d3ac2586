package sqlq

import (
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
)

// ContainerCols are the columns of a container row, in the order in which
// both drivers write (ContainerValues) and scan (ScanContainers) them.
const ContainerCols = `account, name, etag, last_modified, metadata, public_access,
	lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since, acl`

// Placeholders returns the first n parameters, comma-separated.
func Placeholders(placeholder func(n int) string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString(placeholder(i))
	}
	return b.String()
}

// InsertContainer is Tx.InsertContainer's statement: the values of
// ContainerValues; an existing name inserts nothing (no row affected)
// rather than failing, which in Postgres would abort the transaction.
func InsertContainer(placeholder func(n int) string) string {
	return `INSERT INTO containers (` + ContainerCols + `)
		VALUES (` + Placeholders(placeholder, 13) + `)
		ON CONFLICT (account, name) DO NOTHING`
}

// UpdateContainer is Tx.UpdateContainer's statement: the values of
// ContainerValues, the first two (account, name) naming the row. The
// placeholders must be numbered.
func UpdateContainer(placeholder func(n int) string) string {
	p := placeholder
	return `UPDATE containers SET etag = ` + p(3) + `, last_modified = ` + p(4) + `, metadata = ` + p(5) + `, public_access = ` + p(6) + `,
			lease_id = ` + p(7) + `, lease_state = ` + p(8) + `, lease_duration = ` + p(9) + `, lease_expires = ` + p(10) + `, lease_break_at = ` + p(11) + `,
			lease_since = ` + p(12) + `, acl = ` + p(13) + `
		WHERE account = ` + p(1) + ` AND name = ` + p(2)
}

// PutBlob is Tx.PutBlob's statement: an upsert of the values of
// BlobValues, every column but the key replaced.
func PutBlob(placeholder func(n int) string) string { return PutBlobWith(placeholder, "", "") }

// PutBlobWith is PutBlob with one more column of a dialect's own, col,
// written from the expression val on insert and on update ("": none).
func PutBlobWith(placeholder func(n int) string, col, val string) string {
	var cols, vals string
	if col != "" {
		cols, vals = ", "+col, ", "+val
	}
	return `INSERT INTO blobs (` + BlobCols + cols + `)
		VALUES (` + Placeholders(placeholder, blobColCount) + vals + `)
		` + PutBlobConflict(col)
}

// PutBlobConflict is PutBlobWith's ON CONFLICT clause: every column of the
// row but its key set from the proposed row (and col, unless "").
func PutBlobConflict(col string) string {
	var set string
	if col != "" {
		set = ", " + col + " = excluded." + col
	}
	return `ON CONFLICT (account, container, name) DO UPDATE SET
			blob_type = excluded.blob_type, etag = excluded.etag, created = excluded.created,
			last_modified = excluded.last_modified, size = excluded.size,
			content_type = excluded.content_type, content_encoding = excluded.content_encoding,
			content_language = excluded.content_language, content_disposition = excluded.content_disposition,
			cache_control = excluded.cache_control, content_md5 = excluded.content_md5,
			metadata = excluded.metadata, extents = excluded.extents, block_count = excluded.block_count,
			lease_id = excluded.lease_id, lease_state = excluded.lease_state,
			lease_duration = excluded.lease_duration, lease_expires = excluded.lease_expires,
			lease_break_at = excluded.lease_break_at, lease_since = excluded.lease_since,
			access_tier = excluded.access_tier, tags = excluded.tags, copy_info = excluded.copy_info, sealed = excluded.sealed,
			version_id = excluded.version_id, sequence_number = excluded.sequence_number` + set
}

// SetBlobLease is Tx.SetBlobLease's statement: the lease columns of one
// blob row ($1..$3 the name, $4..$9 the lease as BlobValues has it). The
// placeholders must be numbered.
func SetBlobLease(placeholder func(n int) string) string {
	return setBlobColumns(placeholder, blobLeaseCols)
}

// blobLeaseCols are the lease columns, in BlobCols order.
var blobLeaseCols = []string{"lease_id", "lease_state", "lease_duration", "lease_expires", "lease_break_at", "lease_since"}

// setBlobColumns is the UPDATE of cols of one blob row: $1..$3 the name,
// $4.. the columns in cols' order. The placeholders must be numbered.
func setBlobColumns(placeholder func(n int) string, cols []string) string {
	var b strings.Builder
	b.WriteString("UPDATE blobs SET ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = " + placeholder(4+i))
	}
	b.WriteString(" WHERE account = " + placeholder(1) + " AND container = " + placeholder(2) + " AND name = " + placeholder(3))
	return b.String()
}

// blobAttrCols are the columns a plain Set Blob Metadata or Set Blob
// Properties changes (leasedb.ReplaceWrite.Attrs): ETag, Last-Modified,
// the content properties, the metadata, the lease (the write's lease
// check may end an expired one) and the copy (Set Blob Properties clears
// it). The type, creation time, size, extents, block count, tier, tags,
// seal, version id and sequence number stay.
var blobAttrCols = []string{"etag", "last_modified", "content_type", "content_encoding", "content_language",
	"content_disposition", "cache_control", "content_md5", "metadata", "lease_id", "lease_state", "lease_duration",
	"lease_expires", "lease_break_at", "lease_since", "copy_info"}

// BlobAttrValues are the positions in BlobValues (BlobCols order) of
// SetBlobAttrs' parameters: account, container and name, then
// blobAttrCols.
var BlobAttrValues = func() []int {
	pos := map[string]int{}
	for i, c := range strings.Split(BlobCols, ",") {
		pos[strings.TrimSpace(c)] = i
	}
	out := []int{pos["account"], pos["container"], pos["name"]}
	for _, c := range blobAttrCols {
		out = append(out, pos[c])
	}
	return out
}()

// SetBlobAttrs is the UPDATE of blobAttrCols of one blob row ($1..$3 the
// name, $4.. the columns in blobAttrCols order: the values of BlobValues
// at BlobAttrValues). The placeholders must be numbered.
func SetBlobAttrs(placeholder func(n int) string) string {
	return setBlobColumns(placeholder, blobAttrCols)
}

// SetBlobTags is Tx.SetBlobTags' statement: the tags ($4, as
// EncodeTierTags stores them) and the lease columns ($5..$10 as BlobValues
// has them) of one blob row ($1..$3 the name). The placeholders must be
// numbered.
func SetBlobTags(placeholder func(n int) string) string {
	return setBlobColumns(placeholder, append([]string{"tags"}, blobLeaseCols...))
}

// SetBlobTier is Tx.SetBlobTier's statement: the access tier ($4, as
// EncodeTierTags stores it: NULL for none) of one blob row ($1..$3 the
// name). The placeholders must be numbered.
func SetBlobTier(placeholder func(n int) string) string {
	return setBlobColumns(placeholder, []string{"access_tier"})
}

// VersionCols are the columns of a version row: BlobCols (version_id,
// part of the key, among them).
const VersionCols = BlobCols

// PutVersion is Tx.PutVersion's statement: an upsert of the values of
// BlobValues; an existing version id of the name has its tier and tags
// replaced (the only columns of a version that change: Set Blob Tier and
// Set Blob Tags with versionid).
func PutVersion(placeholder func(n int) string) string {
	return `INSERT INTO versions (` + VersionCols + `)
		VALUES (` + Placeholders(placeholder, blobColCount) + `)
		ON CONFLICT (account, container, name, version_id) DO UPDATE SET
			access_tier = excluded.access_tier, tags = excluded.tags`
}

// PutSnapshot is Tx.PutSnapshot's statement: the values of BlobValues and
// the snapshot id; an existing snapshot id inserts nothing (no row
// affected).
func PutSnapshot(placeholder func(n int) string) string {
	return `INSERT INTO snapshots (` + SnapshotCols + `)
		VALUES (` + Placeholders(placeholder, blobColCount+1) + `)
		ON CONFLICT (account, container, name, snapshot) DO NOTHING`
}

// blobColCount is the number of BlobCols.
var blobColCount = strings.Count(BlobCols, ",") + 1

// NameRange returns "name <range> ORDER BY name [LIMIT p]" and its
// arguments: names with prefix and > after, the parameters numbered from
// first. The prefix becomes a range [prefix, PrefixEnd(prefix)) on the
// primary key (byte order in both dialects), so there is no LIKE and no
// escaping of % or _.
func NameRange(placeholder func(n int) string, first int, prefix, after string, limit int) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return placeholder(first + len(args) - 1)
	}
	if after >= prefix {
		b.WriteString("name > " + arg(after))
	} else {
		b.WriteString("name >= " + arg(prefix))
	}
	if end, ok := PrefixEnd(prefix); ok {
		b.WriteString(" AND name < " + arg(end))
	}
	b.WriteString(" ORDER BY name")
	if limit > 0 {
		b.WriteString(" LIMIT " + arg(limit))
	}
	return b.String(), args
}

// NameRows is Tx.NameRows' query (1: account, 2: container, 3: name), in
// ListEntries' row shape (ScanItems): the name's snapshots, then its
// previous versions, with its soft-deleted rows among them (a
// soft-deleted row keeps its extents like a snapshot: DeletedTime set).
func NameRows(placeholder func(n int) string) string {
	where := ` WHERE account = ` + placeholder(1) + ` AND container = ` + placeholder(2) + ` AND name = ` + placeholder(3)
	return `SELECT * FROM (
	SELECT ` + SnapshotCols + `, ` + strconv.Itoa(KindSnapshot) + ` AS kind FROM snapshots` + where + `
	UNION ALL
	SELECT ` + BlobCols + `, ` + versionSortCol + `, ` + strconv.Itoa(KindVersion) + ` FROM versions` + where + `
	UNION ALL
	SELECT ` + BlobCols + `, ` + deletedSortCol + `, ` + deletedKind + ` FROM deleted_blobs` + where + `
) AS r ORDER BY kind, snapshot`
}

// NameRowBlobs turns the items of a NameRows query into its rows.
func NameRowBlobs(items []leasedb.ListItem) []*leasedb.Blob {
	out := make([]*leasedb.Blob, len(items))
	for i, it := range items {
		out[i] = it.Blob
	}
	return out
}
