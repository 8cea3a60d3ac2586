package gateway

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Blob soft delete: Set Blob Service Properties DeleteRetentionPolicy
// turns it on per account (the days are kept in the metadata store's
// account settings, which every commit reads), Delete Blob then keeps what
// it deletes, List Blobs include=deleted shows it, Undelete Blob restores
// it and the collector purges it once the retention passed
// (leasedb/ops_softdelete.go).

// deleteRetention is a DeleteRetentionPolicy element of Set Blob Service
// Properties.
type deleteRetention struct {
	Enabled              string `xml:"Enabled"`
	Days                 string `xml:"Days"`
	AllowPermanentDelete string `xml:"AllowPermanentDelete"`
}

// parseDeleteRetention reads the request's DeleteRetentionPolicy: present
// is false when the document has none (the stored policy stays), days is 0
// when it is disabled. Enabled true needs Days from 1 to 365; anything
// else is 400 InvalidXmlDocument, as Azure answers, before anything is
// stored.
func parseDeleteRetention(body []byte) (days int, present bool, err error) {
	var doc struct {
		Policy *deleteRetention `xml:"DeleteRetentionPolicy"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return 0, false, svcerr.New(svcerr.InvalidXmlDocument)
	}
	p := doc.Policy
	if p == nil {
		return 0, false, nil
	}
	bad := func(why string) (int, bool, error) {
		return 0, false, svcerr.Newf(svcerr.InvalidXmlDocument, "DeleteRetentionPolicy: %s", why)
	}
	enabled, err := strconv.ParseBool(strings.TrimSpace(p.Enabled))
	if err != nil {
		return bad("Enabled must be true or false.")
	}
	if apd := strings.TrimSpace(p.AllowPermanentDelete); apd != "" {
		if _, err := strconv.ParseBool(apd); err != nil {
			return bad("AllowPermanentDelete must be true or false.")
		}
	}
	if v := strings.TrimSpace(p.Days); v != "" {
		// Stored and answered even while off: an Int32, as the SDKs
		// read it.
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return bad("Days must be an integer.")
		}
	}
	if !enabled {
		return 0, true, nil
	}
	d, err := strconv.Atoi(strings.TrimSpace(p.Days))
	if err != nil || d < 1 || d > leasedb.MaxRetentionDays {
		return bad("Days must be from 1 to 365 when the policy is enabled.")
	}
	return d, true, nil
}

// Undelete Blob: PUT ?comp=undelete → 200. It restores the soft-deleted
// blob and its soft-deleted snapshots; with a live blob of the name, the
// snapshots only. x-ms-undelete-source names a deletion of an account
// with a hierarchical namespace, which this gateway has not: refused.
func (s *Server) undeleteBlob(w http.ResponseWriter, r *http.Request, req *request) error {
	if v := r.Header.Get("x-ms-undelete-source"); v != "" {
		e := svcerr.Header(svcerr.UnsupportedHeader, "x-ms-undelete-source", v)
		e.Message = "x-ms-undelete-source applies to accounts with a hierarchical namespace, which this gateway does not have."
		return e
	}
	if _, err := noConditions.parseOnly(r.Header); err != nil {
		return err
	}
	if err := s.db.UndeleteBlob(r.Context(), req.ref()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// writeDeletedProps writes the List Blobs properties of a soft-deleted
// row (include=deleted): when it was deleted and how many days of its
// retention are left.
func writeDeletedProps(x *xmlWriter, b *leasedb.Blob, now time.Time, day time.Duration) {
	x.elem("DeletedTime", httpTime(b.DeletedTime))
	x.elem("RemainingRetentionDays", strconv.Itoa(leasedb.RemainingDays(b, now, day)))
}
