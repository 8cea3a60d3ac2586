package leasedb

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr"
)

// DB is the operation layer: each method is one Blob operation's metadata
// decision, taken in one transaction under the row lock, with the rules in
// conditions.go and lease.go. The gateway calls only these.
type DB struct {
	Store Store
	// Grace is how long replaced backend objects stay readable after an
	// overwrite or delete, so a reader that started before finishes on the
	// old bytes.
	Grace time.Duration
	// StrictConditions rejects the header combinations the docs forbid on
	// writes (ValidateWrite); off by default.
	StrictConditions bool
}

// BlobRef names a blob.
type BlobRef struct {
	Account, Container, Name string
}

func (r BlobRef) String() string { return r.Account + "/" + r.Container + "/" + r.Name }

func blobResource(b *Blob) Resource {
	if b == nil {
		return Resource{}
	}
	return Resource{Exists: true, ETag: b.ETag, LastModified: b.LastModified, Tags: b.Tags}
}

func containerResource(c *Container) Resource {
	if c == nil {
		return Resource{}
	}
	return Resource{Exists: true, ETag: c.ETag, LastModified: c.LastModified, Container: true}
}

// ---- containers ----

// CreateContainer creates a container; 409 ContainerAlreadyExists if taken.
func (d *DB) CreateContainer(ctx context.Context, account, name string, meta map[string]string, access string) (*Container, error) {
	var out *Container
	err := d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		c := &Container{Account: account, Name: name, ETag: etag, LastModified: now, Metadata: meta, PublicAccess: access}
		if err := tx.InsertContainer(ctx, c); err != nil {
			if errors.Is(err, ErrExists) {
				return svcerr.New(svcerr.ContainerAlreadyExists)
			}
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// GetContainer reads a container; a lease id, when given, must match an
// active lease (contract §6).
func (d *DB) GetContainer(ctx context.Context, account, name, leaseID string) (*Container, time.Time, error) {
	var out *Container
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockNone)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		if err := CheckReadLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, now, err
}

// SetContainerMetadata replaces the container's metadata (new ETag).
func (d *DB) SetContainerMetadata(ctx context.Context, account, name, leaseID string, cond Conditions, meta map[string]string) (*Container, error) {
	return d.mutateContainer(ctx, account, name, func(tx Tx, now time.Time, c *Container) error {
		if err := CheckReadLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return err
		}
		c.Metadata, c.ETag, c.LastModified = meta, etag, now
		return tx.UpdateContainer(ctx, c)
	})
}

func (d *DB) mutateContainer(ctx context.Context, account, name string, fn func(tx Tx, now time.Time, c *Container) error) (*Container, error) {
	var out *Container
	err := d.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockExclusive)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if err := fn(tx, now, c); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// DeleteContainer deletes the container and every blob in it; their backend
// objects are queued for collection after the grace period. A leased
// container needs its lease id (contract §6); leased blobs inside do not
// block the delete (§5.4).
func (d *DB) DeleteContainer(ctx context.Context, account, name, leaseID string, cond Conditions) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.Container(ctx, account, name, LockExclusive)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if _, err := CheckWriteLease(c.Lease, leaseID, ContainerTarget, now); err != nil {
			return err
		}
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		keys, err := tx.DeleteContainer(ctx, account, name)
		if err != nil {
			return err
		}
		return release(ctx, tx, keys, now.Add(d.Grace))
	})
}

// ListContainers lists one page; next is "" on the last page.
func (d *DB) ListContainers(ctx context.Context, account, prefix, marker string, max int) (out []*Container, next string, now time.Time, err error) {
	err = d.Store.View(ctx, func(tx Tx) error {
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		rows, err := tx.ListContainers(ctx, account, prefix, marker, max+1)
		if err != nil {
			return err
		}
		if len(rows) > max {
			rows = rows[:max]
			next = rows[max-1].Name
		}
		out = rows
		return nil
	})
	return out, next, now, err
}

