package postgres

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// scanOneBlob is sqlq.ScanOneBlob for the row of a sqlq.OneBlob statement
// (ReadBlob, LockBlob) or of lockForReplaceSQL, decoded from the column
// bytes as pgx received them (rows.RawValues) instead of through
// rows.Scan. sqlq.ScanOneBlob scans the row twice (once to learn whether
// the blob was found, once into the blob row), and pgx builds a scan plan
// for every column at each Scan of new Rows: on the path of every small
// Get Blob, Put Blob and Lease Blob that was about 60 plans and
// allocations to read one row. ref is the name the statement read: a
// column equal to its account, container or name reuses its string.
// extra are the destinations of the columns after the container check:
// *time.Time, *int, *int64 or *bool.
//
// A column in a form not decoded here (the text format, as with
// default_query_exec_mode=simple_protocol, an unexpected type, a NULL
// where the blob row has none, an infinite timestamp) sends the row
// through sqlq.ScanOneBlob, with the same result and errors as before.
func scanOneBlob(rows pgx.Rows, ref leasedb.BlobRef, extra ...any) (*leasedb.Blob, bool, error) {
	b, found, _, err := scanOneBlobRead(rows, ref, nil, extra...)
	return b, found, err
}

// replaceRead is LockForReplace's leasedb.ReplaceRead and where its scan
// puts the account's settings (extra columns, read before the blob's).
type replaceRead struct {
	read             leasedb.ReplaceRead
	versioning, days *int
}

// data is read.Data for the settings scanned (nil: the row whole).
func (r *replaceRead) data(versionID string) bool {
	return r == nil || r.read.Data(leasedb.AccountSettings{Versioning: *r.versioning != 0, DeleteRetentionDays: *r.days}, versionID)
}

// scanOneBlobRead is scanOneBlob where rd (when not nil) may have the
// row's extents read without their inline bytes: then they are decoded
// from the column bytes as received (leasedb.DecodeExtentsNoData), with
// no copy of the text and no base64 decoded, and noData is true.
func scanOneBlobRead(rows pgx.Rows, ref leasedb.BlobRef, rd *replaceRead, extra ...any) (b *leasedb.Blob, found, noData bool, err error) {
	if !rows.Next() {
		b, found, err = sqlq.ScanOneBlob(rows, fromTS, skipColumn, extra...)
		return b, found, false, err
	}
	r := rawRow{fds: rows.FieldDescriptions(), raw: rows.RawValues(), ok: true}
	if len(r.fds) != len(r.raw) || len(r.raw) != blobColCount+2+len(extra) {
		return scanOneBlobReadGeneric(rows, ref, rd, extra)
	}
	found, containerExists := r.bool(blobColCount), r.bool(blobColCount+1)
	for i, d := range extra {
		col := blobColCount + 2 + i
		switch d := d.(type) {
		case *time.Time:
			*d = r.time(col)
		case *int:
			*d = int(r.int(col))
		case *int64:
			*d = r.int(col)
		case *bool:
			*d = r.bool(col)
		default:
			r.ok = false
		}
	}
	if !r.ok {
		return scanOneBlobReadGeneric(rows, ref, rd, extra)
	}
	if !found {
		return nil, containerExists, false, nil
	}
	b = &leasedb.Blob{
		Account: r.textLike(0, ref.Account), Container: r.textLike(1, ref.Container), Name: r.textLike(2, ref.Name),
		Type: r.text(3), ETag: r.text(4), Created: r.time(5), LastModified: r.time(6), Size: r.int(7),
		Props: leasedb.Props{ContentType: r.text(8), ContentEncoding: r.text(9), ContentLanguage: r.text(10),
			ContentDisposition: r.text(11), CacheControl: r.text(12), ContentMD5: r.bytes(13)},
		BlockCount: int(r.int(16)),
		Lease: leasedb.Lease{ID: r.text(17), State: r.text(18), Duration: int(r.int(19)),
			Expires: r.time(20), BreakAt: r.time(21), Since: r.time(22)},
		AccessTier: r.nullText(23).String, Sealed: r.int(26) != 0, VersionID: r.text(27), SequenceNumber: r.int(28),
	}
	noData = !rd.data(b.VersionID)
	var ext string
	switch {
	case r.raw[15] == nil && noData:
		// Not sent (lockForReplaceSQL's extentsUnlessPlainSQL): the
		// extents have no key, and a plain write keeps nothing of them.
		ext = "[]"
	case r.raw[15] == nil:
		return nil, false, false, errExtentsUnsent(ref)
	case noData:
		// A view of pgx's buffer: DecodeExtentsNoData copies what it
		// keeps.
		if r.is(15, true, pgtype.TextOID, pgtype.VarcharOID) && len(r.raw[15]) > 0 {
			ext = unsafe.String(&r.raw[15][0], len(r.raw[15]))
		}
	default:
		ext = r.text(15)
	}
	meta, tags, copyInfo := r.text(14), r.nullText(24), r.text(25)
	if !r.ok {
		return scanOneBlobReadGeneric(rows, ref, rd, extra)
	}
	// As sqlq's blob row decoder.
	if b.Tags, err = sqlq.DecodeTags(tags); err != nil {
		return nil, false, false, err
	}
	if b.Metadata, err = leasedb.DecodeMetadata(meta); err != nil {
		return nil, false, false, err
	}
	if noData {
		b.Extents, err = leasedb.DecodeExtentsNoData(ext)
	} else {
		b.Extents, err = leasedb.DecodeExtents(ext)
	}
	if err != nil {
		return nil, false, false, err
	}
	if b.Copy, err = leasedb.DecodeCopy(copyInfo); err != nil {
		return nil, false, false, err
	}
	return b, containerExists, noData, nil
}

