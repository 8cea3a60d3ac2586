package sqlq

import "strings"

// blockCols are the columns of a staged block row.
const blockCols = `account, container, blob, block_id, key, size, staged_at`

// withoutAccount is cols without its leading "account, ".
func withoutAccount(cols string) string {
	return strings.TrimPrefix(cols, "account, ")
}

// MoveStmt is one statement of MoveContainer: with To, its parameters
// are 1 the new account, 2 the old one, 3 the container name; without, 1
// the old account and 2 the name (Postgres must know every parameter's
// type from the statement).
type MoveStmt struct {
	SQL string
	To  bool
}

// Args are the statement's arguments.
func (m MoveStmt) Args(from, name, to string) []any {
	if m.To {
		return []any{to, from, name}
	}
	return []any{from, name}
}

// MoveContainer is Tx.MoveContainer's statements, in order: the container
// row is copied to the new account first (an existing row there inserts
// nothing, which the driver reports as ErrExists, and then nothing else
// may run), then each table under it is copied and deleted (the tag index
// follows its blob rows through the triggers of 0009_blob_tags), the
// adopted keys' holders follow, and the old container row goes last, so
// no row is ever without its container. blobCols are columns of a
// dialect's own that blob rows have beyond BlobCols, copied with them.
func MoveContainer(placeholder func(n int) string, blobCols ...string) []MoveStmt {
	copyRows := func(table, cols, nameCol string) MoveStmt {
		return MoveStmt{To: true, SQL: `INSERT INTO ` + table + ` (` + cols + `) SELECT ` + placeholder(1) + `, ` + withoutAccount(cols) +
			` FROM ` + table + ` WHERE account = ` + placeholder(2) + ` AND ` + nameCol + ` = ` + placeholder(3)}
	}
	del := func(table, nameCol string) MoveStmt {
		return MoveStmt{SQL: `DELETE FROM ` + table + ` WHERE account = ` + placeholder(1) + ` AND ` + nameCol + ` = ` + placeholder(2)}
	}
	first := copyRows("containers", ContainerCols, "name")
	first.SQL += ` ON CONFLICT (account, name) DO NOTHING`
	return []MoveStmt{
		first,
		copyRows("blobs", strings.Join(append([]string{BlobCols}, blobCols...), ", "), "container"), del("blobs", "container"),
		copyRows("snapshots", SnapshotCols, "container"), del("snapshots", "container"),
		copyRows("versions", VersionCols, "container"), del("versions", "container"),
		copyRows("deleted_blobs", DeletedBlobCols, "container"), del("deleted_blobs", "container"),
		copyRows("blocks", blockCols, "container"), del("blocks", "container"),
		{To: true, SQL: `UPDATE adopted_keys SET account = ` + placeholder(1) + ` WHERE account = ` + placeholder(2) + ` AND container = ` + placeholder(3)},
		del("containers", "name"),
	}
}

// ContainerExists is a query for one row (any value) when the container
// (1: account, 2: name) exists.
func ContainerExists(placeholder func(n int) string) string {
	return `SELECT 1 FROM containers WHERE account = ` + placeholder(1) + ` AND name = ` + placeholder(2)
}

// DeletedCols are the columns of a deleted_containers row.
const DeletedCols = `account, name, version, deleted_at, expires_at`

// InsertDeleted is Tx.InsertDeletedContainer's statement (DeletedCols); an
// existing record inserts nothing.
func InsertDeleted(placeholder func(n int) string) string {
	return `INSERT INTO deleted_containers (` + DeletedCols + `) VALUES (` + Placeholders(placeholder, 5) + `)
		ON CONFLICT (account, name, version) DO NOTHING`
}

// DeletedWhere selects one record by account, name and version (1, 2, 3).
func DeletedWhere(placeholder func(n int) string) string {
	return ` WHERE account = ` + placeholder(1) + ` AND name = ` + placeholder(2) + ` AND version = ` + placeholder(3)
}

// ListDeleted builds Tx.ListDeletedContainers' query: the records of
// account under prefix strictly after (after, afterVersion), by name and
// version, at most limit.
func ListDeleted(placeholder func(n int) string, account, prefix, after, afterVersion string, limit int) (string, []any) {
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return placeholder(len(args))
	}
	b.WriteString(`SELECT ` + DeletedCols + ` FROM deleted_containers WHERE account = ` + arg(account) + ` AND `)
	if after >= prefix {
		b.WriteString(`(name > ` + arg(after) + ` OR name = ` + arg(after) + ` AND version > ` + arg(afterVersion) + `)`)
	} else {
		b.WriteString(`name >= ` + arg(prefix))
	}
	if end, ok := PrefixEnd(prefix); ok {
		b.WriteString(` AND name < ` + arg(end))
	}
	b.WriteString(` ORDER BY name, version LIMIT ` + arg(limit))
	return b.String(), args
}

// ExpiredDeleted is Tx.ExpiredContainers' query: 1 the time, 2 the limit.
func ExpiredDeleted(placeholder func(n int) string) string {
	return `SELECT ` + DeletedCols + ` FROM deleted_containers WHERE expires_at <= ` + placeholder(1) +
		` ORDER BY expires_at LIMIT ` + placeholder(2)
}
