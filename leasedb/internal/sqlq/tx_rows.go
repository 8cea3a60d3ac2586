package sqlq

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
)

// The container, blob, snapshot, block and adopted-key methods of Tx whose
// statements both dialects accept (see tx.go).

// InsertContainer implements leasedb.Tx. ON CONFLICT DO NOTHING reports an
// existing name (ErrExists) without aborting the transaction.
func (t Tx[T]) InsertContainer(ctx context.Context, c *leasedb.Container) error {
	return t.writeContainer(ctx, c, "insert", InsertContainer(t.D.Placeholder), leasedb.ErrExists)
}

// UpdateContainer implements leasedb.Tx; ErrNotFound when there is no row.
func (t Tx[T]) UpdateContainer(ctx context.Context, c *leasedb.Container) error {
	return t.writeContainer(ctx, c, "update", UpdateContainer(t.D.Placeholder), leasedb.ErrNotFound)
}

func (t Tx[T]) writeContainer(ctx context.Context, c *leasedb.Container, what, q string, absent error) error {
	if err := CheckText(t.D.Name, c.Account, c.Name); err != nil {
		return err
	}
	vals, err := ContainerValues(c, t.D.ToTime)
	if err != nil {
		return err
	}
	return t.exec(ctx, absent, fmt.Sprintf("%s container %s/%s", what, c.Account, c.Name), q, vals...)
}

// ListContainers implements leasedb.Tx. limit <= 0 means no limit.
func (t Tx[T]) ListContainers(ctx context.Context, account, prefix, after string, limit int) ([]*leasedb.Container, error) {
	if err := CheckText(t.D.Name, account, prefix, after); err != nil {
		return nil, err
	}
	cond, args := NameRange(t.D.Placeholder, 2, prefix, after, limit)
	var cs []*leasedb.Container
	err := t.Q.Query(ctx, func(rows Rows) (err error) {
		cs, err = ScanContainers(rows, t.D.FromTime)
		return err
	}, `SELECT `+ContainerCols+` FROM containers WHERE account = `+t.D.Placeholder(1)+` AND `+cond, append([]any{account}, args...)...)
	if err != nil {
		return nil, t.errorf(ctx, err, "list containers %s", account)
	}
	return cs, nil
}

// blobs runs q for rows of BlobCols, followed by the snapshot id when
// snapshot is set (SnapshotCols).
func (t Tx[T]) blobs(ctx context.Context, snapshot bool, q string, args ...any) (bs []*leasedb.Blob, err error) {
	err = t.Q.Query(ctx, func(rows Rows) error {
		if snapshot {
			bs, err = ScanSnapshots(rows, t.D.FromTime)
		} else {
			bs, err = ScanBlobs(rows, t.D.FromTime, nil)
		}
		return err
	}, q, args...)
	return bs, err
}

// ListBlobs implements leasedb.Tx. limit <= 0 means no limit.
func (t Tx[T]) ListBlobs(ctx context.Context, account, container, prefix, after string, limit int) ([]*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, prefix, after); err != nil {
		return nil, err
	}
	p := t.D.Placeholder
	cond, args := NameRange(p, 3, prefix, after, limit)
	bs, err := t.blobs(ctx, false, `SELECT `+BlobCols+` FROM blobs WHERE account = `+p(1)+` AND container = `+p(2)+` AND `+cond,
		append([]any{account, container}, args...)...)
	if err != nil {
		return nil, t.errorf(ctx, err, "list blobs %s/%s", account, container)
	}
	return bs, nil
}

// FindTagged implements leasedb.Tx with FindTagged's query.
func (t Tx[T]) FindTagged(ctx context.Context, account, container string, r leasedb.TagRange, afterContainer, afterName string, limit int) ([]leasedb.TaggedBlob, error) {
	if err := CheckText(t.D.Name, account, container, r.Key, r.Lo, r.Hi, afterContainer, afterName); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%s: find tagged %s/%s: limit %d", t.D.Name, account, container, limit)
	}
	q, args := FindTagged(t.D.Placeholder, account, container, r, afterContainer, afterName, limit)
	out, err := collect(ctx, t.Q, func(rows Rows) (leasedb.TaggedBlob, error) {
		var (
			b    leasedb.TaggedBlob
			tags sql.NullString
		)
		err := rows.Scan(&b.Container, &b.Name, &tags)
		if err == nil {
			b.Tags, err = DecodeTags(tags)
		}
		return b, err
	}, q, args...)
	if err != nil {
		return nil, t.errorf(ctx, err, "find tagged %s/%s", account, container)
	}
	return out, nil
}