// blobColCount is the number of columns of sqlq.BlobCols.
const blobColCount = 29

// scanOneBlobReadGeneric is scanOneBlobRead's row through
// sqlq.ScanOneBlob on the row rows is positioned on (a row in another
// form: the simple protocol's text), the extents lockForReplaceSQL did not send read as none (noData).
func scanOneBlobReadGeneric(rows pgx.Rows, ref leasedb.BlobRef, rd *replaceRead, extra []any) (*leasedb.Blob, bool, bool, error) {
	raw := rows.RawValues()
	unsent := len(raw) > 15 && raw[15] == nil
	b, found, err := sqlq.ScanOneBlob(&positioned{Rows: rows, unsentExtents: unsent}, fromTS, skipColumn, extra...)
	if err != nil || b == nil || !unsent {
		return b, found, false, err
	}
	if rd.data(b.VersionID) {
		return nil, false, false, errExtentsUnsent(ref)
	}
	return b, found, true, nil
}

// errExtentsUnsent is scanOneBlobRead's error when lockForReplaceSQL
// judged the write plain (extentsUnlessPlainSQL) and the read does not:
// the row is not to be kept without its extents.
func errExtentsUnsent(ref leasedb.BlobRef) error {
	return fmt.Errorf("leasedb/postgres: lock for replace %s: the row's extents were not read", ref)
}

// positioned is rows positioned on their current row, offered once more.
// With unsentExtents the row's extents are NULL (not sent: see
// scanOneBlobReadGeneric), and a string scanned from them is "[]" (none).
type positioned struct {
	pgx.Rows
	done          bool
	unsentExtents bool
}

func (p *positioned) Scan(dest ...any) error {
	if !p.unsentExtents || len(dest) <= 15 {
		return p.Rows.Scan(dest...)
	}
	if s, ok := dest[15].(*string); ok {
		*s = "[]"
		dest = append(dest[:15:15], append([]any{skipColumn()}, dest[16:]...)...)
	}
	return p.Rows.Scan(dest...)
}

func (p *positioned) Next() bool {
	if p.done {
		return false
	}
	p.done = true
	return true
}

// rawRow decodes the columns of one row in the binary format pgx asks
// for them in (text columns: their bytes in either format). ok turns
// false at the first column that is in another form.
type rawRow struct {
	fds []pgconn.FieldDescription
	raw [][]byte
	ok  bool
}

