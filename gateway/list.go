package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// xmlWriter builds listing bodies by hand: entries must interleave Blob and
// BlobPrefix in name order (List Blobs with a delimiter), which struct tags
// cannot say.
type xmlWriter struct{ strings.Builder }

func (x *xmlWriter) elem(name, value string) {
	if value == "" {
		x.WriteString("<" + name + " />")
		return
	}
	x.WriteString("<" + name + ">")
	xmlEscape(&x.Builder, value)
	x.WriteString("</" + name + ">")
}

// openEnumeration writes the XML declaration and the opening
// EnumerationResults tag a listing answers with (List Containers, List
// Blobs, Find Blobs by Tags): its ServiceEndpoint and, when containerName
// is not empty (List Blobs), its ContainerName.
func (x *xmlWriter) openEnumeration(r *http.Request, req *request, containerName string) {
	x.WriteString(`<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="`)
	xmlEscape(&x.Builder, serviceEndpoint(r, req))
	if containerName != "" {
		x.WriteString(`" ContainerName="`)
		xmlEscape(&x.Builder, containerName)
	}
	x.WriteString(`">`)
}

// echoPaging repeats the paging parameters of a List Containers or List
// Blobs request: Prefix when the request has one (even empty), Marker
// when it is not empty, MaxResults when the request set it.
func (x *xmlWriter) echoPaging(req *request, prefix, marker string, max int) {
	if _, ok := req.query["prefix"]; ok {
		x.elem("Prefix", prefix)
	}
	if marker != "" {
		x.elem("Marker", marker)
	}
	if _, ok := req.query["maxresults"]; ok {
		x.elem("MaxResults", strconv.Itoa(max))
	}
}

func (x *xmlWriter) open(name string)  { x.WriteString("<" + name + ">") }
func (x *xmlWriter) close(name string) { x.WriteString("</" + name + ">") }

func (x *xmlWriter) metadata(meta map[string]string) {
	x.open("Metadata")
	for _, k := range sortedKeys(meta) {
		x.elem(k, meta[k])
	}
	x.close("Metadata")
}

func (x *xmlWriter) send(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(x.String()))
}

func serviceEndpoint(r *http.Request, req *request) string {
	// The scheme the client used (a TLS-terminating trusted proxy says
	// https; proxy.go).
	scheme := "http"
	if req.peer.https {
		scheme = "https"
	}
	host := r.Host
	if strings.HasPrefix(strings.ToLower(host), req.account+".") {
		return scheme + "://" + host + "/"
	}
	return scheme + "://" + host + "/" + req.account + "/"
}

// parseMaxResults reads maxresults: default and cap 5000; ≤0 is 400
// OutOfRangeQueryParameterValue. It is a 32-bit integer, as the service
// reads it: a larger number is 400 InvalidQueryParameterValue, as text is,
// never capped to a page of 5000.
func parseMaxResults(req *request) (int, error) {
	v, ok := req.query["maxresults"]
	if !ok || v == "" {
		return 5000, nil
	}
	n64, err := strconv.ParseInt(v, 10, 32)
	n := int(n64)
	if err != nil {
		return 0, svcerr.Query(svcerr.InvalidQueryParameterValue, "maxresults", v, "not an integer")
	}
	if n <= 0 {
		return 0, svcerr.Query(svcerr.OutOfRangeQueryParameterValue, "maxresults", v, "must be at least 1")
	}
	return min(n, 5000), nil
}

// parseInclude validates include= against the values the operation knows.
func parseInclude(req *request, known ...string) (map[string]bool, error) {
	out := map[string]bool{}
	v := req.query["include"]
	if v == "" {
		return out, nil
	}
	for _, p := range strings.Split(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		ok := false
		for _, k := range known {
			ok = ok || k == p
		}
		if !ok {
			return nil, svcerr.Query(svcerr.InvalidQueryParameterValue, "include", v, "unknown value "+p)
		}
		out[p] = true
	}
	return out, nil
}

// systemContainerLogs is the one system container an account here can
// hold: storage analytics' $logs ($root and $web are listed as any other).
const systemContainerLogs = "$logs"

