// Package sqlq holds what the two metadata drivers (leasedb/sqlite,
// leasedb/postgres) share: the SQL text both run as is (sqlq.go: the
// listing queries; writes.go: the row columns, upserts and name ranges),
// written in the SQL that SQLite and Postgres both accept (derived tables
// with aliases, CAST for the types of literals and parameters in a UNION),
// the row codec (rows.go: one decoder and encoder of blob and container
// rows for either driver's rows) and the retry and text checks (driver.go).
// A driver supplies only its placeholder syntax and how it stores a time.
//
// This package must never open a connection or run a statement itself:
// what a driver runs, and in which transaction, stays in the driver.
package sqlq

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/leasedb"
)

// BlobCols are the columns of a blob row, in the order in which both
// drivers write (BlobValues) and scan (ScanBlobs) them. The snapshots table has them all, plus snapshot;
// the versions table has exactly them (version_id is part of its key).
const BlobCols = `account, container, name, blob_type, etag, created, last_modified, size,
	content_type, content_encoding, content_language, content_disposition, cache_control, content_md5,
	metadata, extents, block_count, lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since,
	access_tier, tags, copy_info, sealed, version_id, sequence_number`

// SnapshotCols are the columns of a snapshot row: BlobCols, then the
// snapshot id.
const SnapshotCols = BlobCols + `, snapshot`

// StagedCols are BlobCols for a name that has only staged blocks: a block
// blob with nothing else known (the drivers scan them like a row).
const StagedCols = `'BlockBlob', '', NULL, NULL, 0, '', '', '', '', '', NULL, '{}', '[]', 0, '', '', 0, NULL, NULL, NULL, NULL, NULL, '', 0, '', 0`

// LeasedPred selects the container or blob rows holding a lease (List
// Leases). It must stay textually identical to the WHERE clause of the
// partial indexes containers_leased and blobs_leased (migration 0002 of
// both dialects), or neither planner can use them.
const LeasedPred = `lease_state NOT IN ('', 'available')`

// Kinds of ListEntries rows, in their order within one name: snapshots,
// previous versions, then the current blob. A name has a blob row or is
// staged, never both in one result.
const (
	KindSnapshot = 0
	KindVersion  = 1
	KindBlob     = 2
	KindStaged   = 3
)

// VersionPos is how a listing position inside a name's previous versions
// is written in the snapshot part of a cursor: "v" then the version id.
// It sorts after every snapshot id (they start with a digit), as the
// versions follow the snapshots, and it is the value of the snapshot
// column of a version row in ListEntries and ListDelimited.
const VersionPos = "v"

// versionAfter is the version id a cursor's snapshot part is past: "" (none,
// every version follows) unless the cursor is in the versions.
func versionAfter(afterSnapshot string) string {
	if strings.HasPrefix(afterSnapshot, VersionPos) {
		return afterSnapshot[len(VersionPos):]
	}
	return ""
}

