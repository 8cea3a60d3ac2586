package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// dialect is Postgres's for the queries sqlq builds.
var dialect = sqlq.Dialect{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }, Strpos: "strpos"}

// ListDelimited implements leasedb.Tx: one query, a recursive walk that
// seeks past each prefix (see sqlq.ListDelimited, and
// sqlq.ListDelimitedBatched for a listing of committed blobs alone), then
// the entries of the names it found, read by key.
func (t *tx) ListDelimited(ctx context.Context, account, container, prefix, delimiter, after string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	if err := checkText(account, container, prefix, delimiter, after); err != nil {
		return nil, err
	}
	if limit <= 0 || delimiter == "" {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: limit %d, delimiter %q", account, container, limit, delimiter)
	}
	var q string
	var args []any
	if inc == (leasedb.ListInclude{}) {
		// Committed blobs alone: the walk that reads several names per
		// seek (a seek costs Postgres a dozen rows or more).
		q, args = sqlq.ListDelimitedBatched(dialect.Placeholder, account, container, prefix, delimiter, after, limit)
	} else {
		q, args = sqlq.ListDelimited(dialect, account, container, prefix, delimiter, after, limit, inc)
	}
	rows, err := t.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: %w", account, container, sqlq.CtxErr(ctx, err))
	}
	defer rows.Close()
	out, err := sqlq.ScanItemsPeek(rows, fromTS, func() (string, bool, error) { return peekPrefix(rows) })
	if err != nil {
		return nil, fmt.Errorf("leasedb/postgres: list delimited %s/%s: %w", account, container, sqlq.CtxErr(ctx, err))
	}
	return out, nil
}

// peekPrefix reads the current row of a ListDelimited result as received
// (the kind is its last column, the name its third) and says whether it
// is a BlobPrefix row, and its name: such a row needs no scan of its
// placeholder columns, which cost about as much as the rest of a page of
// prefixes on the client.
func peekPrefix(rows pgx.Rows) (string, bool, error) {
	raw, fields := rows.RawValues(), rows.FieldDescriptions()
	k := len(raw) - 1
	if k < 2 || len(fields) != len(raw) || raw[k] == nil {
		return "", false, nil
	}
	var kind int64
	switch {
	case fields[k].Format == pgx.BinaryFormatCode && fields[k].DataTypeOID == pgtype.Int4OID && len(raw[k]) == 4:
		kind = int64(int32(binary.BigEndian.Uint32(raw[k])))
	case fields[k].Format == pgx.TextFormatCode:
		v, err := strconv.ParseInt(string(raw[k]), 10, 64)
		if err != nil {
			return "", false, nil
		}
		kind = v
	default:
		// Not a form this reads: scan the row as a whole.
		return "", false, nil
	}
	if kind != sqlq.KindPrefix {
		return "", false, nil
	}
	// text is sent as its UTF-8 bytes in either format.
	if oid := fields[2].DataTypeOID; oid != pgtype.TextOID && oid != pgtype.VarcharOID {
		return "", false, nil
	}
	return string(raw[2]), true, nil
}
