package leasedb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// DeletedContainer is one soft-deleted container (Delete Container with a
// retention): its container row and every row under it are kept, moved to
// the account DeletedAccount(Account, Version), until Restore Container
// moves them back or ExpiresAt passes and the collector purges them.
type DeletedContainer struct {
	Account, Name string
	// Version is the deleted container version List Containers
	// (include=deleted) reports and Restore Container names
	// (x-ms-deleted-container-version): 16 uppercase hex digits of the
	// deletion time in 100 ns units since 1601, as Azure's look
	// ("01D60F8BB59A4652"), unique per account and name.
	Version   string
	DeletedAt time.Time
	ExpiresAt time.Time
}

// DeletedAccount is the hidden account that holds the rows of a
// soft-deleted container. An account name never contains '/', so no
// request addresses it and no query of a live account meets its rows,
// while the collector, fsck and the leak checks still count them as
// references (Store.ReferencedKeys reads every account).
func DeletedAccount(account, version string) string { return account + "/" + version }

// IsDeletedAccount reports whether account is a DeletedAccount.
func IsDeletedAccount(account string) bool { return strings.Contains(account, "/") }

// filetimeEpoch is 1601-01-01 to 1970-01-01 in 100 ns units.
const filetimeEpoch = 116444736000000000

// deletedVersion is the version of a container deleted at t.
func deletedVersion(t time.Time) uint64 {
	return uint64(t.UnixNano()/100) + filetimeEpoch
}

// RemainingDays is List Containers' RemainingRetentionDays at now: whole
// days left, a started day counting as one.
func (d *DeletedContainer) RemainingDays(now time.Time) int {
	left := d.ExpiresAt.Sub(now)
	if left <= 0 {
		return 0
	}
	return int((left + 24*time.Hour - 1) / (24 * time.Hour))
}

// softDeleteContainer keeps the container (locked by the caller) and
// everything in it for retention: its rows move to a hidden account and a
// record names them, so the name is free at once. The container's own
// lease ends with the delete (its holder deleted it); the blobs keep
// theirs.
func softDeleteContainer(ctx context.Context, tx Tx, c *Container, now time.Time, retention time.Duration) error {
	if c.Lease != (Lease{}) {
		c.Lease = Lease{}
		if err := tx.UpdateContainer(ctx, c); err != nil {
			return err
		}
	}
	rec := &DeletedContainer{Account: c.Account, Name: c.Name, DeletedAt: now, ExpiresAt: now.Add(retention)}
	// Two deletes of one name within 100 ns (a host clock that stands
	// still) take the next version.
	for v := deletedVersion(now); ; v++ {
		rec.Version = fmt.Sprintf("%016X", v)
		err := tx.InsertDeletedContainer(ctx, rec)
		if errors.Is(err, ErrExists) {
			continue
		}
		if err != nil {
			return err
		}
		return tx.MoveContainer(ctx, c.Account, c.Name, DeletedAccount(c.Account, rec.Version))
	}
}

