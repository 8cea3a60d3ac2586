package leasedb

import (
	"context"
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr"
)

// ListResult is one page of List Blobs. Items holds blobs and prefixes in
// name order; a prefix item has Prefix set and Blob nil.
type ListResult struct {
	Items []ListItem
	Next  string // opaque marker; "" on the last page
	Now   time.Time
}

// ListItem is one listing entry: a blob row (a snapshot row when
// Blob.Snapshot is set), a name that has only staged blocks (Uncommitted),
// or a virtual directory (BlobPrefix, Prefix set and Blob nil).
type ListItem struct {
	Blob   *Blob
	Prefix string
	// Uncommitted marks a name with staged blocks and no committed blob
	// (List Blobs include=uncommittedblobs): Blob carries only Account,
	// Container, Name and Type BlockBlob; it has no ETag, times,
	// properties or metadata, as List Blobs reports it.
	Uncommitted bool
	// VersionsOnly marks a name whose current version was deleted but
	// that has previous versions (List Blobs include=deletedwithversions,
	// Azure's HasVersionsOnly): Blob is the newest version.
	VersionsOnly bool
}

// ListInclude says which entries besides committed blobs a listing
// returns.
type ListInclude struct {
	// Snapshots lists each name's snapshots, oldest first, right before
	// its blob (include=snapshots).
	Snapshots bool
	// Uncommitted lists names that have staged blocks but no committed
	// blob (include=uncommittedblobs). A committed blob with staged
	// blocks is listed once, as the committed blob.
	Uncommitted bool
	// Versions lists each name's previous versions (Blob.NonCurrent),
	// oldest first, after its snapshots and before its current blob
	// (include=versions); a name with versions and no current blob is
	// listed by its versions alone.
	Versions bool
	// Deleted lists soft-deleted rows (include=deleted): a name's
	// soft-deleted base blob after its previous versions and before its
	// current blob, with Snapshots its soft-deleted snapshots among its
	// snapshots, and with Versions its soft-deleted versions among its
	// versions by id (Blob.DeletedTime set on all).
	Deleted bool
	// DeletedWithVersions lists, once, each name that has previous
	// versions and no current blob (include=deletedwithversions), as its
	// newest version marked ListItem.VersionsOnly, where the versions
	// would be; a name whose versions are all soft-deleted is listed by
	// its newest soft-deleted one. With Versions the versions themselves
	// list such a name and this adds nothing.
	DeletedWithVersions bool
}

// MaxBlobNameUnits is Azure's limit on a blob name: 1,024 characters
// counted as UTF-16 code units (a character outside the Basic
// Multilingual Plane counts two), after URL decoding. The gateway refuses
// a longer name; import s3 skips it.
const MaxBlobNameUnits = 1024

// MaxBlobNameBytes is the longest blob name stored, in bytes of UTF-8:
// what a Postgres B-tree entry holds uncompressed (at most 2,704 bytes)
// beside the longest account, container, tag key and tag value of the
// blob_tags key. It holds every name of MaxBlobNameUnits characters below
// U+0800 (2 bytes each: Latin, Greek, Cyrillic, Hebrew, Arabic letters)
// and 512 characters outside the BMP (4 bytes, 2 units each); a name of
// characters from U+0800 (3 bytes, 1 unit: CJK) fits 682 of them, not
// Azure's 1,024. Both stores keep this limit, so they answer alike.
const MaxBlobNameBytes = 2 * MaxBlobNameUnits

// BlobNameFits reports whether name, valid UTF-8, is within Azure's
// limit of MaxBlobNameUnits UTF-16 code units and within
// MaxBlobNameBytes. A name of at most MaxBlobNameUnits bytes always is (no
// character takes fewer bytes than units), so the usual name costs one
// comparison.
func BlobNameFits(name string) bool {
	if len(name) <= MaxBlobNameUnits {
		return true
	}
	if len(name) > MaxBlobNameBytes {
		return false
	}
	units := 0
	for _, r := range name {
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return units <= MaxBlobNameUnits
}

// Unlistable reports whether s holds a control character, U+0000-U+001F,
// U+007F or U+0080-U+009F (unicode.IsControl), or U+FFFE or U+FFFF (no
// XML character), byte by byte: the gateway runs it on every request.
// A blob name that holds one is refused, by the gateway and by import s3:
// Azure's naming rules refuse control characters, and XML 1.0 has no
// form for most of them, so List Blobs would name another blob.
func Unlistable(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return true
		case c == 0xef && i+2 < len(s) && s[i+1] == 0xbf && s[i+2] >= 0xbe:
			return true
		}
	}
	return false
}

// PastPrefix follows a List Blobs BlobPrefix P (never empty: it ends with
// the delimiter) in the position past every name under P: P + PastPrefix
// sorts after each name that starts with P. One U+10FFFF, the largest
// code point, would not do: a name may hold it right after P ("P\U0010FFFFx"
// sorts after "P\U0010FFFF", so P came again, page after page). What
// follows P in a name of at most MaxBlobNameBytes holds fewer than
// MaxBlobNameBytes/4 of them (4 bytes each), so this many sort after it.
var PastPrefix = strings.Repeat("\U0010FFFF", MaxBlobNameBytes/4)

