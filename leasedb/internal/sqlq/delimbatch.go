package sqlq

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/leasedb"
)

// How ListDelimitedBatched's walk sizes its steps (k, the names it reads
// with one index seek). A seek costs Postgres about as much as a dozen or
// more rows read in order, so the walk reads on where prefixes hold few
// names and seeks past each prefix where they hold many:
//   - it starts at BatchStart;
//   - a batch whose entries average fewer than BatchFew names (prefixes
//     are small) doubles k, up to BatchMax;
//   - otherwise, while k is below BatchProbe, k doubles too: a small batch
//     under one prefix does not tell a small prefix from a large one;
//   - a batch of BatchProbe or more names that is not few (prefixes are
//     large) drops k to 1, one name and one seek per prefix, for
//     BatchHold steps, before the walk tries larger batches again.
//
// So the walk reads at most about BatchFew names per entry it returns
// (a batch of few reads fewer per entry; one not few of k names is
// followed by BatchHold single-name steps, or ends the page), plus one
// last batch of at most BatchMax names.
const (
	BatchStart = 2
	BatchFew   = 16
	BatchProbe = 16
	BatchMax   = 64
	BatchHold  = 32
)

// ListDelimitedBatched builds Postgres's Tx.ListDelimited query for a
// List Blobs with a delimiter that reads committed blobs alone (no
// include that adds snapshots, versions, staged or deleted rows): the
// entries under prefix strictly after the name after (from the prefix
// when after sorts before it), each name that holds delimiter after the
// prefix rolled up into one KindPrefix row, at most limit rows, in
// ListEntries' columns.
//
// Why not ListDelimited's walk of one name per seek: on Postgres a seek
// costs far more than the name it returns (a B-tree scan reads the whole
// rest of the leaf page it lands on before it returns the first row, a
// dozen or more times the cost of one row of a range scan), so a page of
// 1,000 prefixes cost several flat pages. Here each step of the walk
// reads up to k names with one seek and rolls them up; the step after
// starts past the last name read, or past its prefix when it rolls up
// (one seek skips the rest of that prefix). k adapts to the names per
// prefix (see BatchStart): large batches where prefixes hold few names,
// reading on being cheaper than seeking again, one name per seek where
// they hold many, the seek past each prefix being what saves. The blob
// rows of the names that did not roll up are then read by key.
//
// The SQL is Postgres's (arrays, LATERAL, a LIMIT taken from the walk's
// row). SQLite keeps ListDelimited: there its page of 1,000 prefixes
// already costs about a flat page of 1,000 blobs (BenchmarkListPrefixPages).
func ListDelimitedBatched(placeholder func(n int) string, account, container, prefix, delimiter, after string, limit int) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return placeholder(len(args))
	}
	end, bounded := PrefixEnd(prefix)
	plen := utf8.RuneCountInString(prefix)
	dlen := utf8.RuneCountInString(delimiter)
	acct, cont, delim := arg(account), arg(container), arg(delimiter)
	// cut is the 1-based position of the delimiter in m after the prefix
	// (0 when m holds none there).
	cut := func(m string) string {
		if plen == 0 {
			return `strpos(` + m + `, ` + delim + `)`
		}
		return `strpos(substr(` + m + `, ` + fmt.Sprint(plen+1) + `), ` + delim + `)`
	}
	var upper string
	if bounded {
		upper = ` AND name < ` + arg(end)
	}
	// keyOf is the entry a name gives: the prefix it rolls up into, or
	// itself.
	keyOf := `coalesce(substr(name, 1, nullif(` + cut("name") + `, 0) + ` + fmt.Sprint(plen+dlen-1) + `), name) COLLATE "C"`
	names := func(from, k string) string {
		return `FROM blobs WHERE account = ` + acct + ` AND container = ` + cont + ` AND ` + from + upper + ` ORDER BY name LIMIT ` + k
	}
	// batch reads the first k names past the condition from and gives
	// their entries in order, a prefix once for all its names (NULL when
	// there are none). The keys sort as their names do: the names under a
	// prefix are the ones between it and it || leasedb.PastPrefix. A
	// batch of one name is a plain probe, without the sort DISTINCT
	// costs.
	batch := func(from, k string) string {
		return `(SELECT array_agg(DISTINCT s.key ORDER BY s.key) FROM (SELECT ` + keyOf + ` AS key ` + names(from, k) + `) AS s)`
	}
	probe := func(from string) string {
		return `(SELECT ARRAY[` + keyOf + `] ` + names(from, "1") + `)`
	}
	// next is the walk's position after the batch b.keys: past its last
	// entry, which is the last name read or the prefix it rolls up into.
	last := `b.keys[cardinality(b.keys)]`
	next := `CASE WHEN ` + cut(last) + ` > 0 THEN ` + last + ` || ` + arg(leasedb.PastPrefix) + ` ELSE ` + last + ` END`
	var start string
	if after < prefix {
		start = `name >= ` + arg(prefix)
	} else {
		start = `name > ` + arg(after)
	}
	// A parameter per use: Postgres infers each one's type from its
	// context (an integer here, a bigint in LIMIT).
	lim := func() string { return arg(limit) }

	// A batch that was not full is the last; the walk then reads one
	// more, empty, batch and stops. So a full batch read k names, and its
	// entries average fewer than BatchFew names when k < BatchFew × g.
	g := `cardinality(b.keys)`
	few := `(` + g + ` > 1 AND b.k < ` + fmt.Sprint(BatchFew) + ` * ` + g + `)`
	var b strings.Builder
	// found unnests the walk's keys in the select list (the two
	// set-returning functions run in step): a function in FROM would
	// fill a tuplestore for each walk row, most of which hold one key.
	//
	// walk: pos is where the next step starts (exclusive), k its batch
	// size and hold how many more steps keep k at 1, keys the entries
	// this step found (NULL: none, the walk is over), base how many
	// entries the steps before it found. A step's batch is computed once,
	// in a subquery that OFFSET 0 keeps from being merged into the
	// expressions that read it (b.keys; b.k, b.hold and b.base are the
	// step before's).
	b.WriteString(`WITH RECURSIVE walk(pos, k, hold, keys, base) AS (
	SELECT ` + next + `, ` + fmt.Sprint(BatchStart) + `, 0, b.keys, 0
	FROM (SELECT ` + batch(start, fmt.Sprint(BatchStart)) + ` AS keys OFFSET 0) AS b
	UNION ALL
	SELECT ` + next + `,
		CASE WHEN ` + few + ` THEN least(b.k * 2, ` + fmt.Sprint(BatchMax) + `) WHEN b.hold > 0 THEN 1
			WHEN b.k < ` + fmt.Sprint(BatchProbe) + ` THEN b.k * 2 ELSE 1 END,
		CASE WHEN ` + few + ` THEN 0 WHEN b.hold > 0 THEN b.hold - 1
			WHEN b.k < ` + fmt.Sprint(BatchProbe) + ` THEN 0 ELSE ` + fmt.Sprint(BatchHold) + ` END,
		b.keys, b.base
	FROM (SELECT w.k, w.hold, w.base + cardinality(w.keys) AS base,
			CASE WHEN w.k = 1 THEN ` + probe(`name > w.pos`) + ` ELSE ` + batch(`name > w.pos`, `w.k`) + ` END AS keys
		FROM walk w WHERE w.keys IS NOT NULL AND w.base + cardinality(w.keys) < ` + lim() + ` OFFSET 0) AS b
),
found(key, n) AS (
	SELECT key, n FROM (SELECT unnest(w.keys) AS key, w.base + generate_subscripts(w.keys, 1) AS n FROM walk w) AS u
	WHERE n <= ` + lim() + `
)
SELECT ` + BlobCols + `, snapshot, kind FROM (
	SELECT ` + BlobCols + `, CAST('' AS TEXT) AS snapshot, ` + fmt.Sprint(KindBlob) + ` AS kind, f.n AS n
		FROM found f CROSS JOIN blobs WHERE account = ` + acct + ` AND container = ` + cont + ` AND name = f.key
		AND ` + cut("f.key") + ` = 0
	UNION ALL
	SELECT CAST(` + acct + ` AS TEXT), CAST(` + cont + ` AS TEXT), f.key, ` + StagedCols + `, '', ` + fmt.Sprint(KindPrefix) + `, f.n
		FROM found f WHERE ` + cut("f.key") + ` > 0
) AS entries ORDER BY n LIMIT ` + lim())
	return b.String(), args
}
