// Package sqlq holds the SQL text both metadata drivers run as is: the
// blob row columns and the List Blobs query, written in the SQL that
// SQLite and Postgres both accept (derived tables with aliases, CAST for
// the types of literals and parameters in a UNION); a driver supplies only
// its placeholder syntax.
package sqlq

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/leasedb"
)

// BlobCols are the columns of a blob row, in the order in which both
// drivers write (blobValues) and scan (scanBlobs) them. The snapshots table has them all, plus snapshot.
const BlobCols = `account, container, name, blob_type, etag, created, last_modified, size,
	content_type, content_encoding, content_language, content_disposition, cache_control, content_md5,
	metadata, extents, block_count, lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since,
	access_tier, tags, copy_info, sealed`

// SnapshotCols are the columns of a snapshot row: BlobCols, then the
// snapshot id.
const SnapshotCols = BlobCols + `, snapshot`

// StagedCols are BlobCols for a name that has only staged blocks: a block
// blob with nothing else known (the drivers scan them like a row).
const StagedCols = `'BlockBlob', '', NULL, NULL, 0, '', '', '', '', '', NULL, '{}', '[]', 0, '', '', 0, NULL, NULL, NULL, NULL, NULL, '', 0`

// Kinds of ListEntries rows, in their order within one name. A name has a
// blob row or is staged, never both in one result.
const (
	KindSnapshot = 0
	KindBlob     = 1
	KindStaged   = 2
)

// ListEntries builds Tx.ListEntries' query: BlobCols, the snapshot id
// (empty but for snapshot rows) and the row's kind, ordered by name, kind
// and snapshot id.
func ListEntries(placeholder func(n int) string, account, container, prefix, after, afterSnapshot string, limit int, inc leasedb.ListInclude) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return placeholder(len(args))
	}
	end, bounded := PrefixEnd(prefix)
	// lower bounds col from the cursor: past after (including after
	// itself when the cursor is in its snapshots and sameName) or, when
	// after sorts before the prefix, from the prefix.
	rangeOf := func(col string, sameName bool) string {
		var c string
		switch {
		case after < prefix:
			c = col + " >= " + arg(prefix)
		case sameName && afterSnapshot != "":
			c = col + " >= " + arg(after)
		default:
			c = col + " > " + arg(after)
		}
		if bounded {
			c += " AND " + col + " < " + arg(end)
		}
		return c
	}
	if inc.Uncommitted {
		b.WriteString(`WITH RECURSIVE staged(name, n) AS (
	SELECT (SELECT blob FROM blocks WHERE account = ` + arg(account) + ` AND container = ` + arg(container) +
			` AND ` + rangeOf("blob", true) + ` ORDER BY blob LIMIT 1), 1
	UNION ALL
	SELECT (SELECT blob FROM blocks WHERE account = ` + arg(account) + ` AND container = ` + arg(container) +
			` AND blob > staged.name`)
		if bounded {
			b.WriteString(` AND blob < ` + arg(end))
		}
		b.WriteString(` ORDER BY blob LIMIT 1), staged.n + 1
	FROM staged WHERE staged.name IS NOT NULL AND staged.n < ` + arg(limit) + `
)
`)
	}
	b.WriteString(`SELECT * FROM (
	SELECT * FROM (SELECT ` + BlobCols + `, CAST('' AS TEXT) AS snapshot, ` + fmt.Sprint(KindBlob) + ` AS kind FROM blobs
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", true) +
		` ORDER BY name LIMIT ` + arg(limit) + `) AS b`)
	if inc.Snapshots {
		if afterSnapshot != "" && after >= prefix && strings.HasPrefix(after, prefix) {
			// The rest of the cursor name's snapshots.
			b.WriteString(`
	UNION ALL
	SELECT * FROM (SELECT ` + SnapshotCols + `, ` + fmt.Sprint(KindSnapshot) + ` FROM snapshots
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = ` + arg(after) +
				` AND snapshot > ` + arg(afterSnapshot) + ` ORDER BY snapshot LIMIT ` + arg(limit) + `) AS cs`)
		}
		b.WriteString(`
	UNION ALL
	SELECT * FROM (SELECT ` + SnapshotCols + `, ` + fmt.Sprint(KindSnapshot) + ` FROM snapshots
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", false) +
			` ORDER BY name, snapshot LIMIT ` + arg(limit) + `) AS sn`)
	}
	if inc.Uncommitted {
		// A scalar subquery, not NOT EXISTS: the planner may turn NOT
		// EXISTS into an anti join that reads every blob row of the
		// container; this stays one key lookup per staged name.
		b.WriteString(`
	UNION ALL
	SELECT CAST(` + arg(account) + ` AS TEXT), CAST(` + arg(container) + ` AS TEXT), s.name, ` + StagedCols + `, '', ` + fmt.Sprint(KindStaged) + ` FROM staged s
		WHERE s.name IS NOT NULL AND (SELECT 1 FROM blobs b
			WHERE b.account = ` + arg(account) + ` AND b.container = ` + arg(container) + ` AND b.name = s.name) IS NULL`)
	}
	b.WriteString(`
) AS entries ORDER BY name, kind, snapshot LIMIT ` + arg(limit))
	return b.String(), args
}