// List Containers: GET /?comp=list → 200.
func (s *Server) listContainers(w http.ResponseWriter, r *http.Request, req *request) error {
	max, err := parseMaxResults(req)
	if err != nil {
		return err
	}
	include, err := parseInclude(req, "metadata", "deleted", "system")
	if err != nil {
		return err
	}
	prefix, marker := req.query["prefix"], req.query["marker"]
	// include=deleted adds the soft-deleted containers (Restore Container
	// takes the Version each reports).
	rows, next, now, err := s.db.ListContainersDeleted(r.Context(), req.account, prefix, marker, max, include["deleted"])
	if err != nil {
		return err
	}
	var x xmlWriter
	x.openEnumeration(r, req, "")
	x.echoPaging(req, prefix, marker, max)
	x.open("Containers")
	for _, c := range rows {
		if c.Name == systemContainerLogs && !include["system"] {
			// $logs, a system container, is listed only with
			// include=system (List Containers); a page may come out one
			// short, its marker still right.
			continue
		}
		x.open("Container")
		x.elem("Name", c.Name)
		if c.Deleted != nil {
			x.elem("Deleted", "true")
			x.elem("Version", c.Deleted.Version)
		}
		x.open("Properties")
		x.elem("Last-Modified", httpTime(c.LastModified))
		x.elem("Etag", c.ETag)
		for _, p := range containerProps(c.Container, now) {
			x.elem(p.elem, p.value)
		}
		if c.Deleted != nil {
			x.elem("DeletedTime", httpTime(c.Deleted.DeletedAt))
			x.elem("RemainingRetentionDays", strconv.Itoa(c.Deleted.RemainingDays(now)))
		}
		x.close("Properties")
		if include["metadata"] {
			x.metadata(c.Metadata)
		}
		x.close("Container")
	}
	x.close("Containers")
	x.elem("NextMarker", next)
	x.close("EnumerationResults")
	x.send(w)
	return nil
}

// List Blobs: GET ?restype=container&comp=list → 200.
func (s *Server) listBlobs(w http.ResponseWriter, r *http.Request, req *request) error {
	max, err := parseMaxResults(req)
	if err != nil {
		return err
	}
	include, err := parseInclude(req, "metadata", "snapshots", "uncommittedblobs", "copy", "deleted", "tags", "versions",
		"deletedwithversions", "immutabilitypolicy", "legalhold", "permissions")
	if err != nil {
		return err
	}
	prefix, delimiter, marker := req.query["prefix"], req.query["delimiter"], req.query["marker"]
	startFrom, err := parseStartFrom(req)
	if err != nil {
		return err
	}
	if delimiter != "" && include["snapshots"] {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "include", req.query["include"], "snapshots cannot be listed with a delimiter")
	}
	// include=snapshots puts each blob's snapshots, oldest first, right
	// before it; include=uncommittedblobs adds names that have only staged
	// blocks. Every entry counts toward maxresults.
	// include=versions adds each name's previous versions, oldest
	// first, before its current blob (after its snapshots).
	// include=deleted adds the soft-deleted blobs (and, with snapshots,
	// the soft-deleted snapshots) in their places.
	inc := leasedb.ListInclude{Snapshots: include["snapshots"], Uncommitted: include["uncommittedblobs"], Versions: include["versions"],
		Deleted: include["deleted"], DeletedWithVersions: include["deletedwithversions"]}
	res, err := s.db.ListBlobsFrom(r.Context(), req.account, req.container, prefix, delimiter, marker, startFrom, max, inc)
	if err != nil {
		return err
	}
	var x xmlWriter
	x.openEnumeration(r, req, req.container)
	x.echoPaging(req, prefix, marker, max)
	if delimiter != "" {
		x.elem("Delimiter", delimiter)
	}
	x.open("Blobs")
	for _, it := range res.Items {
		if !it.VersionsOnly && it.Blob != nil && leasedb.PastRetention(it.Blob, res.Now) {
			// Permanently deleted, as Undelete Blob holds, though the
			// collector may not have purged it yet: never listed (the
			// page may come out short; its marker is still right).
			continue
		}
		if it.Prefix != "" {
			x.open("BlobPrefix")
			x.elem("Name", it.Prefix)
			x.close("BlobPrefix")
			continue
		}
		if it.Uncommitted {
			writeUncommittedEntry(&x, it.Blob, res.Now)
			continue
		}
		if it.VersionsOnly {
			writeVersionsOnlyEntry(&x, it.Blob, include, res.Now, s.db.RetentionDay)
			continue
		}
		writeBlobEntry(&x, it.Blob, include, res.Now, s.db.RetentionDay)
	}
	x.close("Blobs")
	x.elem("NextMarker", res.Next)
	x.close("EnumerationResults")
	x.send(w)
	return nil
}

func writeBlobEntry(x *xmlWriter, b *leasedb.Blob, include map[string]bool, now time.Time, day time.Duration) {
	writeBlobFields(x, b, include, now, day)
	x.close("Blob")
}

// writeBlobFields writes a Blob element of List Blobs but for its end.
func writeBlobFields(x *xmlWriter, b *leasedb.Blob, include map[string]bool, now time.Time, day time.Duration) {
	x.open("Blob")
	x.elem("Name", b.Name)
	writeAfterName(x, b, include, now, day)
}