// ---- blobs ----

// GetBlob reads a committed blob row for Get Blob / Get Blob Properties:
// 404 when absent, then the read lease check, then the read conditions
// (ErrNotModified for 304). The returned time is the database clock, for
// computing lease headers.
func (d *DB) GetBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions) (*Blob, time.Time, error) {
	var out *Blob
	var now time.Time
	err := d.Store.View(ctx, func(tx Tx) error {
		b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, LockNone)
		if err != nil {
			return err
		}
		if b == nil {
			c, err := tx.Container(ctx, ref.Account, ref.Container, LockNone)
			if err != nil {
				return err
			}
			if c == nil {
				return svcerr.New(svcerr.ContainerNotFound)
			}
			return svcerr.New(svcerr.BlobNotFound)
		}
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		if err := CheckReadLease(b.Lease, leaseID, BlobTarget, now); err != nil {
			return err
		}
		if err := EvalRead(cond, blobResource(b)); err != nil {
			// The row is still returned with a 304 so the caller can send
			// its ETag and Last-Modified.
			out = b
			return err
		}
		out = b
		return nil
	})
	return out, now, err
}

// blobTx locks the container (shared) and the blob name (exclusive) and
// hands fn the current row (nil when absent) and the database clock.
func (d *DB) blobTx(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	return d.Store.Update(ctx, func(tx Tx) error { return withBlob(ctx, tx, ref, LockShare, LockExclusive, fn) })
}

// blobView is blobTx without locks, for the pre-checks that refuse a
// request before its body is read (the commit checks again under the lock).
func (d *DB) blobView(ctx context.Context, ref BlobRef, fn func(tx Tx, now time.Time, b *Blob) error) error {
	return d.Store.View(ctx, func(tx Tx) error { return withBlob(ctx, tx, ref, LockNone, LockNone, fn) })
}