// ListEntries implements leasedb.Tx with ListEntries' query: one query
// whose parts are each an ordered range scan of a primary key bounded by
// limit, merged and cut to limit. Staged names come from a recursive walk
// that asks the blocks key for the next name after the last one (one index
// probe per name, not one row per block); those with a blob row are
// dropped, so a committed blob with staged blocks is listed once. Taking
// the first limit of each part is enough: an entry among the first limit of
// the merge is among the first limit of its own part.
func (t Tx[T]) ListEntries(ctx context.Context, account, container, prefix, after, afterSnapshot string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	if err := CheckText(t.D.Name, account, container, prefix, after, afterSnapshot); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%s: list entries %s/%s: limit %d", t.D.Name, account, container, limit)
	}
	q, args := ListEntries(t.D.Placeholder, account, container, prefix, after, afterSnapshot, limit, inc)
	out, err := t.Items(ctx, q, args...)
	if err != nil {
		return nil, t.errorf(ctx, err, "list entries %s/%s", account, container)
	}
	return out, nil
}

// Items runs q, a query in ListEntries' row shape (ScanItems).
func (t Tx[T]) Items(ctx context.Context, q string, args ...any) (items []leasedb.ListItem, err error) {
	err = t.Q.Query(ctx, func(rows Rows) error {
		items, err = ScanItems(rows, t.D.FromTime)
		return err
	}, q, args...)
	return items, err
}

// PutSnapshot implements leasedb.Tx. ON CONFLICT DO NOTHING reports an
// existing snapshot id (ErrExists) without aborting the transaction; a
// missing container is ErrNotFound (in Postgres the transaction is then
// aborted; see its Update). Callers serialize on the name through Blob
// with LockExclusive.
func (t Tx[T]) PutSnapshot(ctx context.Context, b *leasedb.Blob) error {
	if err := CheckText(t.D.Name, b.Account, b.Container, b.Name, b.Snapshot); err != nil {
		return err
	}
	if b.Snapshot == "" {
		return fmt.Errorf("%s: put snapshot %s/%s/%s: empty snapshot id", t.D.Name, b.Account, b.Container, b.Name)
	}
	vals, err := BlobValues(b, t.D.ToTime)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("put snapshot %s/%s/%s@%s", b.Account, b.Container, b.Name, b.Snapshot)
	err = t.exec(ctx, leasedb.ErrExists, what, PutSnapshot(t.D.Placeholder), append(vals, b.Snapshot)...)
	if err != nil && t.D.ForeignKey(err) {
		return fmt.Errorf("%s: %s: container: %w", t.D.Name, what, leasedb.ErrNotFound)
	}
	return err
}

// snapshotWhere selects a name's snapshots (1: account, 2: container, 3:
// name).
func (t Tx[T]) snapshotWhere() string {
	p := t.D.Placeholder
	return ` WHERE account = ` + p(1) + ` AND container = ` + p(2) + ` AND name = ` + p(3)
}

// Snapshot implements leasedb.Tx.
func (t Tx[T]) Snapshot(ctx context.Context, account, container, blob, snapshot string) (*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, blob, snapshot); err != nil {
		return nil, err
	}
	bs, err := t.blobs(ctx, true, `SELECT `+SnapshotCols+` FROM snapshots`+t.snapshotWhere()+` AND snapshot = `+t.D.Placeholder(4),
		account, container, blob, snapshot)
	if err != nil {
		return nil, t.errorf(ctx, err, "get snapshot %s/%s/%s@%s", account, container, blob, snapshot)
	}
	return First(bs), nil
}

// Snapshots implements leasedb.Tx: ordered by snapshot id (byte order:
// COLLATE "C" in Postgres); nil when there are none.
func (t Tx[T]) Snapshots(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return nil, err
	}
	bs, err := t.blobs(ctx, true, `SELECT `+SnapshotCols+` FROM snapshots`+t.snapshotWhere()+` ORDER BY snapshot`, account, container, blob)
	if err != nil {
		return nil, t.errorf(ctx, err, "snapshots %s/%s/%s", account, container, blob)
	}
	return bs, nil
}