// RestoreContainer is Restore Container: the soft-deleted container
// (account, name, version) comes back under its name with everything it
// held. An unknown or expired version is 404 ContainerNotFound; a name
// taken again since is 409 ContainerAlreadyExists, and the deleted
// container stays restorable.
func (d *DB) RestoreContainer(ctx context.Context, account, name, version string) error {
	return d.Store.Update(ctx, func(tx Tx) error {
		hidden := DeletedAccount(account, version)
		c, err := tx.Container(ctx, hidden, name, LockExclusive)
		if err != nil {
			return err
		}
		rec, err := tx.DeletedContainer(ctx, account, name, version)
		if err != nil {
			return err
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if c == nil || rec == nil || !now.Before(rec.ExpiresAt) {
			return svcerr.New(svcerr.ContainerNotFound)
		}
		live, err := tx.Container(ctx, account, name, LockExclusive)
		if err != nil {
			return err
		}
		if live != nil {
			return svcerr.New(svcerr.ContainerAlreadyExists)
		}
		if err := tx.MoveContainer(ctx, hidden, name, account); err != nil {
			if errors.Is(err, ErrExists) { // created since the check
				return svcerr.New(svcerr.ContainerAlreadyExists)
			}
			return err
		}
		return tx.RemoveDeletedContainer(ctx, account, name, version)
	})
}

// PurgeExpiredContainers deletes up to limit soft-deleted containers whose
// retention has passed by the database clock, with everything in them, as
// Delete Container without retention does: their objects go to the
// collection queue after the grace period (those another name still
// shares stay). Each goes in its own transaction, re-checked under the
// container's lock, so a restore that wins keeps it. It returns how many
// it purged.
func (d *DB) PurgeExpiredContainers(ctx context.Context, limit int) (int, error) {
	var recs []*DeletedContainer
	err := d.Store.View(ctx, func(tx Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		recs, err = tx.ExpiredContainers(ctx, now, limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	purged := 0
	for _, r := range recs {
		done := false
		err := d.Store.Update(ctx, func(tx Tx) error {
			done = false // the transaction may run again
			hidden := DeletedAccount(r.Account, r.Version)
			c, err := tx.Container(ctx, hidden, r.Name, LockExclusive)
			if err != nil {
				return err
			}
			rec, err := tx.DeletedContainer(ctx, r.Account, r.Name, r.Version)
			if err != nil || rec == nil {
				return err // restored meanwhile
			}
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			if now.Before(rec.ExpiresAt) {
				return nil
			}
			if c != nil {
				keys, err := tx.DeleteContainer(ctx, hidden, r.Name)
				if err != nil {
					return err
				}
				if err := release(ctx, tx, keys, now.Add(d.Grace)); err != nil {
					return err
				}
			}
			done = true
			return tx.RemoveDeletedContainer(ctx, r.Account, r.Name, r.Version)
		})
		if err != nil {
			return purged, err
		}
		if done {
			purged++
		}
	}
	return purged, nil
}

// ListedContainer is one List Containers entry: a live container, or (with
// include=deleted) a soft-deleted one, Deleted set and Container its row
// as it was deleted.
type ListedContainer struct {
	*Container
	Deleted *DeletedContainer
}

// ListContainersDeleted lists one page of List Containers, with the
// soft-deleted containers too when withDeleted (include=deleted): by name,
// a live container before the deleted ones of its name, those by version.
// The marker is a name (past the live container of that name) or
// "name/version" (past that deleted container); next is "" on the last
// page.
func (d *DB) ListContainersDeleted(ctx context.Context, account, prefix, marker string, max int, withDeleted bool) (out []ListedContainer, next string, now time.Time, err error) {
	after, afterVersion, _ := strings.Cut(marker, "/")
	err = d.Store.View(ctx, func(tx Tx) error {
		out, next = nil, ""
		if now, err = tx.Now(ctx); err != nil {
			return err
		}
		// A live container sorts before the deleted ones of its name, so
		// past any position in name n the live ones left are past n.
		live, err := tx.ListContainers(ctx, account, prefix, after, max+1)
		if err != nil {
			return err
		}
		// The deleted rows come in batches: an expired one is skipped,
		// so a batch can run out before the page is full while more
		// rows follow it.
		var dead []ListedContainer
		more := withDeleted
		deadAfter, deadAfterVersion := after, afterVersion
		for len(out) <= max {
			if len(dead) == 0 && more {
				if dead, err = tx.ListDeletedContainerRows(ctx, account, prefix, deadAfter, deadAfterVersion, max+1); err != nil {
					return err
				}
				more = len(dead) == max+1
			}
			if len(live) == 0 && len(dead) == 0 {
				break
			}
			if len(live) > 0 && (len(dead) == 0 || live[0].Name <= dead[0].Deleted.Name) {
				out = append(out, ListedContainer{Container: live[0]})
				live = live[1:]
				continue
			}
			rec := dead[0]
			dead = dead[1:]
			deadAfter, deadAfterVersion = rec.Deleted.Name, rec.Deleted.Version
			if !now.Before(rec.Deleted.ExpiresAt) {
				continue // expired, the collector has yet to purge it
			}
			out = append(out, rec)
		}
		if len(out) > max {
			out = out[:max]
			last := out[max-1]
			next = last.Name
			if last.Deleted != nil {
				next += "/" + last.Deleted.Version
			}
		}
		return nil
	})
	return out, next, now, err
}