func withBlob(ctx context.Context, tx Tx, ref BlobRef, cLock, bLock LockMode, fn func(tx Tx, now time.Time, b *Blob) error) error {
	c, err := tx.Container(ctx, ref.Account, ref.Container, cLock)
	if err != nil {
		return err
	}
	if c == nil {
		return svcerr.New(svcerr.ContainerNotFound)
	}
	b, err := tx.Blob(ctx, ref.Account, ref.Container, ref.Name, bLock)
	if err != nil {
		return err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	return fn(tx, now, b)
}

func (d *DB) checkWrite(cond Conditions) error {
	if d.StrictConditions {
		return ValidateWrite(cond)
	}
	return nil
}

// PutBlobRequest is the metadata half of Put Blob, Put Blob From URL and
// Copy Blob: the bytes are already durable in the backend under the keys
// in Extents, each recorded as an upload intent (or, for a copy that
// shares them, referenced by the source: Copy.SharedExtents).
type PutBlobRequest struct {
	Ref     BlobRef
	Type    string
	Extents []Extent
	BlobContent
	LeaseID string
	Cond    Conditions
	// CreateOnly: the caller may only create (a SAS with c but not w); an
	// existing blob is 403 AuthorizationPermissionMismatch (contract §2.4).
	CreateOnly bool
	PutLease
	// Copy is what sets a Copy Blob destination apart (ops_copy.go); zero
	// for Put Blob and Put Blob From URL.
	Copy CopyTarget
}

// BlobContent is what a write that replaces the whole blob (Put Blob, Put
// Blob From URL, Copy Blob, Put Block List) sets on the new row besides
// its bytes: an overwrite is a new blob, and nothing of the old one's
// properties, metadata, tags (x-ms-tags) or tier (x-ms-access-tier,
// canonical or "") survives.
type BlobContent struct {
	Props      Props
	Metadata   map[string]string
	Tags       map[string]string
	AccessTier string
}

// newRow is the row a whole-blob write commits: the content, the extents
// in order, a new ETag and Last-Modified, and the creation time of the
// blob it replaces (old, nil when there is none).
func newRow(ref BlobRef, typ string, c BlobContent, extents []Extent, lease Lease, etag string, now time.Time, old *Blob) *Blob {
	var size int64
	for _, e := range extents {
		size += e.Size
	}
	b := &Blob{
		Account: ref.Account, Container: ref.Container, Name: ref.Name,
		Type: typ, ETag: etag, Created: now, LastModified: now, Size: size,
		Props: c.Props, Metadata: c.Metadata, Extents: extents, Lease: lease,
		Tags: c.Tags, AccessTier: c.AccessTier,
	}
	if old != nil {
		b.Created = old.Created
	}
	return b
}

// PutLease is blobgw's put-and-release extension on a write (zero for
// plain Azure behaviour): LeaseAction "release" writes then releases the
// lease named by the request's lease id; "acquire" writes then acquires
// with Acquire (proposed id, duration), NewLeaseID being the id when none
// is proposed; "acquire-release" writes under the usual lease check and
// leaves no lease. All in the commit transaction.
type PutLease struct {
	LeaseAction string
	Acquire     LeaseRequest
	NewLeaseID  string
}

// Put-and-release actions accepted on writes.
const (
	PutLeaseRelease        = "release"
	PutLeaseAcquire        = "acquire"
	PutLeaseAcquireRelease = "acquire-release"
)

// applyPutLease applies a put-and-release action to the lease that the
// write's lease check left.
func applyPutLease(lease Lease, req PutLease, now time.Time) (Lease, LeaseResult, error) {
	switch req.LeaseAction {
	case PutLeaseRelease, PutLeaseAcquireRelease:
		return Lease{}, LeaseResult{}, nil
	case PutLeaseAcquire:
		acq := req.Acquire
		acq.Action = LeaseAcquire
		return ApplyLease(lease, acq, req.NewLeaseID, now)
	}
	return lease, LeaseResult{}, nil
}

// Precheck runs the rule of Put Blob, Put Blob From URL and Copy Blob
// (checkPutBlob) against the unlocked row: the write path's step 2, so a
// request that will certainly fail is refused before any byte is read or
// any source is opened. The commit runs the rule again under the lock.
func (d *DB) Precheck(ctx context.Context, req PutBlobRequest) error {
	if err := d.checkWrite(req.Cond); err != nil {
		return err
	}
	// The create-only refusal is left to the commit: applied here it would
	// come before the lease and the conditions and change the answer of a
	// request that fails both ways (a create-only SAS upload with
	// If-None-Match: * over an existing blob is 409 BlobAlreadyExists).
	req.CreateOnly = false
	return d.blobView(ctx, req.Ref, func(tx Tx, now time.Time, b *Blob) error {
		_, err := checkPutBlob(b, req, now)
		return err
	})
}

// PutBlob commits a new version of a blob (Put Blob, Put Blob From URL,
// Copy Blob) under the rule checkPutBlob. The intents of the new extents
// are taken (a commit whose intent the collector claimed fails), the row
// swings to the new extents with a new ETag, and the replaced extents are
// queued for collection after the grace period. An active lease is kept
// when the request names it.
func (d *DB) PutBlob(ctx context.Context, req PutBlobRequest) (*Blob, LeaseResult, error) {
	if err := d.checkWrite(req.Cond); err != nil {
		return nil, LeaseResult{}, err
	}
	rule := func(old *Blob, now time.Time) (Lease, error) { return checkPutBlob(old, req, now) }
	return d.replaceBlob(ctx, req.Ref, rule, req.PutLease, func(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error) {
		var snaps []*Blob
		var err error
		if old != nil || req.Copy.SharedExtents {
			if snaps, err = snapshotsOf(ctx, tx, req.Ref); err != nil {
				return nil, err
			}
		}
		if req.Copy.SharedExtents {
			if err := shareExtents(ctx, tx, req, old, snaps); err != nil {
				return nil, err
			}
		} else {
			for _, e := range req.Extents {
				ok, err := tx.TakeIntent(ctx, e.Key)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, errIntentLost()
				}
			}
		}
		etag, err := tx.NextETag(ctx)
		if err != nil {
			return nil, err
		}
		b := newRow(req.Ref, req.Type, req.BlobContent, req.Extents, lease, etag, now, old)
		b.BlockCount = req.Copy.BlockCount
		b.Sealed = req.Copy.Sealed && req.Type == "AppendBlob"
		if req.Copy.Info != nil {
			ci := *req.Copy.Info
			ci.Completed = now
			b.Copy = &ci
		}
		if old != nil {
			// The new row may share extents with the old one (a restore
			// from a snapshot that shares them too): those stay.
			if err := release(ctx, tx, unreferenced([]*Blob{old}, append(snaps, b)), now.Add(d.Grace)); err != nil {
				return nil, err
			}
		}
		// Put Blob discards every uncommitted block (contract §7.1).
		if err := dropStaged(ctx, tx, req.Ref, now); err != nil {
			return nil, err
		}
		return b, nil
	})
}