// EncodeMarker and DecodeMarker make the listing cursor opaque: it means
// "resume strictly after this name", which keeps paging stable under
// concurrent writes (List Blobs and Find Blobs by Tags: NextMarker).
func EncodeMarker(after string) string {
	if after == "" {
		return ""
	}
	return "1" + base64.RawURLEncoding.EncodeToString([]byte(after))
}

// DecodeMarker reverses EncodeMarker.
func DecodeMarker(m string) (string, error) {
	if m == "" {
		return "", nil
	}
	if !strings.HasPrefix(m, "1") {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "marker", m, "unknown marker")
	}
	b, err := base64.RawURLEncoding.DecodeString(m[1:])
	if err != nil {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "marker", m, "malformed marker")
	}
	return string(b), nil
}

// listPos is a List Blobs cursor: past every entry of name when snapshot
// is "", else past name's snapshot snapshot (its later snapshots and its
// blob still to come) or, when snapshot is versionPos and a version id,
// past that previous version (its later versions and its blob to come).
type listPos struct{ name, snapshot string }

// versionPos marks a cursor inside a name's previous versions; it sorts
// after every snapshot id, as the versions follow the snapshots (the
// drivers read it the same way: sqlq.VersionPos).
const versionPos = "v"

// deletedBasePos is the snapshot part of the cursor right past a name's
// soft-deleted base blob, which follows its previous versions and comes
// before its live blob (the drivers read it the same way:
// sqlq.DeletedBasePos).
const deletedBasePos = "w"

// posOf is the cursor right past the listed row b.
func posOf(b *Blob) listPos {
	if b.NonCurrent {
		// A previous version, soft-deleted or not: its place among
		// the versions.
		return listPos{name: b.Name, snapshot: versionPos + b.VersionID}
	}
	if !b.DeletedTime.IsZero() && b.Snapshot == "" {
		return listPos{name: b.Name, snapshot: deletedBasePos}
	}
	return listPos{name: b.Name, snapshot: b.Snapshot}
}

// encodeListMarker makes a List Blobs marker: EncodeMarker's form after a
// whole name, "2" + base64(name NUL snapshot) in the middle of a name's
// snapshots (names cannot contain NUL), "3" + base64(P) past every name
// under the BlobPrefix P (P + PastPrefix, kept short).
func encodeListMarker(p listPos) string {
	if p.snapshot == "" {
		if prefix, ok := strings.CutSuffix(p.name, PastPrefix); ok {
			return "3" + base64.RawURLEncoding.EncodeToString([]byte(prefix))
		}
		return EncodeMarker(p.name)
	}
	return "2" + base64.RawURLEncoding.EncodeToString([]byte(p.name+"\x00"+p.snapshot))
}

// decodeListMarker reverses encodeListMarker (and reads EncodeMarker's
// form). A marker that is not one of ours is 400.
func decodeListMarker(m string) (listPos, error) {
	bad := func(why string) (listPos, error) {
		return listPos{}, svcerr.Query(svcerr.InvalidQueryParameterValue, "marker", m, why)
	}
	if m == "" {
		return listPos{}, nil
	}
	if m[0] != '1' && m[0] != '2' && m[0] != '3' {
		return bad("unknown marker")
	}
	b, err := base64.RawURLEncoding.DecodeString(m[1:])
	if err != nil || !utf8.Valid(b) {
		return bad("malformed marker")
	}
	s := string(b)
	if m[0] != '2' {
		if strings.IndexByte(s, 0) >= 0 {
			return bad("malformed marker")
		}
		if m[0] == '3' {
			return listPos{name: s + PastPrefix}, nil
		}
		return listPos{name: s}, nil
	}
	name, snap, ok := strings.Cut(s, "\x00")
	if !ok || snap == "" || strings.IndexByte(snap, 0) >= 0 {
		return bad("malformed marker")
	}
	return listPos{name: name, snapshot: snap}, nil
}

// ListBlobs lists one page of committed blobs under prefix; see
// ListBlobsInclude.
func (d *DB) ListBlobs(ctx context.Context, account, container, prefix, delimiter, marker string, max int) (*ListResult, error) {
	return d.ListBlobsInclude(ctx, account, container, prefix, delimiter, marker, max, ListInclude{})
}

// ListBlobsInclude lists one page of List Blobs under prefix: committed
// blobs and, as inc asks, snapshots and names with only staged blocks. With
// a delimiter, names that contain it after the prefix roll up into one
// BlobPrefix item each. Every item counts toward max (List Blobs:
// maxresults): blobs, snapshots, uncommitted names and prefixes alike, and
// the marker can resume in the middle of one name's snapshots.
func (d *DB) ListBlobsInclude(ctx context.Context, account, container, prefix, delimiter, marker string, max int, inc ListInclude) (*ListResult, error) {
	return d.ListBlobsFrom(ctx, account, container, prefix, delimiter, marker, "", max, inc)
}

