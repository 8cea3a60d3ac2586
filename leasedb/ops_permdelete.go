package leasedb

import (
	"context"
	"encoding/xml"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

// Delete Blob deletetype=permanent removes a soft-deleted snapshot or a
// soft-deleted version before its retention passes, when the account's
// DeleteRetentionPolicy allows it (AllowPermanentDelete). It never
// reaches a live blob, snapshot or version: those are deleted (and
// soft-deleted) by the plain Delete Blob.

// permanentDeleteNotAllowed is the answer when the account's
// DeleteRetentionPolicy does not allow permanent delete: the request's
// deletetype is not valid for this account.
func permanentDeleteNotAllowed() error {
	return svcerr.Query(svcerr.InvalidQueryParameterValue, "deletetype", "permanent",
		"the account's DeleteRetentionPolicy is not enabled with AllowPermanentDelete true")
}

// AllowsPermanentDelete reports whether a stored Blob service properties
// document (Set Blob Service Properties) enables its
// DeleteRetentionPolicy with AllowPermanentDelete true. A document that
// does not parse allows nothing.
func AllowsPermanentDelete(doc string) bool {
	var d struct {
		Policy *struct {
			Enabled              string `xml:"Enabled"`
			AllowPermanentDelete string `xml:"AllowPermanentDelete"`
		} `xml:"DeleteRetentionPolicy"`
	}
	if doc == "" || xml.Unmarshal([]byte(doc), &d) != nil || d.Policy == nil {
		return false
	}
	on, err1 := strconv.ParseBool(strings.TrimSpace(d.Policy.Enabled))
	apd, err2 := strconv.ParseBool(strings.TrimSpace(d.Policy.AllowPermanentDelete))
	return err1 == nil && err2 == nil && on && apd
}

// PermanentDeleteBlob is Delete Blob ?snapshot=X (version false) or
// ?versionid=X (version true) with deletetype=permanent: it removes that
// soft-deleted row of ref for good and queues the objects no other row of
// the name references for collection after the grace period (the purge's
// freeing rule). The policy is read in the same transaction, so a Set
// Blob Service Properties that withdraws it is seen by every replica at
// once. A name with no soft-deleted row of that id is 404 BlobNotFound,
// whether or not a live one has the id.
func (d *DB) PermanentDeleteBlob(ctx context.Context, ref BlobRef, id string, version bool) error {
	key := id
	if version {
		key = versionPos + id
	}
	return d.blobTx(ctx, ref, func(tx Tx, now time.Time, b *Blob) error {
		doc, err := tx.ServiceProperties(ctx, ref.Account)
		if err != nil {
			return err
		}
		if !AllowsPermanentDelete(doc) {
			return permanentDeleteNotAllowed()
		}
		row, err := deletedRow(ctx, tx, ref, key)
		if err != nil {
			return err
		}
		if row == nil {
			what := "snapshot"
			if version {
				what = "version"
			}
			return svcerr.Newf(svcerr.BlobNotFound, "The blob has no soft-deleted %s %s (deletetype=permanent removes only soft-deleted snapshots and versions).", what, id)
		}
		return d.dropDeleted(ctx, tx, ref, row, b, now)
	})
}