// replaceBlob is the shared shape of the writes that replace the whole
// blob (PutBlob, CommitBlocks), in one transaction under the blob lock:
// the write kind's rule, then the put-and-release action on the lease the
// rule left, then commit, which does the write kind's bookkeeping and
// returns the new row (holding that lease) for replaceBlob to store.
func (d *DB) replaceBlob(ctx context.Context, ref BlobRef, rule func(old *Blob, now time.Time) (Lease, error), pl PutLease,
	commit func(tx Tx, now time.Time, old *Blob, lease Lease) (*Blob, error)) (*Blob, LeaseResult, error) {
	var out *Blob
	var leaseRes LeaseResult
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, old *Blob) error {
		lease, err := rule(old, now)
		if err != nil {
			return err
		}
		lease, res, err := applyPutLease(lease, pl, now)
		if err != nil {
			return err
		}
		b, err := commit(tx, now, old, lease)
		if err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out, leaseRes = b, res
		return nil
	})
	return out, leaseRes, err
}

// updateBlob is the shared shape of Set Blob Properties / Set Blob Metadata:
// writeExisting with a new ETag.
func (d *DB) updateBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, mutate func(b *Blob)) (*Blob, error) {
	if err := d.checkWrite(cond); err != nil {
		return nil, err
	}
	return d.writeExisting(ctx, ref, leaseID, cond, true, func(b *Blob) error {
		mutate(b)
		return nil
	})
}

// writeExisting changes an existing blob row under its lock: 404 (or 412
// when a condition needs the blob) when absent, the write lease check and
// update-kind conditions, then fn, which may refuse; with newETag the row
// gets a new ETag and Last-Modified.
func (d *DB) writeExisting(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, newETag bool, fn func(b *Blob) error) (*Blob, error) {
	var out *Blob
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		lease, err := checkUpdate(b, leaseID, cond, now)
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
		b.Lease = lease
		if newETag {
			if b.ETag, err = tx.NextETag(ctx); err != nil {
				return err
			}
			b.LastModified = now
		}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, err
}

// SetBlobProperties replaces the blob's system properties wholesale (as
// Azure does: properties not sent are cleared), keeping Content-MD5 unless
// a new one is given. The blob stops reporting the copy that wrote it.
func (d *DB) SetBlobProperties(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, p Props) (*Blob, error) {
	return d.updateBlob(ctx, ref, leaseID, cond, func(b *Blob) {
		md5 := b.Props.ContentMD5
		b.Copy = nil
		b.Props = p
		if p.ContentMD5 == nil {
			b.Props.ContentMD5 = md5
		}
	})
}

// SetBlobMetadata replaces the blob's metadata.
func (d *DB) SetBlobMetadata(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, meta map[string]string) (*Blob, error) {
	return d.updateBlob(ctx, ref, leaseID, cond, func(b *Blob) { b.Metadata = meta })
}

