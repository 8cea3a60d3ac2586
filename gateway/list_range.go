package gateway

import (
	"strings"
	"unicode/utf8"

	"github.com/blobgw/blobgw/svcerr"
)

// parseStartFrom reads List Blobs' startFrom and refuses endBefore.
//
// startFrom (inclusive) starts the listing at the first name that is it or
// sorts after it; with a marker the listing resumes after the marker when
// that is further on, so the SDKs, which send startFrom on every page,
// page through it.
//
// endBefore ends the listing before a name only on accounts with Blob
// Listing with Apache Arrow; every other account refuses it with 400
// OperationNotSupportedWithFeatureMissing, which is what blobgw answers
// (it lists in XML only). Clients that shard a listing by name range
// (rclone's parallel listing) then list sequentially.
func parseStartFrom(req *request) (string, error) {
	if v := req.query["endbefore"]; v != "" {
		return "", svcerr.Query(svcerr.OperationNotSupportedWithFeatureMissing, "endBefore", v,
			"EndBefore is supported only with Blob Listing with Apache Arrow")
	}
	v := req.query["startfrom"]
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return "", svcerr.Query(svcerr.InvalidQueryParameterValue, "startFrom", v, "not a blob name")
	}
	return v, nil
}