// PrefixEnd returns the smallest string greater than every string that
// starts with p, in code point (= UTF-8 byte) order; ok is false when there
// is none (p is empty or all U+10FFFF). p must be valid UTF-8.
func PrefixEnd(p string) (string, bool) {
	r := []rune(p)
	for len(r) > 0 {
		last := r[len(r)-1]
		if last < utf8.MaxRune {
			next := last + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
				next = 0xE000
			}
			r[len(r)-1] = next
			return string(r), true
		}
		r = r[:len(r)-1]
	}
	return "", false
}

// FindTagged builds Tx.FindTagged's query: container, name and the tags
// column of the blob rows found through blob_tags, in container and name
// order. With an equality range (and an account-wide or one-container
// scope) the rows come from one ordered range of blob_tags' primary key,
// resumed at the cursor by a row comparison; a wider range is sorted.
func FindTagged(placeholder func(n int) string, account, container string, r leasedb.TagRange, afterContainer, afterName string, limit int) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return placeholder(len(args))
	}
	// The blob's tags come from a scalar subquery, not a join: it is one
	// primary key lookup per row returned (the planner evaluates it after
	// the LIMIT), where a join may be planned as a walk of the container's
	// blob rows. Every index row has its blob row (the triggers keep them
	// in the same transaction).
	b.WriteString(`SELECT t.container, t.name, (SELECT b.tags FROM blobs b
		WHERE b.account = t.account AND b.container = t.container AND b.name = t.name)
	FROM blob_tags t
	WHERE t.account = ` + arg(account) + ` AND t.key = ` + arg(r.Key))
	if r.LoOp == ">=" && r.HiOp == "<=" && r.Lo == r.Hi {
		// Written as an equality, so that the planner reads the rows in
		// the key's (container, name) order without sorting them.
		b.WriteString(` AND t.value = ` + arg(r.Lo))
	} else {
		switch r.LoOp {
		case ">", ">=":
			b.WriteString(` AND t.value ` + r.LoOp + ` ` + arg(r.Lo))
		}
		switch r.HiOp {
		case "<", "<=":
			b.WriteString(` AND t.value ` + r.HiOp + ` ` + arg(r.Hi))
		}
	}
	switch {
	case container != "":
		b.WriteString(` AND t.container = ` + arg(container))
		if afterContainer == container {
			b.WriteString(` AND t.name > ` + arg(afterName))
		} else if afterContainer > container {
			b.WriteString(` AND 1 = 0`)
		}
	case afterContainer != "" || afterName != "":
		b.WriteString(` AND (t.container, t.name) > (` + arg(afterContainer) + `, ` + arg(afterName) + `)`)
	}
	b.WriteString(`
	ORDER BY t.container, t.name LIMIT ` + arg(limit))
	return b.String(), args
}
