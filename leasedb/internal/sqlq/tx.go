package sqlq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// Querier is a driver's transaction as the methods of Tx use it: pgx.Tx
// and *sql.Tx behind a small adapter each, since their query and exec
// calls differ in name and result type.
type Querier interface {
	// Query runs q, hands its rows to scan and closes them; the rows'
	// own error (Err, after Close for pgx) is returned when scan's is nil.
	Query(ctx context.Context, scan func(Rows) error, q string, args ...any) error
	// Exec runs q and returns the number of rows it affected.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
}

// Driver is what differs between the dialects for the methods of Tx. T is
// the driver's scan destination for a nullable time column (see
// ScanBlobs).
type Driver[T any] struct {
	// Name prefixes errors ("leasedb/postgres").
	Name        string
	Placeholder func(n int) string
	FromTime    func(T) time.Time
	ToTime      func(time.Time) any
	// ForeignKey reports whether err is a foreign key violation (a row
	// written for a container that does not exist).
	ForeignKey func(err error) bool

	// SetBlobLease's statement, built on first use.
	setLeaseOnce sync.Once
	setLeaseSQL  string
	// SetBlobAttrs' statement, built on first use.
	setAttrsOnce sync.Once
	setAttrsSQL  string
	// SetBlobTags' statement, built on first use.
	setTagsOnce sync.Once
	setTagsSQL  string
	// SetBlobTier's statement, built on first use.
	setTierOnce sync.Once
	setTierSQL  string
}

// Tx holds the leasedb.Tx methods whose Go is the same in both drivers
// (only the statements' placeholders, time encoding and error codes
// differ, which Driver gives). It is built per transaction.
type Tx[T any] struct {
	D *Driver[T]
	Q Querier
}

// errorf prefixes the driver's name and prefers the context's error (CtxErr).
func (t Tx[T]) errorf(ctx context.Context, err error, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", t.D.Name, fmt.Sprintf(format, args...), CtxErr(ctx, err))
}

// exec runs q and fails with absent (ErrNotFound or ErrExists) when no row
// was affected; what names the statement in errors.
func (t Tx[T]) exec(ctx context.Context, absent error, what string, q string, args ...any) error {
	n, err := t.Q.Exec(ctx, q, args...)
	if err != nil {
		return t.errorf(ctx, err, "%s", what)
	}
	if n == 0 && absent != nil {
		return fmt.Errorf("%s: %s: %w", t.D.Name, what, absent)
	}
	return nil
}

// queryRow scans the first row of q into dest; found is false when q
// returned no row.
func (t Tx[T]) queryRow(ctx context.Context, q string, args []any, dest ...any) (found bool, err error) {
	err = t.Q.Query(ctx, func(rows Rows) error {
		if !rows.Next() {
			return nil
		}
		found = true
		return rows.Scan(dest...)
	}, q, args...)
	return found, err
}