// versionSortCol is the snapshot column of a version row.
const versionSortCol = `CAST('` + VersionPos + `' || version_id AS TEXT)`

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
	if inc.Versions {
		if afterSnapshot != "" && afterSnapshot < DeletedBasePos && after >= prefix && strings.HasPrefix(after, prefix) {
			// The rest of the cursor name's versions.
			b.WriteString(`
	UNION ALL
	SELECT * FROM (SELECT ` + BlobCols + `, ` + versionSortCol + `, ` + fmt.Sprint(KindVersion) + ` FROM versions
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = ` + arg(after) +
				` AND version_id > ` + arg(versionAfter(afterSnapshot)) + ` ORDER BY version_id LIMIT ` + arg(limit) + `) AS cv`)
		}
		b.WriteString(`
	UNION ALL
	SELECT * FROM (SELECT ` + BlobCols + `, ` + versionSortCol + `, ` + fmt.Sprint(KindVersion) + ` FROM versions
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", false) +
			` ORDER BY name, version_id LIMIT ` + arg(limit) + `) AS vs`)
	}
	if inc.DeletedWithVersions && !inc.Versions {
		b.WriteString(versionsOnlyPart(arg, rangeOf, account, container, after, afterSnapshot, prefix, limit))
	}
	if inc.Deleted {
		// A soft-deleted base is first in the table's key order but
		// last of its name's entries: it is read by parts of its own,
		// so that in each part the key order is the entries' order and
		// its first limit rows are enough.
		// cond runs after the account and container are bound: the
		// arguments are bound in text order, as plain "?" placeholders
		// need.
		del := func(cond func() string, order, alias string) {
			b.WriteString(`
	UNION ALL
	SELECT * FROM (SELECT ` + BlobCols + `, ` + deletedSortCol + `, ` + deletedKind + ` FROM deleted_blobs
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + cond() +
				` ORDER BY ` + order + ` LIMIT ` + arg(limit) + `) AS ` + alias)
		}
		others := inc.Snapshots || inc.Versions
		if afterSnapshot != "" && after >= prefix && strings.HasPrefix(after, prefix) {
			// The rest of the cursor name's soft-deleted rows.
			if others {
				del(func() string {
					return `name = ` + arg(after) + ` AND snapshot > ` + arg(afterSnapshot) + deletedOthers(inc)
				}, "snapshot", "cd")
			}
			if afterSnapshot < DeletedBasePos {
				del(func() string { return `name = ` + arg(after) + ` AND snapshot = ''` }, "name", "cb")
			}
		}
		del(func() string { return rangeOf("name", false) + ` AND snapshot = ''` }, "name", "db")
		if others {
			del(func() string { return rangeOf("name", false) + ` AND snapshot <> ''` + deletedOthers(inc) }, "name, snapshot", "ds")
		}
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

// KindPrefix marks a ListDelimited row that is a BlobPrefix: its name is
// the prefix, every other column is StagedCols' filler.
const KindPrefix = 4

// Dialect is what the List Blobs query with a delimiter needs beyond the
// SQL both drivers share.
type Dialect struct {
	// Placeholder is the text of the n-th parameter; it must name n (the
	// query text does not use them in order).
	Placeholder func(n int) string
	// Strpos names the function giving the 1-based character position of
	// its second argument in its first, 0 when absent: instr (SQLite),
	// strpos (Postgres).
	Strpos string
}