// DeleteBlob deletes a committed blob; its objects are collected after the
// grace period.
func (d *DB) DeleteBlob(ctx context.Context, ref BlobRef, leaseID string, cond Conditions, snaps DeleteSnapshots) error {
	if err := d.checkWrite(cond); err != nil {
		return err
	}
	return d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		if _, err := checkUpdate(b, leaseID, cond, now); err != nil {
			return err
		}
		snapshots, err := tx.Snapshots(ctx, ref.Account, ref.Container, ref.Name)
		if err != nil {
			return err
		}
		if len(snapshots) > 0 && snaps == KeepSnapshots {
			return svcerr.New(svcerr.SnapshotsPresent)
		}
		var dropped []*Blob
		if snaps == IncludeSnapshots || snaps == OnlySnapshots {
			for _, sn := range snapshots {
				if err := tx.DeleteSnapshot(ctx, ref.Account, ref.Container, ref.Name, sn.Snapshot); err != nil {
					return err
				}
			}
			dropped = snapshots
		}
		var kept []*Blob
		if snaps == OnlySnapshots {
			kept = []*Blob{b}
		} else {
			if err := tx.DeleteBlob(ctx, ref.Account, ref.Container, ref.Name); err != nil {
				return err
			}
			if err := dropStaged(ctx, tx, ref, now); err != nil {
				return err
			}
			dropped = append(dropped, b)
		}
		return release(ctx, tx, unreferenced(dropped, kept), now.Add(d.Grace))
	})
}

// DeleteSnapshots is x-ms-delete-snapshots on Delete Blob.
type DeleteSnapshots int

const (
	// KeepSnapshots: no header; a blob with snapshots is 409 SnapshotsPresent.
	KeepSnapshots DeleteSnapshots = iota
	// IncludeSnapshots: delete the blob and its snapshots.
	IncludeSnapshots
	// OnlySnapshots: delete the snapshots, keep the blob.
	OnlySnapshots
)

// release queues for collection at due the keys that left one blob name
// (keys repeat once per name when several names left at once), except
// those another name still references (a copy shares them: Tx.ShareKeys).
func release(ctx context.Context, tx Tx, keys []string, due time.Time) error {
	free, err := tx.ReleaseKeys(ctx, keys)
	if err != nil {
		return err
	}
	return tx.AddGC(ctx, free, due)
}

