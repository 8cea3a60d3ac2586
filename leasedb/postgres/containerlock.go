package postgres

import "hash/fnv"

// A container is guarded by a transaction-scoped advisory lock on a hash of
// (account, name) as well as by its row's lock. The few-statement writes
// (LockForReplace) take it shared where they took FOR SHARE on the row,
// and whatever takes the row FOR UPDATE (Tx.Container with LockExclusive:
// every change of the row, Delete Container, a container soft delete or
// restore; Tx.DeleteContainer) takes it exclusive first, so those writes
// and a delete of their container serialize exactly as they did with FOR
// SHARE: a write holding the lock shared lands before the delete (which
// then deletes it with the container, its keys queued) and one arriving
// after the delete took it waits and then finds the container gone. A row
// lock that several transactions share is a MultiXact (a MultiXact/
// CREATE_ID WAL record, the row's page dirtied and a Heap/LOCK record per
// write); a shared advisory lock is an entry in the lock table.
//
// The other shared holders of the row (Tx.Container with LockShare: FOR
// SHARE; a blob insert's foreign-key check: FOR KEY SHARE) keep their row
// locks, which conflict with FOR UPDATE as before. The order is always the
// advisory lock first, then the row, so the two locks cannot deadlock one
// another.

// lockContainerSQL is Tx.Container's statement with LockExclusive ($1 the
// account, $2 the name, $3 containerLockKey): the advisory lock exclusive,
// then the row FOR UPDATE (the LATERAL subquery runs after the lock: it
// refers to it). FOR UPDATE re-reads the row after the wait, so a
// container that the previous holder deleted is absent and one it changed
// is read as it committed it.
const lockContainerSQL = `SELECT c.* FROM (SELECT pg_advisory_xact_lock($3)::text AS l OFFSET 0) AS lk,
	LATERAL (SELECT ` + containerCols + ` FROM containers WHERE account = $1 AND name = $2 AND lk.l IS NOT NULL OFFSET 0 FOR UPDATE) AS c`

// containerLockKey is the advisory lock key of a container: FNV-1a 64 over
// the NUL-separated parts behind a prefix of its own, so it is never a
// blob name's key (nameLockKey) but by a hash collision, which only
// serializes two unrelated locks.
func containerLockKey(account, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("container\x00"))
	h.Write([]byte(account))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return int64(h.Sum64())
}