// ListDelimited builds Tx.ListDelimited's query: the List Blobs entries
// under prefix strictly after the name after (from the prefix when after
// sorts before it), names that hold delimiter after the prefix rolled up
// into one KindPrefix row each, at most limit rows. The columns are those
// of ListEntries.
//
// A recursive walk finds the page's names without reading the names under
// a prefix: each step holds, for every table the listing reads (blobs,
// and snapshots and blocks as inc asks), the first name of that table past
// the walk's position; the step's name is the least of them. When that
// name rolls up into prefix P, the walk moves to P || leasedb.PastPrefix,
// past every name under P, else past the name; a table is probed again
// (one seek of its key, LIMIT 1) only when its name is no longer past the
// position, so a step costs at most one seek per table and a plain blob
// costs one. The entries are then read by key for the names the walk
// found: at most limit steps, each giving at least one entry. The joins
// are CROSS JOINs so that SQLite keeps the walk as the outer loop (it
// would otherwise read the container's snapshots and look each up in the
// walk).
func ListDelimited(d Dialect, account, container, prefix, delimiter, after string, limit int, inc leasedb.ListInclude) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.Placeholder(len(args))
	}
	end, bounded := PrefixEnd(prefix)
	plen := utf8.RuneCountInString(prefix)
	dlen := utf8.RuneCountInString(delimiter)

	type part struct{ col, table, key, cond string }
	parts := []part{{"mb", "blobs", "name", ""}}
	if inc.Snapshots {
		parts = append(parts, part{"ms", "snapshots", "name", ""})
	}
	// versionsOnly: include=deletedwithversions without the versions
	// lists a name with previous versions (mv), or with soft-deleted
	// ones only (mo), and no blob row as its newest version.
	versionsOnly := inc.DeletedWithVersions && !inc.Versions
	if inc.Versions || versionsOnly {
		parts = append(parts, part{"mv", "versions", "name", ""})
	}
	if versionsOnly {
		parts = append(parts, part{"mo", "deleted_blobs", "name", ` AND snapshot >= '` + VersionPos + `'`})
	}
	if inc.Uncommitted {
		parts = append(parts, part{"mk", "blocks", "blob", ""})
	}
	if inc.Deleted {
		parts = append(parts, part{"md", "deleted_blobs", "name", deletedRows(inc)})
	}
	// first is the first key of p's table that is past pos (an SQL
	// expression), within the prefix.
	first := func(p part, op, pos string) string {
		s := `(SELECT ` + p.key + ` FROM ` + p.table + ` WHERE account = ` + arg(account) + ` AND container = ` + arg(container) +
			` AND ` + p.key + ` ` + op + ` ` + pos + p.cond
		if bounded {
			s += ` AND ` + p.key + ` < ` + arg(end)
		}
		return s + ` ORDER BY ` + p.key + ` LIMIT 1)`
	}
	// least is the least non-NULL of the walk row's columns (NULL when
	// every table is exhausted), written out: SQLite's min() of several
	// arguments is NULL when one is, and it has no LEAST.
	least := func(q string) string {
		m := q + parts[0].col
		for _, p := range parts[1:] {
			c := q + p.col
			m = `(CASE WHEN ` + m + ` IS NULL THEN ` + c + ` WHEN ` + c + ` IS NULL OR ` + m + ` < ` + c + ` THEN ` + m + ` ELSE ` + c + ` END)`
		}
		return m
	}
	// cut is the 1-based position of the delimiter in m after the prefix
	// (0 when m holds none there); rolled says m rolls up; rollup is the
	// prefix m rolls up into.
	cut := func(m string) string {
		return d.Strpos + `(substr(` + m + `, ` + fmt.Sprint(plen+1) + `), CAST(` + arg(delimiter) + ` AS TEXT))`
	}
	rolled := func(m string) string { return cut(m) + ` > 0` }
	rollup := func(m string) string {
		return `substr(` + m + `, 1, ` + cut(m) + ` + ` + fmt.Sprint(plen+dlen-1) + `)`
	}

	var b strings.Builder
	b.WriteString(`WITH RECURSIVE walk(`)
	for _, p := range parts {
		b.WriteString(p.col + `, `)
	}
	b.WriteString(`n) AS (
	SELECT `)
	for _, p := range parts {
		var start string
		switch {
		case after < prefix:
			start = first(p, ">=", arg(prefix))
		default:
			start = first(p, ">", arg(after))
		}
		b.WriteString(start + `, `)
	}
	b.WriteString(`1
	UNION ALL
	SELECT `)
	m := least("w.")
	pos := `(CASE WHEN ` + rolled(m) + ` THEN ` + rollup(m) + ` || CAST(` + arg(leasedb.PastPrefix) + ` AS TEXT) ELSE ` + m + ` END)`
	for _, p := range parts {
		c := `w.` + p.col
		b.WriteString(`CASE WHEN ` + c + ` IS NULL OR ` + c + ` > ` + pos + ` THEN ` + c + ` ELSE ` + first(p, ">", pos) + ` END, `)
	}
	b.WriteString(`w.n + 1 FROM walk w WHERE ` + m + ` IS NOT NULL AND w.n < ` + arg(limit) + `
),
found(m, mb, ms, mv, mo, mk, md, n) AS (
	SELECT ` + least("") + `, mb, `)
	col := func(c string) string {
		for _, p := range parts {
			if p.col == c {
				return c
			}
		}
		return `CAST(NULL AS TEXT)`
	}
	b.WriteString(col("ms") + `, ` + col("mv") + `, ` + col("mo") + `, ` + col("mk") + `, ` + col("md") + `, n FROM walk WHERE ` + least("") + ` IS NOT NULL
)
SELECT ` + BlobCols + `, snapshot, kind FROM (
	SELECT ` + BlobCols + `, CAST('' AS TEXT) AS snapshot, ` + fmt.Sprint(KindBlob) + ` AS kind, f.n AS n
		FROM found f CROSS JOIN blobs WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.mb = f.m AND NOT (` + rolled("f.m") + `)`)
	if inc.Snapshots {
		b.WriteString(`
	UNION ALL
	SELECT ` + SnapshotCols + `, ` + fmt.Sprint(KindSnapshot) + `, f.n
		FROM found f CROSS JOIN snapshots WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.ms = f.m AND NOT (` + rolled("f.m") + `)`)
	}
	if inc.Versions {
		b.WriteString(`
	UNION ALL
	SELECT ` + BlobCols + `, ` + versionSortCol + `, ` + fmt.Sprint(KindVersion) + `, f.n
		FROM found f CROSS JOIN versions WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.mv = f.m AND NOT (` + rolled("f.m") + `)`)
	}
	if versionsOnly {
		// The walk knows whether the name has a blob row (mb) or live
		// versions (mv), as for staged names below.
		mark := `CAST('` + VersionPos + `' || version_id || '` + versionsOnlyMark + `' AS TEXT), ` + fmt.Sprint(KindVersion) + `, f.n`
		b.WriteString(`
	UNION ALL
	SELECT ` + BlobCols + `, ` + mark + `
		FROM found f CROSS JOIN versions WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.mv = f.m AND (f.mb IS NULL OR f.mb <> f.m) AND NOT (` + rolled("f.m") + `)
		AND version_id = (SELECT MAX(w.version_id) FROM versions w WHERE w.account = ` + arg(account) + ` AND w.container = ` + arg(container) + ` AND w.name = f.m)
	UNION ALL
	SELECT ` + BlobCols + `, ` + mark + `
		FROM found f CROSS JOIN deleted_blobs WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.mo = f.m AND (f.mv IS NULL OR f.mv <> f.m) AND (f.mb IS NULL OR f.mb <> f.m) AND NOT (` + rolled("f.m") + `)
		AND snapshot = (SELECT MAX(e.snapshot) FROM deleted_blobs e WHERE e.account = ` + arg(account) + ` AND e.container = ` + arg(container) + ` AND e.name = f.m
			AND e.snapshot >= '` + VersionPos + `')`)
	}
	if inc.Deleted {
		b.WriteString(`
	UNION ALL
	SELECT ` + BlobCols + `, ` + deletedSortCol + `, ` + deletedKind + `, f.n
		FROM found f CROSS JOIN deleted_blobs WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND name = f.m
		AND f.md = f.m AND NOT (` + rolled("f.m") + `)` + deletedRows(inc))
	}
	if inc.Uncommitted {
		// The walk already knows whether the name has a blob row: mb is
		// the first blob name not before it.
		b.WriteString(`
	UNION ALL
	SELECT CAST(` + arg(account) + ` AS TEXT), CAST(` + arg(container) + ` AS TEXT), f.m, ` + StagedCols + `, '', ` + fmt.Sprint(KindStaged) + `, f.n
		FROM found f WHERE f.mk = f.m AND (f.mb IS NULL OR f.mb <> f.m) AND NOT (` + rolled("f.m") + `)`)
	}
	b.WriteString(`
	UNION ALL
	SELECT CAST(` + arg(account) + ` AS TEXT), CAST(` + arg(container) + ` AS TEXT), ` + rollup("f.m") + `, ` + StagedCols + `, '', ` + fmt.Sprint(KindPrefix) + `, f.n
		FROM found f WHERE ` + rolled("f.m") + `
) AS entries ORDER BY n, kind, snapshot LIMIT ` + arg(limit))
	return b.String(), args
}