// ListBlobsFrom is ListBlobsInclude with List Blobs' startFrom: when it is
// not "", the listing starts at the first entry whose name is startFrom or
// after it (inclusive), or after the marker when that is further on.
func (d *DB) ListBlobsFrom(ctx context.Context, account, container, prefix, delimiter, marker, startFrom string, max int, inc ListInclude) (*ListResult, error) {
	after, err := decodeListMarker(marker)
	if err != nil {
		return nil, err
	}
	if startFrom != "" && after.name < startFrom {
		// The position right before startFrom's first entry: past its
		// snapshots up to "\x01", which are none (snapshot ids are
		// timestamps), so its snapshots, blob or staged entry all follow.
		after = listPos{name: startFrom, snapshot: startBefore}
	}
	res := &ListResult{}
	err = d.Store.View(ctx, func(tx Tx) error {
		res.Items, res.Next = nil, ""
		_, err := containerOf(ctx, tx, account, container, LockNone)
		if err != nil {
			return err
		}
		if res.Now, err = tx.Now(ctx); err != nil {
			return err
		}
		if delimiter != "" {
			res.Items, res.Next, err = delimitedPage(ctx, tx, account, container, prefix, delimiter, after, max, inc)
			return err
		}
		cursor := after
		lastPrefix := ""
		batch := max + 1
		if batch < 16 {
			batch = 16
		}
		for {
			rows, err := tx.ListEntries(ctx, account, container, prefix, cursor.name, cursor.snapshot, batch, inc)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				return nil
			}
			requery := false
			for _, row := range rows {
				name := row.Blob.Name
				item, next := row, posOf(row.Blob)
				if delimiter != "" {
					rest := name[len(prefix):]
					if i := strings.Index(rest, delimiter); i >= 0 {
						p := prefix + rest[:i+len(delimiter)]
						if p == lastPrefix {
							cursor = next
							continue
						}
						item, next, lastPrefix = ListItem{Prefix: p}, listPos{name: p + PastPrefix}, p
					}
				}
				if len(res.Items) == max {
					// At least one more item exists: the page is full.
					res.Next = encodeListMarker(cursor)
					return nil
				}
				res.Items = append(res.Items, item)
				cursor = next
				if item.Prefix != "" {
					// Resume past the prefix instead of walking every
					// name under it.
					requery = true
					break
				}
			}
			if !requery && len(rows) < batch {
				return nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// restBatch is how many entries delimitedPage reads at a time of the one
// name whose snapshots a marker stopped in the middle of.
const restBatch = 64

// delimitedPage lists one page of List Blobs with a delimiter from the
// position after: at most max items, and the marker of the next page when
// more follow. One Tx.ListDelimited reads the page, seeking past each
// prefix, so the page costs about what it returns however many names lie
// under its prefixes.
func delimitedPage(ctx context.Context, tx Tx, account, container, prefix, delimiter string, after listPos, max int, inc ListInclude) ([]ListItem, string, error) {
	var items []ListItem
	from := after.name
	if after.snapshot != "" && strings.HasPrefix(after.name, prefix) {
		// The marker stopped in the middle of after.name's snapshots:
		// its later snapshots and its blob come first, as one prefix
		// item when the name rolls up.
		rest, err := restOfName(ctx, tx, account, container, after, inc)
		if err != nil {
			return nil, "", err
		}
		if p, ok := rollup(after.name, prefix, delimiter); ok {
			if len(rest) > 0 {
				items = append(items, ListItem{Prefix: p})
				from = p + PastPrefix
			}
		} else {
			items = append(items, rest...)
		}
	}
	if len(items) <= max {
		rows, err := tx.ListDelimited(ctx, account, container, prefix, delimiter, from, max+1-len(items), inc)
		if err != nil {
			return nil, "", err
		}
		items = append(items, rows...)
	}
	if len(items) <= max {
		return items, "", nil
	}
	// At least one more item exists: the page is full.
	last := items[max-1]
	next := listPos{name: last.Prefix + PastPrefix}
	if last.Prefix == "" {
		next = posOf(last.Blob)
	}
	return items[:max], encodeListMarker(next), nil
}

// restOfName returns the entries of the name at p that come after p (its
// snapshots after p.snapshot, then its blob or staged entry).
func restOfName(ctx context.Context, tx Tx, account, container string, p listPos, inc ListInclude) ([]ListItem, error) {
	var out []ListItem
	for {
		rows, err := tx.ListEntries(ctx, account, container, p.name, p.name, p.snapshot, restBatch, inc)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.Blob.Name != p.name {
				return out, nil
			}
			out = append(out, r)
			p.snapshot = posOf(r.Blob).snapshot
		}
		if len(rows) < restBatch || p.snapshot == "" {
			return out, nil
		}
	}
}

// rollup returns the BlobPrefix that name rolls up into under prefix with
// delimiter, and whether it does.
func rollup(name, prefix, delimiter string) (string, bool) {
	rest := name[len(prefix):]
	i := strings.Index(rest, delimiter)
	if i < 0 {
		return "", false
	}
	return prefix + rest[:i+len(delimiter)], true
}

// startBefore is the snapshot part of the position that startFrom makes:
// it sorts before every snapshot id.
const startBefore = "\x01"