// writeAfterName writes what follows the Name of a List Blobs entry, up to
// its end.
func writeAfterName(x *xmlWriter, b *leasedb.Blob, include map[string]bool, now time.Time, day time.Duration) {
	deleted := !b.DeletedTime.IsZero()
	if b.Snapshot != "" {
		x.elem("Snapshot", b.Snapshot)
	}
	if b.VersionID != "" && b.Snapshot == "" && (!deleted || b.NonCurrent) {
		// A version, live or soft-deleted (include=versions,deleted).
		// The service marks the current version alone: a previous
		// version is listed without IsCurrentVersion (its recorded
		// answers), which clients read as false.
		x.elem("VersionId", b.VersionID)
		if !b.NonCurrent {
			x.elem("IsCurrentVersion", "true")
		}
	}
	if deleted {
		x.elem("Deleted", "true")
	}
	x.open("Properties")
	x.elem("Creation-Time", httpTime(b.Created))
	x.elem("Last-Modified", httpTime(b.LastModified))
	x.elem("Etag", strings.Trim(b.ETag, `"`))
	x.elem("Content-Length", strconv.FormatInt(b.Size, 10))
	ct := b.Props.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	x.elem("Content-Type", ct)
	x.elem("Content-Encoding", b.Props.ContentEncoding)
	x.elem("Content-Language", b.Props.ContentLanguage)
	x.elem("Content-CRC64", "")
	md5 := ""
	if b.Props.ContentMD5 != nil {
		md5 = b64(b.Props.ContentMD5)
	}
	x.elem("Content-MD5", md5)
	x.elem("Cache-Control", b.Props.CacheControl)
	x.elem("Content-Disposition", b.Props.ContentDisposition)
	if b.Type == "PageBlob" {
		x.elem("x-ms-blob-sequence-number", strconv.FormatInt(b.SequenceNumber, 10))
	}
	// From BlobType on, the order of the service's recorded List Blobs
	// answers, where they differ from the List Blobs reference sample:
	// AccessTier and AccessTierInferred right after BlobType, then the
	// lease, the copy (CopySource before CopyStatus), IncrementalCopy and
	// its destination snapshot, ServerEncrypted, DeletedTime and
	// RemainingRetentionDays, TagCount. Sealed is recorded right after
	// ServerEncrypted but never beside the soft delete times or TagCount;
	// it goes after them, as in the service's API definition.
	x.elem("BlobType", b.Type)
	writeListTier(x, b)
	if b.Snapshot == "" && !b.NonCurrent && !deleted {
		// Snapshots, previous versions and soft-deleted blobs cannot
		// be leased, so Azure lists them without LeaseStatus,
		// LeaseState and LeaseDuration.
		status, state, duration := b.Lease.Headers(now)
		x.elem("LeaseStatus", status)
		x.elem("LeaseState", state)
		if duration != "" {
			x.elem("LeaseDuration", duration)
		}
	}
	if include["copy"] && b.Copy != nil {
		x.elem("CopyId", b.Copy.ID)
		x.elem("CopySource", b.Copy.Source)
		x.elem("CopyStatus", b.Copy.Status)
		x.elem("CopyProgress", b.Copy.Progress)
		x.elem("CopyCompletionTime", httpTime(b.Copy.Completed))
	}
	if b.IsIncrementalCopy() {
		x.elem("IncrementalCopy", "true")
		if include["copy"] {
			x.elem("DestinationSnapshot", b.Copy.DestinationSnapshot)
		}
	}
	x.elem("ServerEncrypted", "true")
	if deleted {
		writeDeletedProps(x, b, now, day)
	}
	if len(b.Tags) > 0 {
		x.elem("TagCount", strconv.Itoa(len(b.Tags)))
	}
	if b.Type == "AppendBlob" {
		x.elem("Sealed", strconv.FormatBool(b.Sealed))
	}
	x.close("Properties")
	if include["metadata"] {
		x.metadata(b.Metadata)
	}
	if include["tags"] && len(b.Tags) > 0 {
		writeTagSet(x, b.Tags)
	}
}

// writeUncommittedEntry writes a name that has staged blocks and no
// committed blob (include=uncommittedblobs). Azure lists it without
// Last-Modified, Etag, the content headers and metadata: what is left is
// a zero-length block blob that nobody can lease.
func writeUncommittedEntry(x *xmlWriter, b *leasedb.Blob, now time.Time) {
	x.open("Blob")
	x.elem("Name", b.Name)
	x.open("Properties")
	x.elem("Content-Length", "0")
	x.elem("BlobType", "BlockBlob")
	status, state, _ := leasedb.Lease{}.Headers(now)
	x.elem("LeaseStatus", status)
	x.elem("LeaseState", state)
	x.elem("ServerEncrypted", "true")
	x.close("Properties")
	x.close("Blob")
}
