// Package leasedb is blobgw's metadata store: containers, blob rows, ETags,
// leases and the collection queue. Every decision that depends on current
// state (a precondition, a lease check, a commit) is taken inside one
// transaction that holds the row lock, so any number of gateway replicas
// sharing one database behave as one storage account.
//
// The package is layered like a driver: Store and Tx are the small set of
// primitives a database implements (sqlite, postgres); the rules (conditions,
// lease state machine, the rule of each write kind in rules.go) are pure
// functions; the methods of DB combine them inside Store.Update, one ops_*.go
// file per concern (ops_containers.go, ops_blobs.go, ops_blocks.go,
// ops_lease.go, ...), with the helpers they share in ops.go. This package
// never touches blob bytes.
//
// The gateway takes every metadata decision through DB. It calls the Store
// directly only for the collection queue, where there is nothing to decide:
// the collector claims due entries and forgets them once their objects are
// deleted (Store.ClaimDue, Store.Forget in gateway/collector.go), a staged
// object that will never be committed has its intent forgotten once it is
// deleted (Server.discard in gateway/blob_put.go), and the key pool forgets
// the intents of keys it never handed out when it closes (gateway/intents.go).
package leasedb

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by primitives when a row does not exist where one
// is required (for example UpdateContainer on a missing row).
var ErrNotFound = errors.New("leasedb: not found")

// ErrExists is returned by insert primitives when the row already exists.
var ErrExists = errors.New("leasedb: already exists")

// ErrUnavailable marks a failure of the database itself (connection lost or
// refused, server shutting down, too many connections) as opposed to a
// decision. The gateway answers it with 503 ServerBusy, which clients retry.
// It says nothing about whether the transaction committed: unless the error
// also matches ErrCommitUnknown, it did not; with ErrCommitUnknown it may
// have.
var ErrUnavailable = errors.New("leasedb: metadata store unavailable")

// ErrCommitUnknown marks a failure at or after COMMIT whose outcome the
// store cannot know: the connection was lost after COMMIT was sent, the
// database answered nothing in time, or (SQLite) the commit is visible but
// the fsync that makes it durable failed. The transaction may have
// committed. A caller that staged bytes for it must not delete them: the
// upload intent, which the transaction removes when it commits, lets the
// collector delete them exactly when it did not. Every error Update
// returns without this mark comes from a transaction that certainly did not
// commit (refused by fn and rolled back, or failed before COMMIT was sent,
// or refused by the database at COMMIT).
var ErrCommitUnknown = errors.New("leasedb: commit outcome unknown")

// MayHaveCommitted reports whether err, returned by Update (or an
// operation built on it), leaves open that the transaction committed.
func MayHaveCommitted(err error) bool { return errors.Is(err, ErrCommitUnknown) }

// ErrSchemaTooNew is returned by Migrate/Open when the database carries a
// schema version newer than this binary knows.
var ErrSchemaTooNew = errors.New("leasedb: database schema is newer than this blobgw")

// Lease is the stored lease columns of a blob or container row. The
// effective state (expired, broken) is derived from them and the database
// clock at the moment of the locked read; see lease.go.
type Lease struct {
	// ID is the lease id in lowercase hyphenated GUID form; "" when the
	// resource has never been leased or the lease was released/cleared.
	ID string
	// State is the stored state: "" or "available", "leased", "breaking",
	// "broken". "expired" is never stored; it is computed.
	State string
	// Duration is -1 for an infinite lease, 15..60 for a fixed one, 0 when none.
	Duration int
	// Expires is the end of the current fixed term (zero for infinite/none).
	Expires time.Time
	// BreakAt is when a breaking lease becomes broken (zero otherwise).
	BreakAt time.Time
	// Since is when the current lease id was acquired (zero when none);
	// operators use it to find stuck leases.
	Since time.Time
}

// Container is one container row.
type Container struct {
	Account      string
	Name         string
	ETag         string // quoted form, "\"0x...\""
	LastModified time.Time
	Metadata     map[string]string
	PublicAccess string // "", "blob", "container"
	Lease        Lease
	// ACL is the container's stored access policies (at most
	// MaxSignedIdentifiers); nil when none.
	ACL []SignedIdentifier
}

