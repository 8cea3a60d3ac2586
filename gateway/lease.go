package gateway

import (
	"net/http"
	"strconv"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/google/uuid"
)

// parseLease reads the lease headers of a Lease Blob / Lease Container
// request (x-ms-lease-action, x-ms-lease-id, x-ms-proposed-lease-id,
// x-ms-lease-duration, x-ms-lease-break-period), refusing a malformed or
// missing one before any state is looked at.
func parseLease(r *http.Request) (leasedb.LeaseRequest, error) {
	h := r.Header
	return parseLeaseRequest(leaseHeader(h, hdrLeaseAction), leaseHeader(h, hdrLeaseID),
		leaseHeader(h, hdrProposedLeaseID), leaseHeader(h, hdrLeaseDuration), leaseHeader(h, hdrLeaseBreakPeriod))
}

// leaseStatus is the success status Azure answers per x-ms-lease-action
// (acquire 201, break 202, the others 200): the SDKs accept nothing else.
func leaseStatus(a leasedb.LeaseAction) int {
	switch a {
	case leasedb.LeaseAcquire:
		return http.StatusCreated
	case leasedb.LeaseBreak:
		return http.StatusAccepted
	}
	return http.StatusOK
}

func writeLeaseResult(w http.ResponseWriter, h *headerVals, a leasedb.LeaseAction, res leasedb.LeaseResult) {
	switch a {
	case leasedb.LeaseAcquire, leasedb.LeaseRenew, leasedb.LeaseChange:
		h.set("X-Ms-Lease-Id", res.ID)
	case leasedb.LeaseBreak:
		h.set("X-Ms-Lease-Time", strconv.Itoa(res.BreakTime))
	}
	w.WriteHeader(leaseStatus(a))
}

// newLeaseID is the lease id of an acquire without
// x-ms-proposed-lease-id; "" for every other request, which uses none
// (no random id drawn for it).
func newLeaseID(lr leasedb.LeaseRequest) string {
	if lr.Action == leasedb.LeaseAcquire && lr.ProposedID == "" {
		return uuid.NewString()
	}
	return ""
}

// Lease Blob: PUT ?comp=lease. The outcome by lease state is decided in
// leasedb under the row lock.
func (s *Server) leaseBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	if _, ok := req.query["snapshot"]; ok {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "snapshot", req.query["snapshot"], "snapshots cannot be leased")
	}
	lr, err := parseLease(r)
	if err != nil {
		return err
	}
	cond, err := parseConditions(r.Header)
	if err != nil {
		return err
	}
	b, res, err := s.db.LeaseBlob(r.Context(), req.ref(), lr, cond, newLeaseID(lr))
	if err != nil {
		return err
	}
	h := req.headers(w)
	h.setETagLM(b.ETag, b.LastModified)
	writeLeaseResult(w, h, lr.Action, res)
	return nil
}

// Lease Container: PUT ?restype=container&comp=lease. Only the date
// conditions apply.
func (s *Server) leaseContainer(w http.ResponseWriter, r *http.Request, req *request) error {
	lr, err := parseLease(r)
	if err != nil {
		return err
	}
	cond, err := containerConditions(r, true)
	if err != nil {
		return err
	}
	c, res, err := s.db.LeaseContainer(r.Context(), req.account, req.container, lr, cond, newLeaseID(lr))
	if err != nil {
		return containerLeaseText(err)
	}
	h := req.headers(w)
	h.setETagLM(c.ETag, c.LastModified)
	writeLeaseResult(w, h, lr.Action, res)
	return nil
}

// containerLeaseText words the lease operation refusals for a container
// as Azure does ("... no lease on the container.", "... the lease ID for
// the container."); the table's texts name the blob.
func containerLeaseText(err error) error {
	e, ok := svcerr.As(err)
	if !ok {
		return err
	}
	switch e.Code {
	case svcerr.LeaseNotPresentWithLeaseOperation:
		return svcerr.Newf(e.Code, "There is currently no lease on the container.")
	case svcerr.LeaseIdMismatchWithLeaseOperation:
		return svcerr.Newf(e.Code, "The lease ID specified did not match the lease ID for the container.")
	}
	return err
}

// parsePutLease reads blobgw's put-and-release extension on a write:
// x-ms-lease-action release | acquire | acquire-release; leaseID is the
// write's x-ms-lease-id. Without the header the write behaves exactly as
// Azure's.
func parsePutLease(r *http.Request, leaseID string) (leasedb.PutLease, error) {
	var pl leasedb.PutLease
	h := r.Header
	action := leaseHeader(h, hdrLeaseAction)
	switch action {
	case "":
		return pl, nil
	case leasedb.PutLeaseRelease:
		if leaseID == "" {
			return pl, svcerr.Header(svcerr.MissingRequiredHeader, "x-ms-lease-id", "")
		}
	case leasedb.PutLeaseAcquire:
		lr, err := parseLeaseRequest(string(leasedb.LeaseAcquire), "", leaseHeader(h, hdrProposedLeaseID), leaseHeader(h, hdrLeaseDuration), "")
		if err != nil {
			return pl, err
		}
		pl.Acquire = lr
		pl.NewLeaseID = uuid.NewString()
	case leasedb.PutLeaseAcquireRelease:
	default:
		return pl, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-lease-action", action)
	}
	pl.LeaseAction = action
	return pl, nil
}
