package sqlq

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// Rows is what both drivers' result sets offer (pgx.Rows, *sql.Rows); the
// caller closes them, as their Close methods differ.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// The two dialects store times differently (SQLite: INTEGER microseconds
// since the Unix epoch; Postgres: timestamptz), so the row codec takes
// them from the driver: T is the driver's scan destination for a nullable
// time column and fromTime decodes it (NULL is the zero time); toTime
// encodes a time as the driver's parameter (the zero time as NULL).
// Everything else is scanned and bound the same way by both: text as
// string or sql.NullString, bytes as []byte, flags as 0 or 1.

// blobRow holds one row of BlobCols as scanned, before decoding: the
// listing scanner decodes only the rows it returns as blobs.
type blobRow[T any] struct {
	b                            leasedb.Blob
	created, lm, exp, brk, since T
	meta, ext, copyInfo          string
	sealed                       int
	tier, tags                   sql.NullString
}

// dest is the scan destinations of BlobCols.
func (r *blobRow[T]) dest() []any {
	b := &r.b
	return []any{&b.Account, &b.Container, &b.Name, &b.Type, &b.ETag, &r.created, &r.lm, &b.Size,
		&b.Props.ContentType, &b.Props.ContentEncoding, &b.Props.ContentLanguage, &b.Props.ContentDisposition,
		&b.Props.CacheControl, &b.Props.ContentMD5, &r.meta, &r.ext, &b.BlockCount,
		&b.Lease.ID, &b.Lease.State, &b.Lease.Duration, &r.exp, &r.brk, &r.since, &r.tier, &r.tags, &r.copyInfo, &r.sealed, &b.VersionID, &b.SequenceNumber}
}