// unreferenced returns the distinct keys of the dropped rows that no kept
// row references: snapshots share extents with their base blob, so a key
// is collected only when its last row goes.
func unreferenced(dropped, kept []*Blob) []string {
	used := map[string]bool{}
	for _, k := range kept {
		for _, e := range k.Extents {
			used[e.Key] = true
		}
	}
	var out []string
	for _, b := range dropped {
		for _, k := range b.Keys() {
			if !used[k] {
				used[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// snapshotsOf reads the snapshot rows of ref (the rows that may share the
// base blob's extents).
func snapshotsOf(ctx context.Context, tx Tx, ref BlobRef) ([]*Blob, error) {
	return tx.Snapshots(ctx, ref.Account, ref.Container, ref.Name)
}

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
	// properties or metadata (contract §7.2, §9.1).
	Uncommitted bool
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
}

// maxRune sorts after every character a blob name can contain (names are
// UTF-8; U+10FFFF is a noncharacter), so prefix+maxRune skips every name
// under prefix.
const maxRune = "\U0010FFFF"

// EncodeMarker and DecodeMarker make the listing cursor opaque: it means
// "resume strictly after this name", which keeps paging stable under
// concurrent writes (contract §9.1).
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
// blob still to come).
type listPos struct{ name, snapshot string }

// encodeListMarker makes a List Blobs marker: EncodeMarker's form after a
// whole name, "2" + base64(name NUL snapshot) in the middle of a name's
// snapshots (names cannot contain NUL).
func encodeListMarker(p listPos) string {
	if p.snapshot == "" {
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
	if m[0] != '1' && m[0] != '2' {
		return bad("unknown marker")
	}
	b, err := base64.RawURLEncoding.DecodeString(m[1:])
	if err != nil || !utf8.Valid(b) {
		return bad("malformed marker")
	}
	s := string(b)
	if m[0] == '1' {
		if strings.IndexByte(s, 0) >= 0 {
			return bad("malformed marker")
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
// BlobPrefix item each. Every item counts toward max: blobs, snapshots,
// uncommitted names and prefixes alike (contract §9.1), and the marker can
// resume in the middle of one name's snapshots.
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
		c, err := tx.Container(ctx, account, container, LockNone)
		if err != nil {
			return err
		}
		if c == nil {
			return svcerr.New(svcerr.ContainerNotFound)
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
				item, next := row, listPos{name: name, snapshot: row.Blob.Snapshot}
				if delimiter != "" {
					rest := name[len(prefix):]
					if i := strings.Index(rest, delimiter); i >= 0 {
						p := prefix + rest[:i+len(delimiter)]
						if p == lastPrefix {
							cursor = next
							continue
						}
						item, next, lastPrefix = ListItem{Prefix: p}, listPos{name: p + maxRune}, p
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

// AddIntent records an upload intent for key, collectable after ttl unless
// a commit takes it first.
func (d *DB) AddIntent(ctx context.Context, key string, ttl time.Duration) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		return tx.AddIntent(ctx, key, now.Add(ttl))
	})
}

// AddIntents records upload intents for keys in one transaction, each
// collectable after ttl unless a commit takes it first.
func (d *DB) AddIntents(ctx context.Context, keys []string, ttl time.Duration) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.AddIntent(ctx, k, now.Add(ttl)); err != nil {
				return err
			}
		}
		return nil
	})
}

// LeaseBlob runs one lease action on a blob under the row lock (contract
// §5.3). Lease actions never change the ETag or Last-Modified. newID is
// used when an acquire carries no proposed id.
func (d *DB) LeaseBlob(ctx context.Context, ref BlobRef, req LeaseRequest, cond Conditions, newID string) (*Blob, LeaseResult, error) {
	var out *Blob
	var res LeaseResult
	err := d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		if b == nil {
			return cond.missingBlob()
		}
		if err := EvalWrite(cond, blobResource(b), UpdateWrite); err != nil {
			return err
		}
		l, r, err := ApplyLease(b.Lease, req, newID, now)
		if err != nil {
			return err
		}
		b.Lease, res = l, r
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, res, err
}

// LeaseContainer runs one lease action on a container (contract §6).
func (d *DB) LeaseContainer(ctx context.Context, account, name string, req LeaseRequest, cond Conditions, newID string) (*Container, LeaseResult, error) {
	var res LeaseResult
	c, err := d.mutateContainer(ctx, account, name, func(tx Tx, now time.Time, c *Container) error {
		if err := EvalWrite(cond, containerResource(c), UpdateWrite); err != nil {
			return err
		}
		l, r, err := ApplyLease(c.Lease, req, newID, now)
		if err != nil {
			return err
		}
		c.Lease, res = l, r
		return tx.UpdateContainer(ctx, c)
	})
	return c, res, err
}

// dropStaged removes every staged block of a blob name and queues their
// objects for collection at once: no committed blob references them.
func dropStaged(ctx context.Context, tx Tx, ref BlobRef, now time.Time) error {
	staged, err := tx.Blocks(ctx, ref.Account, ref.Container, ref.Name)
	if err != nil || len(staged) == 0 {
		return err
	}
	keys := make([]string, len(staged))
	for i, b := range staged {
		keys[i] = b.Key
	}
	if err := tx.DeleteBlocks(ctx, ref.Account, ref.Container, ref.Name); err != nil {
		return err
	}
	return tx.AddGC(ctx, keys, now)
}