// Props are a blob's system properties (the x-ms-blob-content-* set).
type Props struct {
	ContentType        string
	ContentEncoding    string
	ContentLanguage    string
	ContentDisposition string
	CacheControl       string
	ContentMD5         []byte // nil when unknown
}

// Extent is one immutable backend object, read in order to form the blob,
// or an inline extent (Inline): bytes kept in the row itself.
type Extent struct {
	Key  string `json:"k"`
	Size int64  `json:"n"`
	// Data holds the bytes of an inline extent (Key "", len(Data) ==
	// Size > 0): a small Put Blob's body kept in the metadata row instead
	// of a backend object. Every copy of the row (snapshot, version,
	// soft-deleted row, Copy Blob's shared extents) copies the bytes, so
	// no two rows share them and no key, intent or collection entry
	// exists for them.
	Data []byte `json:"d,omitempty"`
	// BlockID is the block id (base64, as the client sent it) for block
	// blob extents; "" for Put Blob and append blocks.
	BlockID string `json:"id,omitempty"`
	// At and Off place a run of a page blob (pagemap.go): the run is
	// bytes [At, At+Size) of the blob, read from the object at Off. Both
	// are 0 for block and append blobs, whose extents follow each other.
	At  int64 `json:"a,omitempty"`
	Off int64 `json:"o,omitempty"`
}

// Inline reports whether the extent's bytes are in the row (Data), not in
// a backend object. (An extent without a key and without data is a page
// blob's hole in Segments' output, read as zeros.)
func (e Extent) Inline() bool { return e.Key == "" && len(e.Data) > 0 }

// Equal reports whether e and o are the same extent, inline bytes included.
func (e Extent) Equal(o Extent) bool {
	return e.Key == o.Key && e.Size == o.Size && e.BlockID == o.BlockID && e.At == o.At && e.Off == o.Off &&
		bytes.Equal(e.Data, o.Data)
}

// Block is one staged (uncommitted) block of a block blob.
type Block struct {
	ID       string // base64 block id as sent
	Key      string
	Size     int64
	StagedAt time.Time
}

// LeaseRow is one leased container or blob, for operators.
type LeaseRow struct {
	Account   string
	Container string
	Blob      string // "" for a container lease
	Lease     Lease
}

// LeaseFilter narrows ListLeases; empty fields match everything.
type LeaseFilter struct {
	Account   string
	Container string
}

// Blob is one committed blob row.
type Blob struct {
	Account      string
	Container    string
	Name         string
	Type         string // "BlockBlob", "AppendBlob", "PageBlob"
	ETag         string // quoted form
	Created      time.Time
	LastModified time.Time
	Size         int64
	Props        Props
	Metadata     map[string]string
	Extents      []Extent
	// BlockCount is the committed block count (append blobs).
	BlockCount int
	// Snapshot is the snapshot id ("2024-01-01T00:00:00.0000000Z") of a
	// snapshot row; "" for the base blob. Snapshots share the base blob's
	// extents: a key is collected only when no row of the name (base or
	// snapshot) references it any more.
	Snapshot string
	Lease    Lease
	// AccessTier is the tier set by Put Blob / Put Block List / Set Blob
	// Tier (TierHot ... TierArchive on block blobs, where "" is reported
	// as Hot with x-ms-access-tier-inferred; a premium tier P1 ... P80 on
	// page blobs, CanonicalPremiumTier, where "" reports no tier).
	AccessTier string
	// Tags are the blob index tags; nil or empty when none.
	Tags map[string]string
	// Copy describes the Copy Blob that wrote this blob (x-ms-copy-*);
	// nil when none did, or when a Put Blob, Put Block List or Set Blob
	// Properties has changed the blob since.
	Copy *CopyInfo
	// Sealed: an append blob sealed by Append Blob Seal; Append Block is
	// refused (409 BlobIsSealed). Properties, metadata and tags still
	// change; an overwrite starts unsealed.
	Sealed bool
	// VersionID is the blob's version id (x-ms-version-id, SnapshotFormat)
	// when it was written with versioning on; "" otherwise. A row of the
	// versions table always has one.
	VersionID string
	// NonCurrent marks a previous version (a row of the versions table):
	// read-only but for its tier and tags. Previous versions share
	// extents with the other rows of the name like snapshots do.
	NonCurrent bool
	// DeletedTime is when a soft-deleted row (a row of deleted_blobs:
	// Delete Blob with a DeleteRetentionPolicy, or the content an
	// overwrite replaced) was deleted, by the database clock; zero for
	// every live row. DeleteExpires is when the collector may purge it.
	DeletedTime, DeleteExpires time.Time
	// SequenceNumber is a page blob's x-ms-blob-sequence-number (0 for
	// other types). A page blob's Extents are its written runs in blob
	// order, with holes between them (pagemap.go); its Size is its
	// x-ms-blob-content-length, not their sum.
	SequenceNumber int64
}

