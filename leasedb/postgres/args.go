package postgres

import (
	sqldriver "database/sql/driver"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// Arguments that pgx encodes without a heap allocation of their own. A
// string, time, []byte or pgtype.Timestamptz passed to pgx as an `any` is
// copied to the heap to be boxed; these hold one pointer (which an
// interface holds as is) to the value, and implement the pgtype valuer of
// their column's type, so pgx encodes the value they point to. The 29
// columns of a blob row cost CommitReplace about 25 allocations that way
// (blobArgs).
type (
	// textArg is a text value.
	textArg struct{ p *string }
	// nullTextArg is a text value, "" as NULL.
	nullTextArg struct{ p *string }
	// timeArg is a timestamptz as ts stores it: the zero time as NULL.
	timeArg struct{ p *time.Time }
	// dueArg is a timestamptz as dueTS stores it.
	dueArg struct{ p *time.Time }
	// int64Arg and intArg are integers (bigint or integer columns).
	int64Arg struct{ p *int64 }
	intArg   struct{ p *int }
	// flagArg is a flag stored as 0 or 1 (sqlq.BoolInt).
	flagArg struct{ p *bool }
	// bytesArg is a bytea, nil as NULL.
	bytesArg struct{ p *[]byte }
	// extentsArg is a row's extents as their text (EncodeExtents's),
	// which pairConn.encode appends straight into its parameter buffer
	// (leasedb.AppendExtents): a 4 KiB inline extent's 5.5 KB text is
	// then never a string of its own. pgx (a batch in another query
	// mode) takes it as a text valuer.
	extentsArg struct{ p *[]leasedb.Extent }
)

func (a extentsArg) TextValue() (pgtype.Text, error) {
	s, err := leasedb.EncodeExtents(*a.p)
	return pgtype.Text{String: s, Valid: err == nil}, err
}

func (a textArg) TextValue() (pgtype.Text, error) { return pgtype.Text{String: *a.p, Valid: true}, nil }

func (a nullTextArg) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: *a.p, Valid: *a.p != ""}, nil
}

func (a timeArg) TimestamptzValue() (pgtype.Timestamptz, error) {
	if a.p.IsZero() {
		return pgtype.Timestamptz{}, nil
	}
	return dueTS(*a.p), nil
}

func (a dueArg) TimestamptzValue() (pgtype.Timestamptz, error) { return dueTS(*a.p), nil }

func (a int64Arg) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: *a.p, Valid: true}, nil
}

func (a intArg) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*a.p), Valid: true}, nil
}

func (a flagArg) Int64Value() (pgtype.Int8, error) {
	var v int64
	if *a.p {
		v = 1
	}
	return pgtype.Int8{Int64: v, Valid: true}, nil
}

func (a bytesArg) BytesValue() ([]byte, error) { return *a.p, nil }

// commitArgs holds the arguments of CommitReplace's statement: the row's
// columns in sqlq.BlobCols order (the values sqlq.BlobValues gives, the
// same on the wire) in vals[:blobColCount], the statement's own after
// them. The values the arguments point to that are not the row's are kept
// in it, so that one allocation holds them all.
type commitArgs struct {
	meta, tags, copyInfo string
	freeDue, stagedDue   time.Time
	vals                 [commitReplaceArgs]any
}

// commitAttrsArgs is the number of commitAttrsSQL's parameters.
const commitAttrsArgs = 20

// setAttrs puts commitAttrsSQL's arguments in a.vals[:commitAttrsArgs]
// once setRow put the row's there: the row's columns at
// sqlq.BlobAttrValues, then etag (the ETag LockForReplace read).
func (a *commitArgs) setAttrs(etag *string) {
	var attrs [commitAttrsArgs]any
	for i, j := range sqlq.BlobAttrValues {
		attrs[i] = a.vals[j]
	}
	attrs[len(sqlq.BlobAttrValues)] = textArg{etag}
	copy(a.vals[:], attrs[:])
}