// decode turns the scanned columns into the blob.
func (r *blobRow[T]) decode(fromTime func(T) time.Time) (*leasedb.Blob, error) {
	b, err := r.decodeBut(fromTime)
	if err != nil {
		return nil, err
	}
	if b.Extents, err = leasedb.DecodeExtents(r.ext); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeBut is decode but for the extents, left to the caller (r.ext).
func (r *blobRow[T]) decodeBut(fromTime func(T) time.Time) (*leasedb.Blob, error) {
	b := &r.b
	var err error
	b.Sealed = r.sealed != 0
	b.AccessTier = r.tier.String
	if b.Tags, err = DecodeTags(r.tags); err != nil {
		return nil, err
	}
	if b.Metadata, err = leasedb.DecodeMetadata(r.meta); err != nil {
		return nil, err
	}
	if b.Copy, err = leasedb.DecodeCopy(r.copyInfo); err != nil {
		return nil, err
	}
	b.Created, b.LastModified = fromTime(r.created), fromTime(r.lm)
	b.Lease.Expires, b.Lease.BreakAt, b.Lease.Since = fromTime(r.exp), fromTime(r.brk), fromTime(r.since)
	return b, nil
}

// ScanBlobs reads rows of BlobCols followed by the columns extra (when not
// nil) returns the scan destinations of, for each row's blob.
func ScanBlobs[T any](rows Rows, fromTime func(T) time.Time, extra func(b *leasedb.Blob) []any) ([]*leasedb.Blob, error) {
	var out []*leasedb.Blob
	for rows.Next() {
		r := &blobRow[T]{}
		dest := r.dest()
		if extra != nil {
			dest = append(dest, extra(&r.b)...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		b, err := r.decode(fromTime)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// ScanBlobText reads the first row of BlobCols (nil when there is none)
// with its extents left undecoded: ext is the column's text, for the
// caller to decode (DecodeExtents, or DecodeExtentsNoData where the row's
// inline bytes are never read).
func ScanBlobText[T any](rows Rows, fromTime func(T) time.Time) (b *leasedb.Blob, ext string, err error) {
	if !rows.Next() {
		return nil, "", rows.Err()
	}
	r := &blobRow[T]{}
	if err := rows.Scan(r.dest()...); err != nil {
		return nil, "", err
	}
	if b, err = r.decodeBut(fromTime); err != nil {
		return nil, "", err
	}
	return b, r.ext, nil
}

// ScanVersions reads rows of VersionCols: previous versions.
func ScanVersions[T any](rows Rows, fromTime func(T) time.Time) ([]*leasedb.Blob, error) {
	bs, err := ScanBlobs(rows, fromTime, nil)
	for _, b := range bs {
		b.NonCurrent = true
	}
	return bs, err
}

// ScanSnapshots reads rows of SnapshotCols.
func ScanSnapshots[T any](rows Rows, fromTime func(T) time.Time) ([]*leasedb.Blob, error) {
	return ScanBlobs(rows, fromTime, func(b *leasedb.Blob) []any { return []any{&b.Snapshot} })
}

// ScanItems reads the rows of ListEntries and ListDelimited (BlobCols,
// snapshot id, kind) as list items: a KindPrefix row is a BlobPrefix, a
// KindStaged row an uncommitted blob. A prefix row's blob columns are
// placeholders: only its name is read, none of its JSON columns decoded,
// so a page of prefixes costs what its names cost.
func ScanItems[T any](rows Rows, fromTime func(T) time.Time) ([]leasedb.ListItem, error) {
	return ScanItemsPeek(rows, fromTime, nil)
}

// ScanItemsPeek is ScanItems with peek (when not nil), which a driver
// gives to read a row's name and whether it is a KindPrefix row from the
// row as received, before any column is scanned: a prefix row then costs
// no scan of its placeholder columns.
func ScanItemsPeek[T any](rows Rows, fromTime func(T) time.Time, peek func() (name string, prefix bool, err error)) ([]leasedb.ListItem, error) {
	var out []leasedb.ListItem
	for rows.Next() {
		if peek != nil {
			name, prefix, err := peek()
			if err != nil {
				return nil, err
			}
			if prefix {
				out = append(out, leasedb.ListItem{Prefix: name})
				continue
			}
		}
		r := &blobRow[T]{}
		var kind int
		if err := rows.Scan(append(r.dest(), &r.b.Snapshot, &kind)...); err != nil {
			return nil, err
		}
		if kind == KindPrefix {
			out = append(out, leasedb.ListItem{Prefix: r.b.Name})
			continue
		}
		b, err := r.decode(fromTime)
		if err != nil {
			return nil, err
		}
		if kind == KindVersion && markVersionsOnly(b) {
			b.Snapshot, b.NonCurrent = "", true
			out = append(out, leasedb.ListItem{Blob: b, VersionsOnly: true})
			continue
		}
		if (kind == KindSnapshot || kind == KindVersion) && markDeleted(b) {
			// A soft-deleted snapshot or base blob (deletedSortCol).
			out = append(out, leasedb.ListItem{Blob: b})
			continue
		}
		switch kind {
		case KindVersion:
			// The snapshot column held the version's position
			// (VersionPos + id); the id is in VersionID.
			b.Snapshot, b.NonCurrent = "", true
			out = append(out, leasedb.ListItem{Blob: b})
		default:
			out = append(out, leasedb.ListItem{Blob: b, Uncommitted: kind == KindStaged})
		}
	}
	return out, rows.Err()
}

// BlobValues encodes b's columns in BlobCols order (not the snapshot id).
func BlobValues(b *leasedb.Blob, toTime func(time.Time) any) ([]any, error) {
	meta, err := leasedb.EncodeMetadata(b.Metadata)
	if err != nil {
		return nil, err
	}
	ext, err := leasedb.EncodeExtents(b.Extents)
	if err != nil {
		return nil, err
	}
	tier, tags, err := EncodeTierTags(b)
	if err != nil {
		return nil, err
	}
	copyInfo, err := leasedb.EncodeCopy(b.Copy)
	if err != nil {
		return nil, err
	}
	return []any{b.Account, b.Container, b.Name, b.Type, b.ETag, toTime(b.Created), toTime(b.LastModified), b.Size,
		b.Props.ContentType, b.Props.ContentEncoding, b.Props.ContentLanguage, b.Props.ContentDisposition,
		b.Props.CacheControl, md5Arg(b.Props), meta, ext, b.BlockCount,
		b.Lease.ID, b.Lease.State, b.Lease.Duration, toTime(b.Lease.Expires), toTime(b.Lease.BreakAt), toTime(b.Lease.Since),
		tier, tags, copyInfo, BoolInt(b.Sealed), b.VersionID, b.SequenceNumber}, nil
}

// md5Arg is p's Content-MD5 column: nil []byte must be NULL, not an
// empty blob.
func md5Arg(p leasedb.Props) any {
	if p.ContentMD5 != nil {
		return p.ContentMD5
	}
	return nil
}

// BlobAttrArgs are SetBlobAttrs' arguments for b: BlobValues at
// BlobAttrValues, without encoding the extents.
func BlobAttrArgs(b *leasedb.Blob, toTime func(time.Time) any) ([]any, error) {
	meta, err := leasedb.EncodeMetadata(b.Metadata)
	if err != nil {
		return nil, err
	}
	copyInfo, err := leasedb.EncodeCopy(b.Copy)
	if err != nil {
		return nil, err
	}
	return []any{b.Account, b.Container, b.Name, b.ETag, toTime(b.LastModified),
		b.Props.ContentType, b.Props.ContentEncoding, b.Props.ContentLanguage, b.Props.ContentDisposition,
		b.Props.CacheControl, md5Arg(b.Props), meta,
		b.Lease.ID, b.Lease.State, b.Lease.Duration, toTime(b.Lease.Expires), toTime(b.Lease.BreakAt), toTime(b.Lease.Since),
		copyInfo}, nil
}

// containerRow holds one row of ContainerCols as scanned, before decoding.
type containerRow[T any] struct {
	c                   leasedb.Container
	lm, exp, brk, since T
	meta                string
	acl                 sql.NullString
}

// dest is the scan destinations of ContainerCols.
func (r *containerRow[T]) dest() []any {
	c := &r.c
	return []any{&c.Account, &c.Name, &c.ETag, &r.lm, &r.meta, &c.PublicAccess,
		&c.Lease.ID, &c.Lease.State, &c.Lease.Duration, &r.exp, &r.brk, &r.since, &r.acl}
}

// decode turns the scanned columns into the container.
func (r *containerRow[T]) decode(fromTime func(T) time.Time) (*leasedb.Container, error) {
	c := &r.c
	var err error
	if c.Metadata, err = leasedb.DecodeMetadata(r.meta); err != nil {
		return nil, err
	}
	if c.ACL, err = leasedb.DecodeACL(r.acl.String); err != nil {
		return nil, err
	}
	c.LastModified = fromTime(r.lm)
	c.Lease.Expires, c.Lease.BreakAt, c.Lease.Since = fromTime(r.exp), fromTime(r.brk), fromTime(r.since)
	return c, nil
}

// ScanContainers reads rows of ContainerCols.
func ScanContainers[T any](rows Rows, fromTime func(T) time.Time) ([]*leasedb.Container, error) {
	var out []*leasedb.Container
	for rows.Next() {
		r := &containerRow[T]{}
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, err
		}
		c, err := r.decode(fromTime)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ContainerValues encodes c's columns in ContainerCols order.
func ContainerValues(c *leasedb.Container, toTime func(time.Time) any) ([]any, error) {
	meta, err := leasedb.EncodeMetadata(c.Metadata)
	if err != nil {
		return nil, err
	}
	acl, err := EncodeACL(c.ACL)
	if err != nil {
		return nil, err
	}
	return []any{c.Account, c.Name, c.ETag, toTime(c.LastModified), meta, c.PublicAccess,
		c.Lease.ID, c.Lease.State, c.Lease.Duration, toTime(c.Lease.Expires), toTime(c.Lease.BreakAt), toTime(c.Lease.Since), acl}, nil
}

// EncodeACL is the acl column value: NULL when the container has no stored
// access policies.
func EncodeACL(acl []leasedb.SignedIdentifier) (any, error) {
	s, err := leasedb.EncodeACL(acl)
	if err != nil || s == "" {
		return nil, err
	}
	return s, nil
}

// EncodeTierTags stores an unset tier and an empty tag set as NULL; no
// tags read back as a nil map.
func EncodeTierTags(b *leasedb.Blob) (tier, tags any, err error) {
	if b.AccessTier != "" {
		tier = b.AccessTier
	}
	if len(b.Tags) > 0 {
		j, err := json.Marshal(b.Tags)
		if err != nil {
			return nil, nil, fmt.Errorf("encode tags: %w", err)
		}
		tags = string(j)
	}
	return tier, tags, nil
}

// DecodeTags reads the tags column: NULL is no tags (a nil map).
func DecodeTags(s sql.NullString) (map[string]string, error) {
	if !s.Valid {
		return nil, nil
	}
	return leasedb.DecodeTags(s.String)
}

// BoolInt stores a flag as 0 or 1 (both dialects' sealed column).
func BoolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
