package leasedb

// The lease state machine of Lease Blob and Lease Container as pure
// functions: no I/O and no clock reads. Callers read the database clock once
// per transaction (Tx.Now) and pass it in as now, so every replica evaluates
// a lease the same way.
//
// Stored form. The functions below only ever produce these canonical rows:
//
//	available  Lease{State: "available"} (release) or Lease{} (cleared by a write)
//	leased     {ID, "leased", Duration -1, zero Expires}            infinite
//	           {ID, "leased", Duration 15..60, Expires}             fixed
//	breaking   {ID, "breaking", BreakAt}
//	broken     {ID, "broken"}
//
// Duration and Expires describe the leased term only and are zero in every
// other state: no operation needs them once a lease is breaking or broken
// (renew and change are refused there, acquire sets a new duration). The
// states "expired" and "broken" are also reached lazily from a stored
// "leased"/"breaking" row whose Expires/BreakAt has passed; such rows are left
// as they are until an operation rewrites them.

import (
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// LeaseState is the effective lease state sent as x-ms-lease-state.
type LeaseState string

// The five values of x-ms-lease-state.
const (
	LeaseAvailable LeaseState = "available"
	LeaseLeased    LeaseState = "leased"
	LeaseExpired   LeaseState = "expired"
	LeaseBreaking  LeaseState = "breaking"
	LeaseBroken    LeaseState = "broken"
)

// active reports whether the state locks the resource (x-ms-lease-status
// "locked"): writes then need the lease id.
func (s LeaseState) active() bool { return s == LeaseLeased || s == LeaseBreaking }

// infinite reports whether a stored leased row is an infinite lease. Every
// other duration, including a corrupt 0, is treated as fixed, so a row
// without a usable Expires counts as expired rather than locked forever.
func (l Lease) infinite() bool { return l.Duration < 0 }

// Effective computes the lease state at now from the stored columns
// (x-ms-lease-state): a fixed lease whose Expires is ≤ now is expired and a
// breaking lease whose BreakAt is ≤ now is broken, both keeping their ID. An
// empty State is available.
//
// Our choice, no source says: a stored "expired" (never written by this package) reads
// as expired; an unknown State reads as available so a corrupt row cannot
// lock a resource with no way out.
func (l Lease) Effective(now time.Time) LeaseState {
	switch LeaseState(l.State) {
	case LeaseLeased:
		if !l.infinite() && !now.Before(l.Expires) {
			return LeaseExpired
		}
		return LeaseLeased
	case LeaseBreaking:
		if !now.Before(l.BreakAt) {
			return LeaseBroken
		}
		return LeaseBreaking
	case LeaseBroken:
		return LeaseBroken
	case LeaseExpired:
		return LeaseExpired
	default:
		return LeaseAvailable
	}
}

// Headers returns the values of x-ms-lease-status ("locked"/"unlocked"),
// x-ms-lease-state and x-ms-lease-duration ("fixed"/"infinite", "" when the
// header must be omitted: every state but leased) at now, as Get Blob
// Properties and Get Container Properties report them.
// List Blobs and List Containers use the same values for <LeaseStatus>,
// <LeaseState> and <LeaseDuration>.
func (l Lease) Headers(now time.Time) (status, state, duration string) {
	eff := l.Effective(now)
	status = "unlocked"
	if eff.active() {
		status = "locked"
	}
	if eff == LeaseLeased {
		duration = "fixed"
		if l.infinite() {
			duration = "infinite"
		}
	}
	return status, string(eff), duration
}

// LeaseAction is the value of x-ms-lease-action.
type LeaseAction string

// The values of x-ms-lease-action on Lease Blob and Lease Container.
const (
	LeaseAcquire LeaseAction = "acquire"
	LeaseRenew   LeaseAction = "renew"
	LeaseChange  LeaseAction = "change"
	LeaseRelease LeaseAction = "release"
	LeaseBreak   LeaseAction = "break"
)

// LeaseRequest is a validated Lease Blob / Lease Container request.
type LeaseRequest struct {
	Action LeaseAction
	// ID is x-ms-lease-id, normalized; "" for acquire and break, which do
	// not use it.
	ID string
	// ProposedID is x-ms-proposed-lease-id, normalized; "" when absent or
	// when the action does not use it.
	ProposedID string
	// Duration is the acquire duration: -1 (infinite) or 15..60; 0 for
	// other actions.
	Duration int
	// BreakPeriod is the break period: -1 when the header was absent (break
	// naturally), else 0..60; -1 for other actions.
	BreakPeriod int
}

// LeaseResult is what a successful lease operation returns to the client.
type LeaseResult struct {
	// ID is x-ms-lease-id to return: "" for release and break.
	ID string
	// BreakTime is x-ms-lease-time for break: whole seconds until the lease
	// is broken, 0 when it is broken now.
	BreakTime int
}

// ValidLeaseDuration reports whether d is an acquire duration the service
// takes: -1 (infinite) or 15..60 seconds.
func ValidLeaseDuration(d int) bool { return d == -1 || (d >= 15 && d <= 60) }

// sameLeaseID compares two normalized lease ids; an empty id matches nothing.
func sameLeaseID(a, b string) bool { return a != "" && strings.EqualFold(a, b) }

// ApplyLease runs one lease operation (Lease Blob: outcomes by lease state;
// Lease Container has the same table) against the stored columns l at now. newID is the id to use when
// acquire has no proposed id (the caller generates a random v4 GUID). It
// returns the columns to store and the response values, or a 409
// *svcerr.Error with the code of that table's cell; on error the returned Lease
// is l unchanged. req must be a validated request (a Duration outside
// -1/15..60 on acquire is reported as 400 InvalidHeaderValue).
//
// Timing: a fixed lease gets Expires = now + Duration seconds, an infinite
// one a zero Expires. Renew restarts a fixed lease with its original
// duration. Break:
//
//	leased fixed:    no period → breaking until Expires; 0 → broken now;
//	                 N → breaking until now + min(N, Expires-now)
//	leased infinite: no period or 0 → broken now; N → breaking until now+N
//	breaking:        no period → unchanged; 0 → broken now;
//	                 N → BreakAt = min(BreakAt, now+N)
//	broken, expired: → broken now
//
// Our choice, no source says: x-ms-lease-time is the time left until BreakAt rounded UP
// to whole seconds (0 when broken now), so a client that waits that long
// always finds the lease broken. BreakAt itself is not rounded.
func ApplyLease(l Lease, req LeaseRequest, newID string, now time.Time) (Lease, LeaseResult, error) {
	nl, res, err := applyLease(l, req, newID, now)
	if err != nil {
		return nl, res, err
	}
	// Since records when the current lease was taken: an acquire from a
	// state where nobody held the lease starts it now; every other
	// transition that keeps a lease id keeps it; no id, no time.
	switch {
	case nl.ID == "":
		nl.Since = time.Time{}
	case req.Action == LeaseAcquire && l.Effective(now) != LeaseLeased:
		nl.Since = now
	default:
		nl.Since = l.Since
	}
	return nl, res, nil
}

func applyLease(l Lease, req LeaseRequest, newID string, now time.Time) (Lease, LeaseResult, error) {
	eff := l.Effective(now)
	fail := func(code svcerr.Code) (Lease, LeaseResult, error) {
		return l, LeaseResult{}, svcerr.New(code)
	}
	owner := sameLeaseID(req.ID, l.ID) // x-ms-lease-id names the current lease

	switch req.Action {
	case LeaseAcquire:
		if !ValidLeaseDuration(req.Duration) {
			return l, LeaseResult{}, svcerr.Newf(svcerr.InvalidHeaderValue, "The lease duration %d is not -1 or 15 to 60 seconds.", req.Duration)
		}
		proposedIsCurrent := sameLeaseID(req.ProposedID, l.ID)
		switch eff {
		case LeaseLeased:
			// Re-acquiring with the current id applies the new duration
			// and restarts the clock (and may switch fixed↔infinite).
			if !proposedIsCurrent {
				return fail(svcerr.LeaseAlreadyPresent)
			}
		case LeaseBreaking:
			if proposedIsCurrent {
				return fail(svcerr.LeaseIsBreakingAndCannotBeAcquired)
			}
			return fail(svcerr.LeaseAlreadyPresent)
		}
		// available, broken, expired, or leased by the proposed id.
		// Acquire after a natural expiry is immediate, as the Lease Blob
		// outcome table and Azurite allow (its prose warns of a wait of up
		// to a minute).
		id := req.ProposedID
		if id == "" {
			id = newID
		}
		if id == "" {
			return l, LeaseResult{}, svcerr.Newf(svcerr.InternalError, "leasedb: acquire without a proposed or generated lease id")
		}
		nl := Lease{ID: id, State: string(LeaseLeased), Duration: req.Duration}
		if req.Duration > 0 {
			nl.Expires = now.Add(time.Duration(req.Duration) * time.Second)
		}
		return nl, LeaseResult{ID: id}, nil

	case LeaseRenew:
		if !owner {
			// Every state, including available after release or after a
			// write cleared an expired lease (recorded from Azure in
			// azure-sdk-for-java issue #23140; Azurite wrongly renews there,
			// Azurite issue #2352).
			return fail(svcerr.LeaseIdMismatchWithLeaseOperation)
		}
		switch eff {
		case LeaseLeased, LeaseExpired:
			nl := l
			if !l.infinite() {
				nl.Expires = now.Add(time.Duration(l.Duration) * time.Second)
			}
			return nl, LeaseResult{ID: l.ID}, nil
		case LeaseBreaking, LeaseBroken:
			return fail(svcerr.LeaseIsBrokenAndCannotBeRenewed)
		}
		// Available with a matching id cannot happen in the canonical
		// form (release and clearing drop the id); keep the table's code.
		return fail(svcerr.LeaseIdMismatchWithLeaseOperation)

	case LeaseChange:
		// Lease Blob documents only 409 for change on available, broken or
		// expired; the codes are Azurite's (unverified against Azure).
		switch eff {
		case LeaseLeased:
			switch {
			case owner:
				nl := l
				nl.ID = req.ProposedID
				return nl, LeaseResult{ID: nl.ID}, nil
			case sameLeaseID(req.ProposedID, l.ID):
				// B→A where A is current: a retried change that already
				// happened; succeed without change.
				return l, LeaseResult{ID: l.ID}, nil
			}
			return fail(svcerr.LeaseIdMismatchWithLeaseOperation)
		case LeaseBreaking:
			if owner {
				return fail(svcerr.LeaseIsBreakingAndCannotBeChanged)
			}
			return fail(svcerr.LeaseIdMismatchWithLeaseOperation)
		}
		return fail(svcerr.LeaseNotPresentWithLeaseOperation)

	case LeaseRelease:
		// Release of an expired lease succeeds once, then 409 (recorded from
		// Azure in Azurite issue #1767); release on available is 409
		// LeaseIdMismatchWithLeaseOperation (the documentation gives only
		// 409; the code is Azurite's).
		if eff == LeaseAvailable || !owner {
			return fail(svcerr.LeaseIdMismatchWithLeaseOperation)
		}
		return Lease{State: string(LeaseAvailable)}, LeaseResult{}, nil

	case LeaseBreak:
		// Break needs no lease id: any authorized caller may break.
		broken := Lease{ID: l.ID, State: string(LeaseBroken)}
		var breakAt time.Time
		switch eff {
		case LeaseAvailable:
			return fail(svcerr.LeaseNotPresentWithLeaseOperation)
		case LeaseBroken, LeaseExpired:
			return broken, LeaseResult{}, nil
		case LeaseLeased:
			switch {
			case req.BreakPeriod == 0:
				return broken, LeaseResult{}, nil
			case l.infinite() && req.BreakPeriod < 0:
				return broken, LeaseResult{}, nil
			case l.infinite():
				breakAt = now.Add(time.Duration(req.BreakPeriod) * time.Second)
			case req.BreakPeriod < 0:
				breakAt = l.Expires // break at the end of the current term
			default:
				breakAt = earlier(l.Expires, now.Add(time.Duration(req.BreakPeriod)*time.Second))
			}
		case LeaseBreaking:
			switch {
			case req.BreakPeriod == 0:
				return broken, LeaseResult{}, nil
			case req.BreakPeriod < 0:
				breakAt = l.BreakAt
			default:
				breakAt = earlier(l.BreakAt, now.Add(time.Duration(req.BreakPeriod)*time.Second))
			}
		}
		nl := l
		if eff == LeaseLeased || !breakAt.Equal(l.BreakAt) {
			nl = Lease{ID: l.ID, State: string(LeaseBreaking), BreakAt: breakAt}
		}
		return nl, LeaseResult{BreakTime: secondsUntil(now, breakAt)}, nil
	}
	return l, LeaseResult{}, svcerr.Newf(svcerr.InvalidHeaderValue, "Unknown lease action %q.", req.Action)
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// secondsUntil is t-now in whole seconds, rounded up; 0 when t ≤ now.
func secondsUntil(now, t time.Time) int {
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// LeaseTarget says whether a lease check is for a blob or a container; it
// selects the …WithBlobOperation or …WithContainerOperation codes.
type LeaseTarget int

const (
	// BlobTarget checks a blob's lease (x-ms-lease-id on blob operations).
	BlobTarget LeaseTarget = iota
	// ContainerTarget checks a container's lease (x-ms-lease-id on container
	// operations).
	ContainerTarget
)

func (t LeaseTarget) mismatch() svcerr.Code {
	if t == ContainerTarget {
		return svcerr.LeaseIdMismatchWithContainerOperation
	}
	return svcerr.LeaseIdMismatchWithBlobOperation
}

func (t LeaseTarget) notPresent() svcerr.Code {
	if t == ContainerTarget {
		return svcerr.LeaseNotPresentWithContainerOperation
	}
	return svcerr.LeaseNotPresentWithBlobOperation
}

// idMissing is LeaseIdMissing worded for the target, as Azure words it
// ("There is currently a lease on the blob / the container and ...").
func (t LeaseTarget) idMissing() *svcerr.Error {
	if t == ContainerTarget {
		return svcerr.Newf(svcerr.LeaseIdMissing, "There is currently a lease on the container and no lease ID was specified in the request.")
	}
	return svcerr.New(svcerr.LeaseIdMissing)
}

// lapsed is the code for an id sent to an expired or broken lease.
//
// Our choice, unverified against Azure: blobs answer LeaseLost ("the lease … has expired",
// the text real deployments return on Delete Blob with an expired lease),
// whether or not the id matches the lapsed lease; containers answer
// LeaseNotPresentWithContainerOperation as the Lease Container
// documentation and Azurite do. Both are 412.
func (t LeaseTarget) lapsed() svcerr.Code {
	if t == ContainerTarget {
		return svcerr.LeaseNotPresentWithContainerOperation
	}
	return svcerr.LeaseLost
}

// CheckWriteLease enforces the lease on a write (Put Blob, Put Block, Put
// Block List, Append Block, Set Blob Properties/Metadata/Tags, Delete Blob,
// the Copy Blob destination; Delete Container). leaseID is the
// normalized x-ms-lease-id, "" when none was sent. It returns the lease
// columns to store with the write, or a 412 *svcerr.Error:
//
//	sent \ state  available   leased/breaking (A)   broken/expired (A)
//	none          proceed     LeaseIdMissing        proceed, lease cleared
//	A             NotPresent  proceed, kept         LeaseLost (containers: NotPresent)
//	B             NotPresent  IdMismatch            LeaseLost (containers: NotPresent)
//
// A write without an id on an expired or broken lease clears it (the zero
// Lease), so a later renew by the old holder fails as on Azure (Azurite
// wrongly accepts it: Azurite issue #2352); otherwise the lease is returned
// unchanged (it survives a Put Blob, Put Block List or Copy Blob overwrite
// with the right id).
func CheckWriteLease(l Lease, leaseID string, target LeaseTarget, now time.Time) (Lease, error) {
	eff := l.Effective(now)
	if leaseID == "" {
		switch eff {
		case LeaseLeased, LeaseBreaking:
			return l, target.idMissing()
		case LeaseBroken, LeaseExpired:
			return Lease{}, nil
		}
		return l, nil
	}
	if err := checkLeaseID(l, eff, leaseID, target); err != nil {
		return l, err
	}
	return l, nil
}

// CheckReadLease enforces the lease on a read (Get Blob, Get Blob
// Properties/Metadata/Tags, Get Block List; Snapshot Blob; every container
// operation except Delete Container and Lease Container). Without
// an id the lease is ignored; with one it must name the active
// (leased/breaking) lease, failing with the same 412 codes as
// CheckWriteLease.
func CheckReadLease(l Lease, leaseID string, target LeaseTarget, now time.Time) error {
	if leaseID == "" {
		return nil
	}
	return checkLeaseID(l, l.Effective(now), leaseID, target)
}

// checkLeaseID is the shared rule for a request that carries leaseID.
func checkLeaseID(l Lease, eff LeaseState, leaseID string, target LeaseTarget) error {
	switch eff {
	case LeaseLeased, LeaseBreaking:
		if sameLeaseID(leaseID, l.ID) {
			return nil
		}
		return svcerr.New(target.mismatch())
	case LeaseBroken, LeaseExpired:
		return svcerr.New(target.lapsed())
	}
	return svcerr.New(target.notPresent())
}
