package sqlq

import (
	"fmt"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
)

// versionsOnlyMark ends the snapshot column of a ListEntries row that
// stands for a name whose current version was deleted but that has
// previous versions (List Blobs include=deletedwithversions: Azure's
// HasVersionsOnly entry). The row is the name's newest version and sorts
// as that version ("v" + id, then the mark): after the name's snapshots
// and before a soft-deleted base (DeletedBasePos), so a cursor past it is
// the version's position.
const versionsOnlyMark = "+"

// versionsOnlyPart is the ListEntries part of include=deletedwithversions
// without include=versions: per name in the range with no blob row, its
// newest version; a name whose versions are all soft-deleted (Azure
// counts "any versions (active or deleted)") is listed by its newest
// soft-deleted one. rangeOf bounds the names (see ListEntries); a cursor
// inside a name's snapshots (before its versions) still lists that name.
// The names stop at the limit-th blob row past the cursor, when there is
// one: a row after it cannot be among the first limit entries, and
// without the bound a container whose versioned names all have blobs
// would have every version past the cursor read for each page.
func versionsOnlyPart(arg func(v any) string, rangeOf func(col string, sameName bool) string, account, container, after, afterSnapshot, prefix string, limit int) string {
	inName := afterSnapshot != "" && afterSnapshot < VersionPos && after >= prefix && strings.HasPrefix(after, prefix)
	last := `(SELECT name FROM blobs WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", true) +
		` ORDER BY name LIMIT 1 OFFSET ` + arg(limit-1) + `)`
	return `
	UNION ALL
	SELECT * FROM (SELECT ` + BlobCols + `, CAST('` + VersionPos + `' || version_id || '` + versionsOnlyMark + `' AS TEXT), ` + fmt.Sprint(KindVersion) + ` FROM versions v
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", inName) + `
		AND name <= COALESCE(` + last + `, name)
		AND version_id = (SELECT MAX(w.version_id) FROM versions w
			WHERE w.account = v.account AND w.container = v.container AND w.name = v.name)
		AND (SELECT 1 FROM blobs b WHERE b.account = v.account AND b.container = v.container AND b.name = v.name) IS NULL
		ORDER BY name LIMIT ` + arg(limit) + `) AS vo
	UNION ALL
	SELECT * FROM (SELECT ` + BlobCols + `, CAST('` + VersionPos + `' || version_id || '` + versionsOnlyMark + `' AS TEXT), ` + fmt.Sprint(KindVersion) + ` FROM deleted_blobs d
		WHERE account = ` + arg(account) + ` AND container = ` + arg(container) + ` AND ` + rangeOf("name", inName) + `
		AND name <= COALESCE(` + last + `, name) AND snapshot >= '` + VersionPos + `'
		AND snapshot = (SELECT MAX(e.snapshot) FROM deleted_blobs e
			WHERE e.account = d.account AND e.container = d.container AND e.name = d.name AND e.snapshot >= '` + VersionPos + `')
		AND (SELECT 1 FROM blobs b WHERE b.account = d.account AND b.container = d.container AND b.name = d.name) IS NULL
		AND (SELECT 1 FROM versions w WHERE w.account = d.account AND w.container = d.container AND w.name = d.name LIMIT 1) IS NULL
		ORDER BY name LIMIT ` + arg(limit) + `) AS vd`
}

// markVersionsOnly reads the snapshot column of a KindVersion row: true
// (and the mark removed) for a versionsOnlyPart row.
func markVersionsOnly(b *leasedb.Blob) bool {
	s, ok := strings.CutSuffix(b.Snapshot, versionsOnlyMark)
	if ok {
		b.Snapshot = s
	}
	return ok
}