// is reports whether column i is non-NULL, of one of the types oids and,
// unless any is set, in the binary format.
func (r *rawRow) is(i int, anyFormat bool, oids ...uint32) bool {
	if r.raw[i] == nil || (!anyFormat && r.fds[i].Format != pgtype.BinaryFormatCode) {
		r.ok = false
		return false
	}
	for _, oid := range oids {
		if r.fds[i].DataTypeOID == oid {
			return true
		}
	}
	r.ok = false
	return false
}

func (r *rawRow) text(i int) string {
	if !r.is(i, true, pgtype.TextOID, pgtype.VarcharOID) {
		return ""
	}
	return intern(r.raw[i])
}

// textLike is text, with like's string when the column holds it.
func (r *rawRow) textLike(i int, like string) string {
	if r.is(i, true, pgtype.TextOID, pgtype.VarcharOID) && string(r.raw[i]) == like {
		return like
	}
	return r.text(i)
}

func (r *rawRow) nullText(i int) sql.NullString {
	if r.raw[i] == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: r.text(i), Valid: true}
}

func (r *rawRow) int(i int) int64 {
	if !r.is(i, false, pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID) {
		return 0
	}
	v := r.raw[i]
	switch {
	case r.fds[i].DataTypeOID == pgtype.Int8OID && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v))
	case r.fds[i].DataTypeOID == pgtype.Int4OID && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v)))
	case r.fds[i].DataTypeOID == pgtype.Int2OID && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v)))
	}
	r.ok = false
	return 0
}

func (r *rawRow) bool(i int) bool {
	if !r.is(i, false, pgtype.BoolOID) || len(r.raw[i]) != 1 {
		r.ok = false
		return false
	}
	return r.raw[i][0] != 0
}

// microsecFromUnixEpochToY2K is where Postgres's binary timestamps count
// from (2000-01-01 UTC), in microseconds after the Unix epoch.
const microsecFromUnixEpochToY2K = 946684800 * 1000000

// time decodes a timestamptz as pgx does (NULL: the zero time, as fromTS),
// in UTC.
func (r *rawRow) time(i int) time.Time {
	if r.raw[i] == nil {
		return time.Time{}
	}
	if !r.is(i, false, pgtype.TimestamptzOID) || len(r.raw[i]) != 8 {
		r.ok = false
		return time.Time{}
	}
	us := int64(binary.BigEndian.Uint64(r.raw[i]))
	if us == math.MaxInt64 || us == math.MinInt64 { // infinity
		r.ok = false
		return time.Time{}
	}
	return time.Unix(microsecFromUnixEpochToY2K/1000000+us/1000000,
		(microsecFromUnixEpochToY2K%1000000*1000)+(us%1000000*1000)).UTC()
}

// bytes decodes a bytea (NULL: nil; empty: empty, not nil, as pgx).
func (r *rawRow) bytes(i int) []byte {
	if r.raw[i] == nil {
		return nil
	}
	if !r.is(i, false, pgtype.ByteaOID) {
		return nil
	}
	return append(make([]byte, 0, len(r.raw[i])), r.raw[i]...)
}

// intern is string(b) without an allocation for the values most rows
// hold (a string's bytes must be copied: pgx reuses its read buffer).
func intern(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case "{}":
		return "{}"
	case "[]":
		return "[]"
	case "BlockBlob":
		return "BlockBlob"
	case "AppendBlob":
		return "AppendBlob"
	case "PageBlob":
		return "PageBlob"
	case "available":
		return "available"
	case "leased":
		return "leased"
	case "expired":
		return "expired"
	case "breaking":
		return "breaking"
	case "broken":
		return "broken"
	case "application/octet-stream":
		return "application/octet-stream"
	case "Hot":
		return "Hot"
	case "Cool":
		return "Cool"
	case "Cold":
		return "Cold"
	case "Archive":
		return "Archive"
	}
	return string(b)
}
