package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// OneBlobRead is what a one-row blob read returned: the blob, the
// container check and the columns after it.
type OneBlobRead struct {
	Blob            *leasedb.Blob
	ContainerExists bool
	Extra           []any
}

// BlobColCount is scanOneBlob's count of sqlq.BlobCols, and BlobCols
// their names, for the test that they agree.
var (
	BlobColCount = blobColCount
	BlobCols     = strings.Fields(strings.ReplaceAll(sqlq.BlobCols, ",", " "))
)

// ReadOneBlobBothWays runs ReadBlob's statement (forReplace: LockForReplace's,
// on the pool) on ref twice, its row decoded once by scanOneBlob and once
// by sqlq.ScanOneBlob.
func ReadOneBlobBothWays(ctx context.Context, s *Store, ref leasedb.BlobRef, forReplace bool) (raw, generic OneBlobRead, err error) {
	q, args := readBlobSQL, []any{ref.Account, ref.Container, ref.Name}
	extra := func() []any { return []any{new(time.Time)} }
	if forReplace {
		q = lockForReplaceSQL
		args = append(args, nameLockKey(ref.Account, ref.Container, ref.Name), containerLockKey(ref.Account, ref.Container))
		extra = func() []any { return []any{new(time.Time), new(int), new(int), new(int64), new(int)} }
	}
	read := func(scan func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error)) (OneBlobRead, error) {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return OneBlobRead{}, err
		}
		defer rows.Close()
		r := OneBlobRead{Extra: extra()}
		if r.Blob, r.ContainerExists, err = scan(rows, r.Extra); err != nil {
			return OneBlobRead{}, err
		}
		rows.Close()
		return r, rows.Err()
	}
	raw, err = read(func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error) {
		return scanOneBlob(rows, ref, extra...)
	})
	if err != nil {
		return raw, generic, err
	}
	generic, err = read(func(rows pgx.Rows, extra []any) (*leasedb.Blob, bool, error) {
		return sqlq.ScanOneBlob(rows, fromTS, skipColumn, extra...)
	})
	return raw, generic, err
}

// EncodeCommitArgsBothWays encodes CommitReplace's arguments for a write
// of b (with the same values after the row's columns) as CommitReplace
// does (commitArgs) and as sqlq.BlobValues gives the row, through pgx's
// query builder with the statement's parameter types as the server
// describes them: the bytes and formats of each parameter.
func EncodeCommitArgsBothWays(ctx context.Context, s *Store, b *leasedb.Blob) (typed, boxed [][]byte, typedFormats, boxedFormats []int16, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "", commitReplaceSQL)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	due := time.Date(2026, 12, 1, 1, 2, 3, 4000, time.UTC)
	etag := `"0x1"`
	a := &commitArgs{freeDue: due, stagedDue: due}
	if err := a.setRow(b); err != nil {
		return nil, nil, nil, nil, err
	}
	tail := []any{[]string{"i"}, []string{}, dueTS(due), dueTS(due), etag, true, false, []string{"k"}}
	copy(a.vals[blobColCount:], []any{[]string{"i"}, []string{}, dueArg{&a.freeDue}, dueArg{&a.stagedDue}, nullTextArg{&etag}, true, false, []string{"k"}})
	vals, err := sqlq.BlobValues(b, ts)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	build := func(args []any) ([][]byte, []int16, error) {
		var eqb pgx.ExtendedQueryBuilder
		if err := eqb.Build(conn.Conn().TypeMap(), sd, args); err != nil {
			return nil, nil, err
		}
		out := make([][]byte, len(eqb.ParamValues))
		for i, v := range eqb.ParamValues {
			if v != nil {
				out[i] = append([]byte{}, v...)
			}
		}
		return out, append([]int16{}, eqb.ParamFormats...), nil
	}
	if typed, typedFormats, err = build(a.vals[:]); err != nil {
		return nil, nil, nil, nil, err
	}
	boxed, boxedFormats, err = build(append(vals, tail...))
	return typed, boxed, typedFormats, boxedFormats, err
}

// EncodeCommitArgsPaired is EncodeCommitArgsBothWays's typed arguments as
// the pair sender encodes them (pairConn.encode, extents appended in
// place).
func EncodeCommitArgsPaired(ctx context.Context, s *Store, b *leasedb.Blob) (params [][]byte, formats []int16, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "", commitReplaceSQL)
	if err != nil {
		return nil, nil, err
	}
	due := time.Date(2026, 12, 1, 1, 2, 3, 4000, time.UTC)
	etag := `"0x1"`
	a := &commitArgs{freeDue: due, stagedDue: due}
	if err := a.setRow(b); err != nil {
		return nil, nil, err
	}
	copy(a.vals[blobColCount:], []any{[]string{"i"}, []string{}, dueArg{&a.freeDue}, dueArg{&a.stagedDue}, nullTextArg{&etag}, true, false, []string{"k"}})
	p := &pairConn{conn: conn.Conn()}
	if err := p.encode(&pairStmt{sd: sd}, a.vals[:]); err != nil {
		return nil, nil, err
	}
	for _, v := range p.params {
		if v != nil {
			v = append([]byte{}, v...)
		}
		params = append(params, v)
	}
	return params, append([]int16{}, p.formats...), nil
}