func init() {
	if len(sqlq.BlobAttrValues)+1 != commitAttrsArgs {
		panic("leasedb/postgres: commitAttrsArgs is not sqlq.BlobAttrValues and the ETag")
	}
}

// commitReplaceArgs is the number of commitReplaceSQL's parameters.
const commitReplaceArgs = blobColCount + 9

// setRow encodes b's columns in a.vals[:blobColCount]. a.vals point into
// b, which must not change until the statement was sent.
func (a *commitArgs) setRow(b *leasedb.Blob) error {
	var err error
	if a.meta, err = leasedb.EncodeMetadata(b.Metadata); err != nil {
		return err
	}
	// The tags as sqlq stores them (NULL for none: never "").
	_, tags, err := sqlq.EncodeTierTags(b)
	if err != nil {
		return err
	}
	a.tags, _ = tags.(string)
	if a.copyInfo, err = leasedb.EncodeCopy(b.Copy); err != nil {
		return err
	}
	v := &a.vals
	v[0], v[1], v[2], v[3], v[4] = textArg{&b.Account}, textArg{&b.Container}, textArg{&b.Name}, textArg{&b.Type}, textArg{&b.ETag}
	v[5], v[6], v[7] = timeArg{&b.Created}, timeArg{&b.LastModified}, int64Arg{&b.Size}
	p := &b.Props
	v[8], v[9], v[10], v[11], v[12] = textArg{&p.ContentType}, textArg{&p.ContentEncoding}, textArg{&p.ContentLanguage}, textArg{&p.ContentDisposition}, textArg{&p.CacheControl}
	v[13], v[14], v[15], v[16] = bytesArg{&p.ContentMD5}, textArg{&a.meta}, extentsArg{&b.Extents}, intArg{&b.BlockCount}
	l := &b.Lease
	v[17], v[18], v[19] = textArg{&l.ID}, textArg{&l.State}, intArg{&l.Duration}
	v[20], v[21], v[22] = timeArg{&l.Expires}, timeArg{&l.BreakAt}, timeArg{&l.Since}
	v[23], v[24], v[25], v[26] = nullTextArg{&b.AccessTier}, nullTextArg{&a.tags}, textArg{&a.copyInfo}, flagArg{&b.Sealed}
	v[27], v[28] = textArg{&b.VersionID}, int64Arg{&b.SequenceNumber}
	return nil
}

// noKeys is the empty text[] (an empty, not a nil, slice: pgx sends a nil
// one as NULL).
var noKeys = []string{}

// nonNil is keys, or noKeys when nil.
func nonNil(keys []string) []string {
	if keys == nil {
		return noKeys
	}
	return keys
}

// Value methods (database/sql/driver.Valuer) for the simple protocol
// (default_query_exec_mode=simple_protocol in the DSN, as for a
// transaction-pooling proxy): there pgx knows no parameter's type and
// finds none for these structs, so it encodes what Value gives, the same
// values the typed methods give.
func (a textArg) Value() (sqldriver.Value, error)     { return *a.p, nil }
func (a extentsArg) Value() (sqldriver.Value, error)  { v, err := a.TextValue(); return v.String, err }
func (a nullTextArg) Value() (sqldriver.Value, error) { v, _ := a.TextValue(); return v.Value() }
func (a timeArg) Value() (sqldriver.Value, error)     { v, _ := a.TimestamptzValue(); return v.Value() }
func (a dueArg) Value() (sqldriver.Value, error)      { v, _ := a.TimestamptzValue(); return v.Value() }
func (a int64Arg) Value() (sqldriver.Value, error)    { return *a.p, nil }
func (a intArg) Value() (sqldriver.Value, error)      { return int64(*a.p), nil }
func (a flagArg) Value() (sqldriver.Value, error)     { v, _ := a.Int64Value(); return v.Int64, nil }
func (a bytesArg) Value() (sqldriver.Value, error) {
	if *a.p == nil {
		return nil, nil
	}
	return *a.p, nil
}