// collect runs query and reads each of its rows with row; nil on error.
func collect[R any](ctx context.Context, q Querier, row func(rows Rows) (R, error), query string, args ...any) ([]R, error) {
	var out []R
	err := q.Query(ctx, func(rows Rows) error {
		for rows.Next() {
			r, err := row(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MoveRefused says why MoveContainer's first statement (the container
// row's copy) copied nothing: no source row (ErrNotFound), or the target
// name taken (ErrExists).
func (t Tx[T]) MoveRefused(ctx context.Context, from, name, to string) error {
	var one int
	found, err := t.queryRow(ctx, ContainerExists(t.D.Placeholder), []any{from, name}, &one)
	switch {
	case err != nil:
		return t.errorf(ctx, err, "move container %s/%s", from, name)
	case !found:
		return fmt.Errorf("%s: move container %s/%s: %w", t.D.Name, from, name, leasedb.ErrNotFound)
	}
	return fmt.Errorf("%s: move container %s/%s to %s: %w", t.D.Name, from, name, to, leasedb.ErrExists)
}

// InsertDeletedContainer implements leasedb.Tx.
func (t Tx[T]) InsertDeletedContainer(ctx context.Context, d *leasedb.DeletedContainer) error {
	if err := CheckText(t.D.Name, d.Account, d.Name, d.Version); err != nil {
		return err
	}
	return t.exec(ctx, leasedb.ErrExists, fmt.Sprintf("insert deleted container %s/%s %s", d.Account, d.Name, d.Version),
		InsertDeleted(t.D.Placeholder), d.Account, d.Name, d.Version, t.D.ToTime(d.DeletedAt), t.D.ToTime(d.ExpiresAt))
}

// DeletedContainer implements leasedb.Tx.
func (t Tx[T]) DeletedContainer(ctx context.Context, account, name, version string) (*leasedb.DeletedContainer, error) {
	if err := CheckText(t.D.Name, account, name, version); err != nil {
		return nil, err
	}
	out, err := t.queryDeleted(ctx, `SELECT `+DeletedCols+` FROM deleted_containers`+DeletedWhere(t.D.Placeholder), account, name, version)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return out[0], nil
}

// RemoveDeletedContainer implements leasedb.Tx.
func (t Tx[T]) RemoveDeletedContainer(ctx context.Context, account, name, version string) error {
	if err := CheckText(t.D.Name, account, name, version); err != nil {
		return err
	}
	return t.exec(ctx, leasedb.ErrNotFound, fmt.Sprintf("remove deleted container %s/%s %s", account, name, version),
		`DELETE FROM deleted_containers`+DeletedWhere(t.D.Placeholder), account, name, version)
}

// ListDeletedContainers implements leasedb.Tx.
func (t Tx[T]) ListDeletedContainers(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]*leasedb.DeletedContainer, error) {
	if err := CheckText(t.D.Name, account, prefix, after, afterVersion); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	q, args := ListDeleted(t.D.Placeholder, account, prefix, after, afterVersion, limit)
	return t.queryDeleted(ctx, q, args...)
}

// ExpiredContainers implements leasedb.Tx.
func (t Tx[T]) ExpiredContainers(ctx context.Context, before time.Time, limit int) ([]*leasedb.DeletedContainer, error) {
	if limit <= 0 {
		return nil, nil
	}
	return t.queryDeleted(ctx, ExpiredDeleted(t.D.Placeholder), t.D.ToTime(before), limit)
}

// queryDeleted reads rows of DeletedCols.
func (t Tx[T]) queryDeleted(ctx context.Context, q string, args ...any) ([]*leasedb.DeletedContainer, error) {
	out, err := collect(ctx, t.Q, func(rows Rows) (*leasedb.DeletedContainer, error) {
		var (
			d        leasedb.DeletedContainer
			del, exp T
		)
		err := rows.Scan(&d.Account, &d.Name, &d.Version, &del, &exp)
		d.DeletedAt, d.ExpiresAt = t.D.FromTime(del), t.D.FromTime(exp)
		return &d, err
	}, q, args...)
	if err != nil {
		return nil, t.errorf(ctx, err, "deleted containers")
	}
	return out, nil
}

// Both drivers' transactions embed Tx, and so offer BlobLeaseWriter,
// BlobTagsWriter and BlobTierWriter.
var (
	_ leasedb.BlobLeaseWriter = Tx[time.Time]{}
	_ leasedb.BlobTagsWriter  = Tx[time.Time]{}
	_ leasedb.BlobTierWriter  = Tx[time.Time]{}
)

// SetBlobTier implements leasedb.BlobTierWriter.
func (t Tx[T]) SetBlobTier(ctx context.Context, ref leasedb.BlobRef, tier string) error {
	if err := CheckText(t.D.Name, ref.Account, ref.Container, ref.Name, tier); err != nil {
		return err
	}
	enc, _, err := EncodeTierTags(&leasedb.Blob{AccessTier: tier})
	if err != nil {
		return err
	}
	t.D.setTierOnce.Do(func() { t.D.setTierSQL = SetBlobTier(t.D.Placeholder) })
	return t.execBlobRow(ctx, "set tier", ref, t.D.setTierSQL, ref.Account, ref.Container, ref.Name, enc)
}

// SetBlobTags implements leasedb.BlobTagsWriter.
func (t Tx[T]) SetBlobTags(ctx context.Context, ref leasedb.BlobRef, tags map[string]string, l leasedb.Lease) error {
	if err := CheckText(t.D.Name, ref.Account, ref.Container, ref.Name, l.ID); err != nil {
		return err
	}
	_, enc, err := EncodeTierTags(&leasedb.Blob{Tags: tags})
	if err != nil {
		return err
	}
	t.D.setTagsOnce.Do(func() { t.D.setTagsSQL = SetBlobTags(t.D.Placeholder) })
	return t.execBlobRow(ctx, "set tags", ref, t.D.setTagsSQL, ref.Account, ref.Container, ref.Name, enc,
		l.ID, l.State, l.Duration, t.D.ToTime(l.Expires), t.D.ToTime(l.BreakAt), t.D.ToTime(l.Since))
}

// execBlobRow runs q, a write of ref's row: ErrNotFound when the row is
// not there. The error's text (what names the write) is built only when
// there is one.
func (t Tx[T]) execBlobRow(ctx context.Context, what string, ref leasedb.BlobRef, q string, args ...any) error {
	n, err := t.Q.Exec(ctx, q, args...)
	if err != nil {
		return t.errorf(ctx, err, "%s of %s", what, ref)
	}
	if n == 0 {
		return fmt.Errorf("%s: %s of %s: %w", t.D.Name, what, ref, leasedb.ErrNotFound)
	}
	return nil
}

// SetBlobLease implements leasedb.BlobLeaseWriter. Lease Blob is a small
// operation on the hot path: its statement text is built once per driver,
// and an error's text only when there is one.
func (t Tx[T]) SetBlobLease(ctx context.Context, ref leasedb.BlobRef, l leasedb.Lease) error {
	if err := CheckText(t.D.Name, ref.Account, ref.Container, ref.Name, l.ID); err != nil {
		return err
	}
	t.D.setLeaseOnce.Do(func() { t.D.setLeaseSQL = SetBlobLease(t.D.Placeholder) })
	return t.execBlobRow(ctx, "set lease", ref, t.D.setLeaseSQL, ref.Account, ref.Container, ref.Name,
		l.ID, l.State, l.Duration, t.D.ToTime(l.Expires), t.D.ToTime(l.BreakAt), t.D.ToTime(l.Since))
}

// SetBlobAttrs writes the columns of b that a plain Set Blob Metadata or
// Set Blob Properties changes (SetBlobAttrs' statement), not its extents:
// the write of a leasedb.ReplaceWrite with Attrs. A row that is not there
// is ErrNotFound.
func (t Tx[T]) SetBlobAttrs(ctx context.Context, b *leasedb.Blob) error {
	ref := leasedb.BlobRef{Account: b.Account, Container: b.Container, Name: b.Name}
	if err := CheckText(t.D.Name, ref.Account, ref.Container, ref.Name, b.Lease.ID); err != nil {
		return err
	}
	vals, err := BlobAttrArgs(b, t.D.ToTime)
	if err != nil {
		return err
	}
	t.D.setAttrsOnce.Do(func() { t.D.setAttrsSQL = SetBlobAttrs(t.D.Placeholder) })
	return t.execBlobRow(ctx, "set properties", ref, t.D.setAttrsSQL, vals...)
}

// PutVersion implements leasedb.Tx. A missing container is ErrNotFound
// (in Postgres the transaction is then aborted; see its Update). Callers
// serialize on the name through Blob with LockExclusive.
func (t Tx[T]) PutVersion(ctx context.Context, b *leasedb.Blob) error {
	if err := CheckText(t.D.Name, b.Account, b.Container, b.Name, b.VersionID); err != nil {
		return err
	}
	if b.VersionID == "" {
		return fmt.Errorf("%s: put version %s/%s/%s: empty version id", t.D.Name, b.Account, b.Container, b.Name)
	}
	vals, err := BlobValues(b, t.D.ToTime)
	if err != nil {
		return err
	}
	if _, err := t.Q.Exec(ctx, PutVersion(t.D.Placeholder), vals...); err != nil {
		if t.D.ForeignKey(err) {
			return fmt.Errorf("%s: put version %s/%s/%s@%s: container: %w", t.D.Name, b.Account, b.Container, b.Name, b.VersionID, leasedb.ErrNotFound)
		}
		return t.errorf(ctx, err, "put version %s/%s/%s@%s", b.Account, b.Container, b.Name, b.VersionID)
	}
	return nil
}

// versionWhere selects a name's versions (1: account, 2: container, 3:
// name).
func (t Tx[T]) versionWhere() string {
	p := t.D.Placeholder
	return ` WHERE account = ` + p(1) + ` AND container = ` + p(2) + ` AND name = ` + p(3)
}

// Version implements leasedb.Tx.
func (t Tx[T]) Version(ctx context.Context, account, container, blob, versionID string) (*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, blob, versionID); err != nil {
		return nil, err
	}
	bs, err := t.versions(ctx, `SELECT `+VersionCols+` FROM versions`+t.versionWhere()+` AND version_id = `+t.D.Placeholder(4),
		account, container, blob, versionID)
	if err != nil {
		return nil, t.errorf(ctx, err, "get version %s/%s/%s@%s", account, container, blob, versionID)
	}
	return First(bs), nil
}

// Versions implements leasedb.Tx: ordered by version id (byte order:
// COLLATE "C" in Postgres); nil when there are none.
func (t Tx[T]) Versions(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return nil, err
	}
	bs, err := t.versions(ctx, `SELECT `+VersionCols+` FROM versions`+t.versionWhere()+` ORDER BY version_id`, account, container, blob)
	if err != nil {
		return nil, t.errorf(ctx, err, "versions %s/%s/%s", account, container, blob)
	}
	return bs, nil
}

func (t Tx[T]) versions(ctx context.Context, q string, args ...any) (bs []*leasedb.Blob, err error) {
	err = t.Q.Query(ctx, func(rows Rows) error {
		bs, err = ScanVersions(rows, t.D.FromTime)
		return err
	}, q, args...)
	return bs, err
}

// DeleteVersion implements leasedb.Tx.
func (t Tx[T]) DeleteVersion(ctx context.Context, account, container, blob, versionID string) error {
	if err := CheckText(t.D.Name, account, container, blob, versionID); err != nil {
		return err
	}
	return t.exec(ctx, leasedb.ErrNotFound, fmt.Sprintf("delete version %s/%s/%s@%s", account, container, blob, versionID),
		`DELETE FROM versions`+t.versionWhere()+` AND version_id = `+t.D.Placeholder(4), account, container, blob, versionID)
}

// NameRows implements leasedb.Tx.
func (t Tx[T]) NameRows(ctx context.Context, account, container, blob string) ([]*leasedb.Blob, error) {
	if err := CheckText(t.D.Name, account, container, blob); err != nil {
		return nil, err
	}
	items, err := t.Items(ctx, NameRows(t.D.Placeholder), account, container, blob)
	if err != nil {
		return nil, t.errorf(ctx, err, "rows of %s/%s/%s", account, container, blob)
	}
	return NameRowBlobs(items), nil
}

// AccountSettings implements leasedb.Tx.
func (t Tx[T]) AccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if err := CheckText(t.D.Name, account); err != nil {
		return leasedb.AccountSettings{}, err
	}
	var v, days int
	if _, err := t.queryRow(ctx, `SELECT versioning, delete_retention_days FROM account_settings WHERE account = `+t.D.Placeholder(1), []any{account}, &v, &days); err != nil {
		return leasedb.AccountSettings{}, t.errorf(ctx, err, "account settings %s", account)
	}
	return leasedb.AccountSettings{Versioning: v != 0, DeleteRetentionDays: days}, nil
}

// LockAccountSettings implements leasedb.Tx: the upsert takes the row's
// lock (on Postgres, at READ COMMITTED, after waiting for a concurrent
// writer, whose settings it then returns) and changes nothing stored.
func (t Tx[T]) LockAccountSettings(ctx context.Context, account string) (leasedb.AccountSettings, error) {
	if err := CheckText(t.D.Name, account); err != nil {
		return leasedb.AccountSettings{}, err
	}
	var v, days int
	if _, err := t.queryRow(ctx, `INSERT INTO account_settings (account, versioning, delete_retention_days) VALUES (`+t.D.Placeholder(1)+`, 0, 0)
		ON CONFLICT (account) DO UPDATE SET versioning = account_settings.versioning
		RETURNING versioning, delete_retention_days`, []any{account}, &v, &days); err != nil {
		return leasedb.AccountSettings{}, t.errorf(ctx, err, "lock account settings %s", account)
	}
	return leasedb.AccountSettings{Versioning: v != 0, DeleteRetentionDays: days}, nil
}

// PutAccountSettings implements leasedb.Tx.
func (t Tx[T]) PutAccountSettings(ctx context.Context, account string, s leasedb.AccountSettings) error {
	if err := CheckText(t.D.Name, account); err != nil {
		return err
	}
	return t.exec(ctx, nil, "put account settings "+account,
		PutAccountSettings(t.D.Placeholder), account, BoolInt(s.Versioning), s.DeleteRetentionDays)
}

// ServiceProperties implements leasedb.Tx: "" when none are stored.
func (t Tx[T]) ServiceProperties(ctx context.Context, account string) (string, error) {
	if err := CheckText(t.D.Name, account); err != nil {
		return "", err
	}
	var doc string
	if _, err := t.queryRow(ctx, `SELECT doc FROM service_properties WHERE account = `+t.D.Placeholder(1), []any{account}, &doc); err != nil {
		return "", t.errorf(ctx, err, "service properties %s", account)
	}
	return doc, nil
}

// LockServiceProperties implements leasedb.Tx: the upsert takes the row's
// lock (on Postgres, at READ COMMITTED, after waiting for a concurrent
// writer, whose document it then returns) and changes nothing stored.
func (t Tx[T]) LockServiceProperties(ctx context.Context, account string) (string, error) {
	if err := CheckText(t.D.Name, account); err != nil {
		return "", err
	}
	var doc string
	if _, err := t.queryRow(ctx, `INSERT INTO service_properties (account, doc) VALUES (`+t.D.Placeholder(1)+`, '')
		ON CONFLICT (account) DO UPDATE SET doc = service_properties.doc RETURNING doc`, []any{account}, &doc); err != nil {
		return "", t.errorf(ctx, err, "lock service properties %s", account)
	}
	return doc, nil
}

// PutServiceProperties implements leasedb.Tx.
func (t Tx[T]) PutServiceProperties(ctx context.Context, account, doc string) error {
	if err := CheckText(t.D.Name, account, doc); err != nil {
		return err
	}
	return t.exec(ctx, nil, "put service properties "+account,
		`INSERT INTO service_properties (account, doc) VALUES (`+Placeholders(t.D.Placeholder, 2)+`)
		ON CONFLICT (account) DO UPDATE SET doc = excluded.doc`, account, doc)
}

// StaleBlockNames implements leasedb.Tx. The names with a block staged
// before the cutoff come from a range scan of blocks_staged_at; each is
// then kept only if the primary key (prefixed by the name) holds no block
// staged since.
func (t Tx[T]) StaleBlockNames(ctx context.Context, before time.Time, limit int) ([]leasedb.BlobRef, error) {
	if limit <= 0 {
		return nil, nil
	}
	p := t.D.Placeholder
	out, err := collect(ctx, t.Q, func(rows Rows) (leasedb.BlobRef, error) {
		var r leasedb.BlobRef
		err := rows.Scan(&r.Account, &r.Container, &r.Name)
		return r, err
	}, `SELECT o.account, o.container, o.blob
		FROM (SELECT DISTINCT account, container, blob FROM blocks WHERE staged_at < `+p(1)+`) o
		WHERE NOT EXISTS (SELECT 1 FROM blocks n
			WHERE n.account = o.account AND n.container = o.container AND n.blob = o.blob AND n.staged_at >= `+p(1)+`)
		LIMIT `+p(2), t.D.ToTime(before), limit)
	if err != nil {
		return nil, t.errorf(ctx, err, "stale block names")
	}
	return out, nil
}

// ReferencedKeys runs q (rows of key and referrer) and hands each row to
// fn (Store.ReferencedKeys, in the driver's read-only transaction).
func (t Tx[T]) ReferencedKeys(ctx context.Context, q string, fn func(key, ref string) error) error {
	var fnErr error
	err := t.Q.Query(ctx, func(rows Rows) error {
		for rows.Next() {
			var key, ref string
			if err := rows.Scan(&key, &ref); err != nil {
				return err
			}
			if fnErr = fn(key, ref); fnErr != nil {
				return fnErr
			}
		}
		return nil
	}, q)
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return t.errorf(ctx, err, "referenced keys")
	}
	return nil
}