// CopyInfo is what Get Blob Properties and List Blobs (include=copy) report
// of the copy that wrote a blob. blobgw copies synchronously, so Status is
// always "success" and Progress "n/n".
type CopyInfo struct {
	ID        string    `json:"id"`
	Source    string    `json:"source"` // the source URL, without a SAS signature
	Status    string    `json:"status"`
	Progress  string    `json:"progress"` // "<bytes copied>/<total>"
	Completed time.Time `json:"completed"`
	// Incremental marks a blob written by Incremental Copy Blob (and its
	// snapshots): x-ms-incremental-copy. SourceName ("account/container/
	// name") and SourceSnapshot are the source snapshot last copied, and
	// DestinationSnapshot the snapshot of this blob that copy made
	// (x-ms-copy-destination-snapshot). See incremental.go.
	Incremental         bool   `json:"incremental,omitempty"`
	SourceName          string `json:"srcName,omitempty"`
	SourceSnapshot      string `json:"srcSnapshot,omitempty"`
	DestinationSnapshot string `json:"destSnapshot,omitempty"`
}

// Keys returns the distinct backend keys the row references (a block id
// committed twice references its object twice); inline extents have none.
func (b *Blob) Keys() []string {
	keys := make([]string, 0, len(b.Extents))
	seen := make(map[string]bool, len(b.Extents))
	for _, e := range b.Extents {
		if e.Key != "" && !seen[e.Key] {
			seen[e.Key] = true
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// Store is what a database implements. Implementations must make every Tx
// method safe against concurrent transactions from other processes sharing
// the same database.
type Store interface {
	// Update runs fn in a read-write transaction and commits it when fn
	// returns nil. On a serialization failure or deadlock detected by the
	// database, the implementation rolls back and runs fn again (fn must be
	// safe to re-run). Errors returned by fn are returned unchanged.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction (a consistent snapshot).
	View(ctx context.Context, fn func(Tx) error) error

	// ClaimDue claims up to limit collection entries whose due time has
	// passed (including intents whose deadline passed) and entries claimed
	// more than reclaimAfter ago (their collector died). Claiming is
	// committed before the call returns and is permanent: a claimed intent
	// can no longer be committed (Tx.TakeIntent fails). Concurrent callers
	// never receive the same key while its claim is fresh (Postgres: FOR
	// UPDATE SKIP LOCKED).
	ClaimDue(ctx context.Context, limit int, reclaimAfter time.Duration) ([]string, error)
	// Forget removes collection entries after their objects were deleted
	// and returns how many it removed: a key whose entry another caller
	// already removed (a collector that re-claimed it after reclaimAfter
	// and deleted it too) is not counted again.
	Forget(ctx context.Context, keys []string) (int, error)
	// CollectionKeys lists every key in the collection queue (fsck, tests).
	CollectionKeys(ctx context.Context) ([]string, error)
	// ReferencedKeys calls fn, in byte order and once each, for every
	// backend key that a blob row, a snapshot row, a version row, a staged
	// block or a collection-queue entry (upload intents included)
	// references, all read in one read transaction (blobgw fsck). ref
	// names one row holding the key ("account/container/blob",
	// "...?snapshot=ID" for a snapshot row, "...?versionid=ID" for a
	// version row, "... (staged block ID)" for a staged block; the rows of
	// a soft-deleted container count too, their account being
	// DeletedAccount's "account/version"; a soft-deleted blob row's ref
	// ends in " (soft-deleted)"); it is "" for a key that only
	// the collection queue holds. The database sorts (spilling to disk
	// as it needs) and the rows stream, so memory stays bounded at any
	// count. It stops at fn's first error and returns it, and never runs fn
	// again from the start (no retry).
	ReferencedKeys(ctx context.Context, fn func(key, ref string) error) error
	// QueuedReferencedKeys calls fn, in byte order and once each, for
	// every key that the collection queue holds for deletion (not an
	// upload intent) while a blob, snapshot or version row or a staged
	// block still references it, with one such row named as by
	// ReferencedKeys (blobgw fsck): the collector deletes a due entry's
	// object without looking for references, so each such key is bytes
	// a row needs that are about to go. One read transaction, streamed,
	// no retry.
	QueuedReferencedKeys(ctx context.Context, fn func(key, ref string) error) error

	Close() error
}

// BlobLeaseWriter is an optional Tx method: the write of a lease action on
// a blob (Lease Blob; the operator's break and release), which changes the
// lease columns alone. PutBlob would send every column again, the extents
// among them: a small blob's inline bytes encoded and, on Postgres, their
// TOAST chunks written anew for a row whose content did not change. The
// row must exist (ErrNotFound otherwise) and be locked by the transaction
// (LockBlob, or Blob with LockUpdate).
type BlobLeaseWriter interface {
	SetBlobLease(ctx context.Context, ref BlobRef, l Lease) error
}

// BlobTagsWriter is an optional Tx method: Set Blob Tags' write, which
// changes the tags and the lease columns alone (the blob_tags index rows
// follow the tags), not the content PutBlob would send again. The row
// must exist (ErrNotFound otherwise) and be locked by the transaction.
type BlobTagsWriter interface {
	SetBlobTags(ctx context.Context, ref BlobRef, tags map[string]string, l Lease) error
}

// Tx is one transaction. Times are the database's: Now is read once per
// transaction after the first lock is taken (Postgres clock_timestamp()).
type Tx interface {
	// Now is the database clock, read once per transaction (truncated to
	// microseconds).
	Now(ctx context.Context) (time.Time, error)
	// NextETag returns a new ETag, unique across the whole database forever,
	// in quoted form "\"0x8D...\"" (at least 15 uppercase hex digits).
	NextETag(ctx context.Context) (string, error)

	// Container reads a container row; (nil, nil) when absent. With lock it
	// takes the row lock (FOR UPDATE) for the rest of the transaction. With
	// share it takes a shared lock (FOR SHARE) so the container cannot be
	// deleted while a blob commit in it is running.
	Container(ctx context.Context, account, name string, lock LockMode) (*Container, error)
	// InsertContainer inserts; ErrExists when the name is taken.
	InsertContainer(ctx context.Context, c *Container) error
	// UpdateContainer overwrites every column of an existing row.
	UpdateContainer(ctx context.Context, c *Container) error
	// DeleteContainer deletes the container row, every blob row, snapshot
	// row, version row, soft-deleted row and staged block in it, and returns the backend keys they
	// referenced, once per blob name that referenced each (a key two names
	// of the container share appears twice; see ReleaseKeys).
	DeleteContainer(ctx context.Context, account, name string) ([]string, error)
	// ListContainers returns up to limit containers of account with the
	// prefix whose name is > after (byte order), ordered by name.
	ListContainers(ctx context.Context, account, prefix, after string, limit int) ([]*Container, error)

	// MoveContainer moves the container row (from, name) and every row
	// under it (blob, snapshot and staged block rows, their tag index,
	// the adopted keys they hold) to account to, keeping the name:
	// Delete Container with retention and Restore Container (see
	// DeletedAccount). ErrNotFound when (from, name) is absent, ErrExists
	// when (to, name) is taken. The caller holds the container's lock.
	MoveContainer(ctx context.Context, from, name, to string) error
	// InsertDeletedContainer records a soft-deleted container; ErrExists
	// when (account, name, version) is recorded already.
	InsertDeletedContainer(ctx context.Context, d *DeletedContainer) error
	// DeletedContainer reads one record; (nil, nil) when absent.
	DeletedContainer(ctx context.Context, account, name, version string) (*DeletedContainer, error)
	// RemoveDeletedContainer removes one record; ErrNotFound when absent.
	RemoveDeletedContainer(ctx context.Context, account, name, version string) error
	// ListDeletedContainers returns up to limit records of account with
	// the prefix, ordered by name then version, strictly after (after,
	// afterVersion) in that order (afterVersion "" is before every
	// version of after).
	ListDeletedContainers(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]*DeletedContainer, error)
	// ListDeletedContainerRows is ListDeletedContainers with each
	// record's container row (its Account the live account), in one
	// statement; a record whose row is gone is left out (List Containers
	// include=deleted).
	ListDeletedContainerRows(ctx context.Context, account, prefix, after, afterVersion string, limit int) ([]ListedContainer, error)
	// ExpiredContainers returns up to limit records (any account) whose
	// ExpiresAt is not after before, soonest first, from an index of the
	// expiry times.
	ExpiredContainers(ctx context.Context, before time.Time, limit int) ([]*DeletedContainer, error)

	// Blob reads a blob row; (nil, nil) when absent. With LockExclusive it
	// serializes against every other locking transaction on the same
	// (account, container, name), whether or not the row exists (Postgres:
	// pg_advisory_xact_lock on a hash of the name, then SELECT ... FOR
	// UPDATE; SQLite: the write transaction already serializes).
	Blob(ctx context.Context, account, container, name string, lock LockMode) (*Blob, error)
	// PutBlob inserts or overwrites the row (every column).
	PutBlob(ctx context.Context, b *Blob) error
	// DeleteBlob deletes the row; ErrNotFound when absent.
	DeleteBlob(ctx context.Context, account, container, name string) error
	// ListBlobs returns up to limit blobs of the container with the prefix
	// whose name is > after (byte order), ordered by name.
	ListBlobs(ctx context.Context, account, container, prefix, after string, limit int) ([]*Blob, error)

	// PutSnapshot inserts a snapshot row (b.Snapshot non-empty, every
	// column of b stored as for PutBlob); ErrExists when that snapshot id
	// exists for the name; the container must exist (ErrNotFound).
	PutSnapshot(ctx context.Context, b *Blob) error
	// Snapshot reads one snapshot row; (nil, nil) when absent.
	Snapshot(ctx context.Context, account, container, blob, snapshot string) (*Blob, error)
	// Snapshots lists the snapshot rows of a blob name, oldest first
	// (snapshot ids sort by time in byte order).
	Snapshots(ctx context.Context, account, container, blob string) ([]*Blob, error)
	// DeleteSnapshot deletes one snapshot row; ErrNotFound when absent.
	DeleteSnapshot(ctx context.Context, account, container, blob, snapshot string) error

	// PutVersion inserts a previous-version row (b.VersionID non-empty,
	// every column of b stored as for PutBlob) or, when that version id
	// exists for the name, replaces its tier and tags (the only columns
	// of a version that change); the container must exist (ErrNotFound).
	PutVersion(ctx context.Context, b *Blob) error
	// Version reads one previous-version row (NonCurrent set); (nil, nil)
	// when absent.
	Version(ctx context.Context, account, container, blob, versionID string) (*Blob, error)
	// Versions lists the previous-version rows of a blob name, oldest
	// first (version ids sort by time in byte order).
	Versions(ctx context.Context, account, container, blob string) ([]*Blob, error)
	// NameRows returns the rows of a blob name that may share its current
	// blob's extents, in one statement: its snapshots (by snapshot id),
	// then its previous versions (NonCurrent, oldest first), with its
	// soft-deleted rows among them (DeletedTime set: a soft-deleted
	// snapshot among the snapshots, a soft-deleted version among the
	// versions, a soft-deleted base blob last). Every write that drops
	// extents reads it, so it is one round trip, not two.
	NameRows(ctx context.Context, account, container, blob string) ([]*Blob, error)
	// DeleteVersion deletes one previous-version row; ErrNotFound when
	// absent.
	DeleteVersion(ctx context.Context, account, container, blob, versionID string) error

	// AccountSettings returns the account's stored settings (the zero
	// value when none were ever stored).
	AccountSettings(ctx context.Context, account string) (AccountSettings, error)
	// LockAccountSettings locks the account's settings row for the rest
	// of the transaction (storing the defaults when none were) and
	// returns the settings as the lock found them, for a write that
	// changes one setting and keeps the others (PutAccountSettings).
	LockAccountSettings(ctx context.Context, account string) (AccountSettings, error)
	// PutAccountSettings stores (inserts or replaces) the account's
	// settings.
	PutAccountSettings(ctx context.Context, account string, s AccountSettings) error

	// StageBlock records a staged block for the blob name (no blob row is
	// needed: an uncommitted blob is only its blocks), replacing a block
	// with the same id; it returns the replaced block's key ("" if none).
	StageBlock(ctx context.Context, account, container, blob string, b Block) (string, error)
	// Blocks lists the staged blocks of a blob name, oldest first.
	Blocks(ctx context.Context, account, container, blob string) ([]Block, error)
	// BlockStats counts the staged blocks of a blob name and returns the
	// length of their ids (0 when none), without reading them all: Put
	// Block checks both on every call.
	BlockStats(ctx context.Context, account, container, blob string) (count, idLen int, err error)
	// DeleteBlocks removes every staged block of a blob name (the caller
	// queues their keys for collection).
	DeleteBlocks(ctx context.Context, account, container, blob string) error
	// StaleBlockNames returns up to limit blob names (in no particular
	// order) that have staged blocks, all staged before before: no Put
	// Block on the name since. It reads an index of the staging times,
	// never every block. The caller re-checks each name under its lock.
	StaleBlockNames(ctx context.Context, before time.Time, limit int) ([]BlobRef, error)

	// ListLeases returns every container and blob whose stored lease state
	// is not available (leased, breaking, broken; the caller derives
	// expired), ordered by account, container, blob.
	ListLeases(ctx context.Context, f LeaseFilter) ([]LeaseRow, error)

	// AddIntent records an upload intent: key goes into the collection queue
	// with the given deadline before any byte is written.
	AddIntent(ctx context.Context, key string, deadline time.Time) error
	// TakeIntent removes an unclaimed intent for key and reports whether it
	// was there. A commit that cannot take its intent must fail: the
	// collector has claimed (and may already have deleted) the object.
	TakeIntent(ctx context.Context, key string) (bool, error)
	// AddGC queues keys for deletion at due.
	AddGC(ctx context.Context, keys []string, due time.Time) error

	// ServiceProperties returns the account's stored Blob service
	// properties document; "" when none was ever stored.
	ServiceProperties(ctx context.Context, account string) (string, error)
	// PutServiceProperties stores (inserts or replaces) the account's Blob
	// service properties document.
	PutServiceProperties(ctx context.Context, account, doc string) error
	// LockServiceProperties locks the account's Blob service properties
	// document for the rest of the transaction (creating it "" when none
	// was stored) and returns it as the lock found it: a Set Blob Service
	// Properties that merges into it loses no concurrent one's change.
	LockServiceProperties(ctx context.Context, account string) (string, error)

	// AccountTx keeps the storage accounts and their keys (ops_accounts.go).
	AccountTx
	// SoftDeleteTx keeps soft-deleted blob rows (ops_softdelete.go).
	SoftDeleteTx

	// ListEntries returns up to limit (at least 1) List Blobs entries of
	// the container under prefix, in listing order, strictly after the
	// position (after, afterSnapshot). Listing order is by name (byte
	// order); within a name, with inc.Snapshots, its snapshot rows oldest
	// first (Blob.Snapshot set), then its blob row; a name without a blob
	// row but with staged blocks is, with inc.Uncommitted, one item with
	// Uncommitted set. Position (n, "") is past every entry of n; (n, s) is
	// past n's snapshot s, before n's later snapshots and its blob. Items
	// never have Prefix set. One query, each part of it a range scan of a
	// primary key bounded by limit (staged names are found one index probe
	// each, never by reading every block).
	ListEntries(ctx context.Context, account, container, prefix, after, afterSnapshot string, limit int, inc ListInclude) ([]ListItem, error)
	// ListDelimited is ListEntries with a delimiter (not ""), strictly
	// after the name after: an entry whose name holds delimiter after the
	// prefix is replaced by one item with Prefix set to the name up to and
	// including that first delimiter, once per prefix, in the prefix's
	// place in listing order. Every item counts toward limit. Staged
	// names (inc.Uncommitted) and snapshots (inc.Snapshots) roll up like
	// blobs. It reads about what it returns: one seek per prefix skips
	// every name under it, never the names themselves.
	ListDelimited(ctx context.Context, account, container, prefix, delimiter, after string, limit int, inc ListInclude) ([]ListItem, error)

	// ClaimAdoptedKey records ref as the blob that adopted the backend key
	// (AdoptBlob) and reports true. When the key already has a recorded
	// holder it changes nothing and returns that holder and false. Either
	// way the key's record stays locked until the transaction ends, so two
	// claims of one key serialize (Postgres: the second waits for the
	// first to commit, then sees its holder).
	ClaimAdoptedKey(ctx context.Context, key string, ref BlobRef) (holder BlobRef, claimed bool, err error)
	// MoveAdoptedKey records ref as the holder of a key whose record
	// ClaimAdoptedKey returned in this transaction; ErrNotFound when the
	// key has no record.
	MoveAdoptedKey(ctx context.Context, key string, ref BlobRef) error

	// ShareKeys records that one more blob name references each of keys
	// (distinct; each already referenced by at least one other name): a
	// key's count of names starts at 2. The caller holds the name locks
	// of the names involved.
	ShareKeys(ctx context.Context, keys []string) error
	// ReleaseKeys records that names stopped referencing keys, one name per
	// occurrence (a key may repeat), and returns the keys no name
	// references any more, which the caller queues for collection. A key
	// with no record was referenced by one name only.
	ReleaseKeys(ctx context.Context, keys []string) (free []string, err error)

	// FindTagged returns the blob rows of account (of container only,
	// when it is not "") that have tag r.Key with a value in r, ordered by
	// container and name, from after (afterContainer, afterName), at most
	// limit, with all their tags. It reads an index of the tags (one row
	// per tag of a blob row, kept by the store on every write of a blob
	// row), never every blob: an equality range reads the matching rows
	// in order; a wider range reads and sorts the rows whose value is in
	// it.
	FindTagged(ctx context.Context, account, container string, r TagRange, afterContainer, afterName string, limit int) ([]TaggedBlob, error)
}

// TagRange is a set of values of one tag key: Lo and Hi bound it when
// LoOp (">" or ">=") and HiOp ("<" or "<=") are set. Equality to v is
// {v, ">=", v, "<="}.
type TagRange struct {
	Key      string
	Lo, LoOp string
	Hi, HiOp string
}

// TaggedBlob is one FindTagged result.
type TaggedBlob struct {
	Container, Name string
	Tags            map[string]string
}

// LockMode says which lock a read takes.
type LockMode int

const (
	// LockNone reads without locking.
	LockNone LockMode = iota
	// LockShare takes a shared row lock (containers only).
	LockShare
	// LockExclusive takes the exclusive lock on the name.
	LockExclusive
)
