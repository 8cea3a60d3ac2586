package gateway

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// Access tiers and blob index tags: x-ms-access-tier / x-ms-tags on
// uploads, and Set/Get Blob Tags (Set Blob Tier is in blob_tier.go, Find
// Blobs by Tags in find_blobs.go). The decisions (lease, conditions,
// x-ms-if-tags) are taken in leasedb under the row lock; this file parses
// and renders.

// maxTagsBody bounds a Set Blob Tags body: ten tags of at most 128 + 256
// characters fit many times over.
const maxTagsBody = 64 << 10

// parseTagsHeader reads x-ms-tags: the tags in URL query form
// ("k1=v1&k2=v2", keys and values percent- or plus-encoded), as the SDKs
// send them on Put Blob and Put Block List. Absent or empty: no tags.
func parseTagsHeader(h http.Header) (map[string]string, error) {
	vals := h[hdrKey("x-ms-tags")]
	if len(vals) == 0 || (len(vals) == 1 && vals[0] == "") {
		return nil, nil
	}
	if len(vals) > 1 {
		return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-tags", strings.Join(vals, ","))
	}
	q, err := url.ParseQuery(vals[0])
	if err != nil {
		return nil, svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-tags", vals[0])
	}
	tags := make(map[string]string, len(q))
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, svcerr.Newf(svcerr.InvalidTag, "The tag key %q appears more than once.", k)
		}
		tags[k] = vs[0]
	}
	if err := leasedb.ValidateTags(tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// parseTierHeader reads x-ms-access-tier on an upload: one of Hot, Cool,
// Cold, Archive in any case (stored canonical) on a block blob, or a
// premium tier (P4 ... P80) on a page blob of pageSize bytes (Put Blob:
// x-ms-blob-content-length; Copy Blob: the source's length); "" when
// absent.
//
// Premium page blob tiers are answered as a premium page blob account
// answers them: Put Blob and Copy Blob of a page blob, and Set Blob Tier
// on a page blob, store the tier (canonical spelling), and Get Blob, Get
// Blob Properties and List Blobs report it. The tier sets a disk's size,
// IOPS and bandwidth class on Azure; here only its size limit applies
// (leasedb.PremiumTier: 409 BlobTierInadequateForContentLength). A
// premium tier on a block or append blob is not a tier at all (400
// InvalidHeaderValue), and Hot, Cool, Cold and Archive on a page blob stay
// refused.
func parseTierHeader(h http.Header, blobType string, pageSize int64) (string, error) {
	v := hdrGet(h, "x-ms-access-tier")
	if v == "" {
		return "", nil
	}
	if blobType == "PageBlob" {
		if tier, premium, err := leasedb.PremiumTier(v, pageSize); premium {
			if err != nil {
				return "", err
			}
			return tier, nil
		}
	}
	tier, ok := leasedb.CanonicalTier(v)
	if !ok || blobType != "BlockBlob" {
		return "", svcerr.Header(svcerr.InvalidHeaderValue, "x-ms-access-tier", v)
	}
	return tier, nil
}

// reportedTier is the access tier a read reports for b, if any: block
// blobs always report one (Hot, inferred, when none was set), page blobs
// their premium tier only when one was set, append blobs none.
func reportedTier(b *leasedb.Blob) (tier string, inferred, ok bool) {
	switch {
	case b.AccessTier != "" && (b.Type == "BlockBlob" || b.Type == "PageBlob"):
		return b.AccessTier, false, true
	case b.Type == "BlockBlob":
		return leasedb.TierHot, true, true
	}
	return "", false, false
}

// writeTierTagHeaders adds the tier (reportedTier) and tag count to Get
// Blob / Get Blob Properties; x-ms-tag-count only when the blob has tags.
func writeTierTagHeaders(h http.Header, b *leasedb.Blob) {
	// Canonical names: h.Set copies any other spelling first (every Get
	// Blob and Get Blob Properties of a block blob passes here).
	if tier, inferred, ok := reportedTier(b); ok {
		h.Set("X-Ms-Access-Tier", tier)
		h.Set("X-Ms-Access-Tier-Inferred", strconv.FormatBool(inferred))
	}
	if len(b.Tags) > 0 {
		h.Set("X-Ms-Tag-Count", strconv.Itoa(len(b.Tags)))
	}
}

// writeListTier adds the tier (reportedTier; AccessTierInferred only when
// inferred) inside a List Blobs <Properties> element, right after
// BlobType, where Azure lists it.
func writeListTier(x *xmlWriter, b *leasedb.Blob) {
	if tier, inferred, ok := reportedTier(b); ok {
		x.elem("AccessTier", tier)
		if inferred {
			x.elem("AccessTierInferred", "true")
		}
	}
}

// sendTagSet answers Get Blob Tags with the tag set.
func sendTagSet(w http.ResponseWriter, tags map[string]string) {
	var x xmlWriter
	x.WriteString(`<?xml version="1.0" encoding="utf-8"?>`)
	writeTagSet(&x, tags)
	x.send(w)
}

// writeTagSet writes <Tags><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tags>
// with keys in byte order.
func writeTagSet(x *xmlWriter, tags map[string]string) {
	x.open("Tags")
	x.open("TagSet")
	for _, k := range sortedKeys(tags) {
		x.open("Tag")
		x.elem("Key", k)
		x.elem("Value", tags[k])
		x.close("Tag")
	}
	x.close("TagSet")
	x.close("Tags")
}

type xmlTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlTags struct {
	XMLName xml.Name `xml:"Tags"`
	TagSet  []xmlTag `xml:"TagSet>Tag"`
}

// tagConds parses the lease id and the conditions (blobTagConditions) Get
// and Set Blob Tags carry, in that order.
func tagConds(r *http.Request) (string, leasedb.Conditions, error) {
	leaseID, err := leaseIDHeader(r.Header)
	if err != nil {
		return "", leasedb.Conditions{}, err
	}
	cond, err := tagConditions(r.Header)
	return leaseID, cond, err
}

// tagConditions reads the conditions of Get and Set Blob Tags: x-ms-if-tags
// and the x-ms-blob-if-* spelling. A plain If-Match, If-None-Match,
// If-Modified-Since or If-Unmodified-Since is 400
// ConditionHeadersNotSupported, never ignored: Azure documents only
// x-ms-if-tags (and x-ms-lease-id) for these operations, and its SDKs
// refuse to send the plain ones. Get Blob Tags answers no ETag or
// Last-Modified, so no browser cache revalidates it with them.
func tagConditions(h http.Header) (leasedb.Conditions, error) {
	return blobTagConditions.parseOnly(h)
}

// Set Blob Tags: PUT ?comp=tags with a <Tags> body → 204. The tags replace
// the blob's; ETag and Last-Modified stay (Set Blob Tags does not change
// them on Azure).
func (s *Server) setBlobTags(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, cond, err := tagConds(r)
	if err != nil {
		return err
	}
	body, err := readSmallBody(r, maxTagsBody)
	if err != nil {
		return err
	}
	// Content-MD5 or x-ms-content-crc64, as Put Block List's.
	if _, err := bodySums(r.Header, body); err != nil {
		return err
	}
	var doc xmlTags
	if err := unmarshalXMLDoc(body, &doc); err != nil {
		return err
	}
	var tags map[string]string
	if len(doc.TagSet) > 0 {
		tags = make(map[string]string, len(doc.TagSet))
	}
	for _, t := range doc.TagSet {
		if _, dup := tags[t.Key]; dup {
			return svcerr.Newf(svcerr.InvalidTag, "The tag key %q appears more than once.", t.Key)
		}
		tags[t.Key] = t.Value
	}
	if err := leasedb.ValidateTags(tags); err != nil {
		return err
	}
	vid, err := versionID(req)
	if err != nil {
		return err
	}
	if vid != "" {
		_, err = s.db.SetVersionTags(r.Context(), req.ref(), vid, leaseID, cond, tags)
	} else {
		_, err = s.db.SetBlobTags(r.Context(), req.ref(), leaseID, cond, tags)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Get Blob Tags: GET ?comp=tags → 200 with the <Tags> document.
func (s *Server) getBlobTags(w http.ResponseWriter, r *http.Request, req *request) error {
	leaseID, cond, err := tagConds(r)
	if err != nil {
		return err
	}
	vid, err := versionID(req)
	if err != nil {
		return err
	}
	var tags map[string]string
	if vid != "" {
		var v *leasedb.Blob
		v, err = s.db.GetVersionTags(r.Context(), req.ref(), vid, leaseID, cond)
		if v != nil {
			tags = v.Tags
		}
	} else {
		// The row's head alone: never a small blob's bytes.
		var h *leasedb.BlobHead
		h, err = s.db.GetBlobTags(r.Context(), req.ref(), leaseID, cond)
		if h != nil {
			tags = h.Tags
		}
	}
	if err != nil {
		return err
	}
	sendTagSet(w, tags)
	return nil
}