// DeleteSnapshot implements leasedb.Tx.
func (t Tx[T]) DeleteSnapshot(ctx context.Context, account, container, blob, snapshot string) error {
	if err := CheckText(t.D.Name, account, container, blob, snapshot); err != nil {
		return err
	}
	return t.exec(ctx, leasedb.ErrNotFound, fmt.Sprintf("delete snapshot %s/%s/%s@%s", account, container, blob, snapshot),
		`DELETE FROM snapshots`+t.snapshotWhere()+` AND snapshot = `+t.D.Placeholder(4), account, container, blob, snapshot)
}

// blockWhere selects a blob name's staged blocks (1: account, 2:
// container, 3: blob).
func (t Tx[T]) blockWhere() string {
	p := t.D.Placeholder
	return ` WHERE account = ` + p(1) + ` AND container = ` + p(2) + ` AND blob = ` + p(3)
}

// Blocks implements leasedb.Tx: oldest first, then by block id (byte
// order: COLLATE "C" in Postgres); nil when there are none.
func (t Tx[T]) Blocks(ctx context.Context, account, container, blob string) ([]leasedb.Block, error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return nil, err
	}
	out, err := collect(ctx, t.Q, func(rows Rows) (leasedb.Block, error) {
		var (
			b  leasedb.Block
			at T
		)
		err := rows.Scan(&b.ID, &b.Key, &b.Size, &at)
		b.StagedAt = t.D.FromTime(at)
		return b, err
	}, `SELECT block_id, key, size, staged_at FROM blocks`+t.blockWhere()+` ORDER BY staged_at, block_id`, account, container, blob)
	if err != nil {
		return nil, t.errorf(ctx, err, "blocks %s/%s/%s", account, container, blob)
	}
	return out, nil
}

// BlockStats implements leasedb.Tx.
func (t Tx[T]) BlockStats(ctx context.Context, account, container, blob string) (count, idLen int, err error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return 0, 0, err
	}
	_, err = t.queryRow(ctx, `SELECT count(*), coalesce(max(length(block_id)), 0) FROM blocks`+t.blockWhere(),
		[]any{account, container, blob}, &count, &idLen)
	if err != nil {
		return 0, 0, t.errorf(ctx, err, "block stats %s/%s/%s", account, container, blob)
	}
	return count, idLen, nil
}

// DeleteBlocks implements leasedb.Tx; deleting no blocks is not an error.
func (t Tx[T]) DeleteBlocks(ctx context.Context, account, container, blob string) error {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return err
	}
	return t.exec(ctx, nil, fmt.Sprintf("delete blocks %s/%s/%s", account, container, blob),
		`DELETE FROM blocks`+t.blockWhere(), account, container, blob)
}

// MoveAdoptedKey implements leasedb.Tx.
func (t Tx[T]) MoveAdoptedKey(ctx context.Context, key string, ref leasedb.BlobRef) error {
	if err := CheckText(t.D.Name, key, ref.Account, ref.Container, ref.Name); err != nil {
		return err
	}
	p := t.D.Placeholder
	return t.exec(ctx, leasedb.ErrNotFound, "move adopted key "+key,
		`UPDATE adopted_keys SET account = `+p(2)+`, container = `+p(3)+`, name = `+p(4)+` WHERE key = `+p(1),
		key, ref.Account, ref.Container, ref.Name)
}

// LeaseCols are the lease columns of a container or blob row, as
// LeaseRows reads them.
const LeaseCols = `lease_id, lease_state, lease_duration, lease_expires, lease_break_at, lease_since`

// LeaseRows runs q, Tx.ListLeases' query in the driver's dialect (rows of
// account, container, blob, kind and LeaseCols), and reads its rows.
func (t Tx[T]) LeaseRows(ctx context.Context, q string, args ...any) ([]leasedb.LeaseRow, error) {
	out, err := collect(ctx, t.Q, func(rows Rows) (leasedb.LeaseRow, error) {
		var (
			r               leasedb.LeaseRow
			kind            int
			exp, brk, since T
		)
		err := rows.Scan(&r.Account, &r.Container, &r.Blob, &kind,
			&r.Lease.ID, &r.Lease.State, &r.Lease.Duration, &exp, &brk, &since)
		r.Lease.Expires, r.Lease.BreakAt, r.Lease.Since = t.D.FromTime(exp), t.D.FromTime(brk), t.D.FromTime(since)
		return r, err
	}, q, args...)
	if err != nil {
		return nil, t.errorf(ctx, err, "list leases")
	}
	return out, nil
}
