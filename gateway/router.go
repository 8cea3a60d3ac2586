package gateway

import (
	"net/http"
	"strings"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/svcerr"
)

// operation is one Blob REST operation: how a request names it (method,
// what the path addresses, restype, comp, discriminating headers), the
// handler that serves it, the permission a SAS must grant for it, and
// whether a container's public access level lets an anonymous caller do
// it. A request is resolved to its operation once, before authorization,
// so routing, SAS checks and anonymous reads never decode it differently.
type operation struct {
	// name is Azure's REST operation name (Put Blob: "PutBlob"): what logs
	// and metrics report.
	name string

	on      target
	methods methods
	// restype, when set, must be the request's restype= exactly.
	restype string
	// comp must be the request's comp= ("" when it has none); exactly, or
	// in any case when compAnyCase.
	comp        string
	compAnyCase bool
	// headers must be present (with the given value, in any case, when
	// one is set).
	headers []headerIs
	// query, when set, names a query parameter the request must carry
	// (any value; the handler checks it).
	query string

	handle func(s *Server, w http.ResponseWriter, r *http.Request, req *request) error
	// sas is the permission a SAS must grant; noSAS: no SAS grants it.
	sas   auth.Operation
	noSAS bool
	// public says which container public access level lets an anonymous
	// caller do it.
	public publicAccess
	// upload: it reads a body or a copy source into the backend, and so
	// takes an upload slot (limits.go).
	upload bool
	// missing, when set, names the feature the gateway lacks: the
	// operation is answered 501 NotImplemented (refuse.go).
	missing string
}

// target is what a request's path addresses.
type target uint8

const (
	anyTarget       target = iota
	serviceTarget          // /account
	containerTarget        // /account/container
	blobTarget             // /account/container/blob
	snapshotTarget         // /account/container/blob?snapshot=...
	versionTarget          // /account/container/blob?versionid=...
)

func targetOf(req *request) target {
	switch {
	case req.container == "":
		return serviceTarget
	case req.blob == "":
		return containerTarget
	}
	if _, ok := req.query["snapshot"]; ok {
		return snapshotTarget
	}
	if _, ok := req.query["versionid"]; ok {
		return versionTarget
	}
	return blobTarget
}

// methods is a set of HTTP methods.
type methods uint8

const (
	mGet methods = 1 << iota
	mHead
	mPut
	mDelete
	mOther // any other method (POST, PATCH, ...)

	mRead     = mGet | mHead
	anyMethod = mGet | mHead | mPut | mDelete | mOther
)

func methodOf(m string) methods {
	switch m {
	case http.MethodGet:
		return mGet
	case http.MethodHead:
		return mHead
	case http.MethodPut:
		return mPut
	case http.MethodDelete:
		return mDelete
	}
	return mOther
}

// publicAccess is the least container public access level that opens an
// operation to anonymous callers: "blob" opens blob reads, "container"
// also container properties and listing.
type publicAccess uint8

const (
	notPublic       publicAccess = iota
	publicBlob                   // at level "blob" or "container"
	publicContainer              // at level "container" only
)

// headerIs asks for a request header: present (value "") or equal, in
// any case, to value.
// headerIs names a header in http.Header's canonical spelling, so that
// resolving an operation canonicalizes nothing.
type headerIs struct{ name, value string }

var (
	hCopySource = headerIs{"X-Ms-Copy-Source", ""}
	hBlobType   = headerIs{"X-Ms-Blob-Type", ""}
	hLeaseBreak = headerIs{"X-Ms-Lease-Action", "break"}
)

// operations are tried in order; the first that matches is the request's
// operation, so a row that asks for a header comes before the same row
// without it. A request none matches is refused by noOperation.
var operations = []operation{
	// Get Account Information answers at any path.
	{name: "GetAccountInformation", on: anyTarget, methods: mRead, restype: "account", comp: "properties",
		handle: (*Server).getAccountInfo, sas: auth.OpAccountInfo},

	// The service: /account.
	{name: "ListContainers", on: serviceTarget, methods: mGet, comp: "list",
		handle: (*Server).listContainers, sas: auth.OpListContainers},
	{name: "FindBlobsByTags", on: serviceTarget, methods: mGet, comp: "blobs",
		handle: (*Server).findBlobs, sas: auth.OpFindBlobsService},
	{name: "GetBlobServiceProperties", on: serviceTarget, methods: mRead, restype: "service", comp: "properties",
		handle: (*Server).getServiceProperties, sas: auth.OpGetServiceProperties},
	{name: "SetBlobServiceProperties", on: serviceTarget, methods: mPut, restype: "service", comp: "properties",
		handle: (*Server).setServiceProperties, sas: auth.OpSetServiceProperties},
	// Get Blob Service Stats and Get User Delegation Key (secondary.go).
	// No SAS obtains a user delegation key.
	{name: "GetBlobServiceStats", on: serviceTarget, methods: mGet, restype: "service", comp: "stats",
		handle: (*Server).getServiceStats, sas: auth.OpGetServiceProperties},
	{name: "GetUserDelegationKey", on: serviceTarget, methods: mOther, restype: "service", comp: "userdelegationkey",
		handle: (*Server).getUserDelegationKey, noSAS: true},
	// Blob Batch (batch.go): POST; each sub-request is authorized on its own.
	{name: "BlobBatch", on: serviceTarget, methods: mOther, comp: "batch",
		handle: (*Server).submitBatch, sas: auth.OpBlobBatch},

	// Containers: /account/container?restype=container.
	{name: "CreateContainer", on: containerTarget, methods: mPut, restype: "container",
		handle: (*Server).createContainer, sas: auth.OpCreateContainer},
	{name: "GetContainerProperties", on: containerTarget, methods: mRead, restype: "container",
		handle: (*Server).getContainerProperties, sas: auth.OpGetContainer, public: publicContainer},
	{name: "DeleteContainer", on: containerTarget, methods: mDelete, restype: "container",
		handle: (*Server).deleteContainer, sas: auth.OpDeleteContainer},
	{name: "GetContainerMetadata", on: containerTarget, methods: mRead, restype: "container", comp: "metadata",
		handle: (*Server).getContainerProperties, sas: auth.OpGetContainer, public: publicContainer},
	{name: "SetContainerMetadata", on: containerTarget, methods: mPut, restype: "container", comp: "metadata",
		handle: (*Server).setContainerMetadata, sas: auth.OpSetContainerMetadata},
	{name: "GetContainerACL", on: containerTarget, methods: mRead, restype: "container", comp: "acl",
		handle: (*Server).getContainerACL, sas: auth.OpContainerACL},
	{name: "SetContainerACL", on: containerTarget, methods: mPut, restype: "container", comp: "acl",
		handle: (*Server).setContainerACL, sas: auth.OpContainerACL},
	{name: "ListBlobs", on: containerTarget, methods: mGet, restype: "container", comp: "list",
		handle: (*Server).listBlobs, sas: auth.OpListBlobs, public: publicContainer},
	{name: "FindBlobsByTagsInContainer", on: containerTarget, methods: mGet, restype: "container", comp: "blobs",
		handle: (*Server).findBlobs, sas: auth.OpFindBlobsContainer},
	// Restore Container: by account SAS only, which must allow creating
	// the container (the restore creates it under its name again).
	{name: "RestoreContainer", on: containerTarget, methods: mPut, restype: "container", comp: "undelete",
		handle: (*Server).restoreContainer, sas: auth.OpCreateContainer},
	{name: "BlobBatch", on: containerTarget, methods: mOther, restype: "container", comp: "batch",
		handle: (*Server).submitBatch, sas: auth.OpBlobBatch},
	{name: "LeaseContainer", on: containerTarget, methods: mPut, restype: "container", comp: "lease", headers: []headerIs{hLeaseBreak},
		handle: (*Server).leaseContainer, sas: auth.OpBreakContainerLease},
	{name: "LeaseContainer", on: containerTarget, methods: mPut, restype: "container", comp: "lease",
		handle: (*Server).leaseContainer, sas: auth.OpLeaseContainer},

	// Snapshots are read-only: reads and delete (Lease Blob refuses them
	// with its own error).
	{name: "GetBlob", on: snapshotTarget, methods: mGet,
		handle: (*Server).getSnapshot, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobProperties", on: snapshotTarget, methods: mHead,
		handle: (*Server).getSnapshot, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobMetadata", on: snapshotTarget, methods: mRead, comp: "metadata",
		handle: (*Server).getSnapshot, sas: auth.OpReadBlob, public: publicBlob},
	// deletetype=permanent: a soft-deleted snapshot or version, for good
	// (SAS: y, permanent delete; blob_permdelete.go).
	{name: "DeleteBlob", on: snapshotTarget, methods: mDelete, query: "deletetype",
		handle: (*Server).permanentDelete, sas: auth.OpPermanentDeleteBlob},
	{name: "DeleteBlob", on: snapshotTarget, methods: mDelete,
		handle: (*Server).deleteSnapshot, sas: auth.OpDeleteBlob},
	{name: "GetBlockList", on: snapshotTarget, methods: mRead, comp: "blocklist",
		handle: (*Server).getSnapshotBlockList, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobTags", on: snapshotTarget, methods: mGet, comp: "tags",
		handle: (*Server).getSnapshotTags, sas: auth.OpBlobTags},
	{name: "LeaseBlob", on: snapshotTarget, methods: mPut, comp: "lease", headers: []headerIs{hLeaseBreak},
		handle: (*Server).leaseBlob, sas: auth.OpBreakBlobLease},
	{name: "LeaseBlob", on: snapshotTarget, methods: mPut, comp: "lease",
		handle: (*Server).leaseBlob, sas: auth.OpLeaseBlob},
	{name: "GetPageRanges", on: snapshotTarget, methods: mGet, comp: "pagelist",
		handle: (*Server).getPageRanges, sas: auth.OpReadBlob, public: publicBlob},

	// Versions are read-only but for their tags and tier; a previous
	// version can be deleted (SAS: x, delete version).
	{name: "GetBlob", on: versionTarget, methods: mGet,
		handle: (*Server).getVersion, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobProperties", on: versionTarget, methods: mHead,
		handle: (*Server).getVersion, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobMetadata", on: versionTarget, methods: mRead, comp: "metadata",
		handle: (*Server).getVersion, sas: auth.OpReadBlob, public: publicBlob},
	{name: "DeleteBlob", on: versionTarget, methods: mDelete, query: "deletetype",
		handle: (*Server).permanentDelete, sas: auth.OpPermanentDeleteBlob},
	{name: "DeleteBlob", on: versionTarget, methods: mDelete,
		handle: (*Server).deleteVersion, sas: auth.OpDeleteBlobVersion},
	{name: "GetBlobTags", on: versionTarget, methods: mGet, comp: "tags",
		handle: (*Server).getBlobTags, sas: auth.OpBlobTags},
	{name: "SetBlobTags", on: versionTarget, methods: mPut, comp: "tags",
		handle: (*Server).setBlobTags, sas: auth.OpBlobTags},
	{name: "SetBlobTier", on: versionTarget, methods: mPut, comp: "tier",
		handle: (*Server).setBlobTier, sas: auth.OpWriteBlobProps},

	// Blobs: /account/container/blob. Put Blob From URL, Copy Blob and Put
	// Blob all write the blob: a SAS needs write (or create, for a blob
	// that does not exist yet; authz.go).
	{name: "PutBlobFromURL", on: blobTarget, methods: mPut, headers: []headerIs{hCopySource, hBlobType},
		handle: (*Server).putBlobFromURL, sas: auth.OpOverwriteBlob, upload: true},
	{name: "CopyBlob", on: blobTarget, methods: mPut, headers: []headerIs{hCopySource},
		handle: (*Server).copyBlob, sas: auth.OpOverwriteBlob, upload: true},
	// Undelete Blob: SAS w, as for the writes that restore content (the
	// permission tables list no letter of its own).
	{name: "UndeleteBlob", on: blobTarget, methods: mPut, comp: "undelete",
		handle: (*Server).undeleteBlob, sas: auth.OpWriteBlobProps},
	{name: "PutBlob", on: blobTarget, methods: mPut,
		handle: (*Server).putBlob, sas: auth.OpOverwriteBlob, upload: true},
	{name: "GetBlob", on: blobTarget, methods: mGet,
		handle: (*Server).getBlob, sas: auth.OpReadBlob, public: publicBlob},
	{name: "GetBlobProperties", on: blobTarget, methods: mHead,
		handle: (*Server).getBlob, sas: auth.OpReadBlob, public: publicBlob},
	{name: "DeleteBlob", on: blobTarget, methods: mDelete,
		handle: (*Server).deleteBlob, sas: auth.OpDeleteBlob},
	{name: "GetBlobMetadata", on: blobTarget, methods: mRead, comp: "metadata",
		handle: (*Server).getBlob, sas: auth.OpReadBlob, public: publicBlob},
	{name: "SetBlobMetadata", on: blobTarget, methods: mPut, comp: "metadata",
		handle: (*Server).setBlobMetadata, sas: auth.OpWriteBlobProps},
	{name: "SetBlobProperties", on: blobTarget, methods: mPut, comp: "properties",
		handle: (*Server).setBlobProperties, sas: auth.OpWriteBlobProps},
	{name: "LeaseBlob", on: blobTarget, methods: mPut, comp: "lease", headers: []headerIs{hLeaseBreak},
		handle: (*Server).leaseBlob, sas: auth.OpBreakBlobLease},
	{name: "LeaseBlob", on: blobTarget, methods: mPut, comp: "lease",
		handle: (*Server).leaseBlob, sas: auth.OpLeaseBlob},
	{name: "PutBlockFromURL", on: blobTarget, methods: mPut, comp: "block", headers: []headerIs{hCopySource},
		handle: (*Server).putBlockFromURL, sas: auth.OpPutBlock, upload: true},
	{name: "PutBlock", on: blobTarget, methods: mPut, comp: "block",
		handle: (*Server).putBlock, sas: auth.OpPutBlock, upload: true},
	{name: "PutBlockList", on: blobTarget, methods: mPut, comp: "blocklist",
		handle: (*Server).putBlockList, sas: auth.OpOverwriteBlob},
	{name: "GetBlockList", on: blobTarget, methods: mRead, comp: "blocklist",
		handle: (*Server).getBlockList, sas: auth.OpReadBlob, public: publicBlob},
	{name: "AppendBlockFromURL", on: blobTarget, methods: mPut, comp: "appendblock", headers: []headerIs{hCopySource},
		handle: (*Server).appendBlockFromURL, sas: auth.OpAppendBlock, upload: true},
	{name: "AppendBlock", on: blobTarget, methods: mPut, comp: "appendblock",
		handle: (*Server).appendBlock, sas: auth.OpAppendBlock, upload: true},
	{name: "GetBlobTags", on: blobTarget, methods: mGet, comp: "tags",
		handle: (*Server).getBlobTags, sas: auth.OpBlobTags},
	{name: "SetBlobTags", on: blobTarget, methods: mPut, comp: "tags",
		handle: (*Server).setBlobTags, sas: auth.OpBlobTags},
	{name: "SetBlobTier", on: blobTarget, methods: mPut, comp: "tier",
		handle: (*Server).setBlobTier, sas: auth.OpWriteBlobProps},
	// Abort Copy Blob: write permission on the destination, never create
	// alone (it acts on a blob that exists; authz.go's create-only
	// fallback is for OpOverwriteBlob).
	{name: "AbortCopyBlob", on: blobTarget, methods: mPut, comp: "copy",
		handle: (*Server).abortCopy, sas: auth.OpWriteBlobProps},
	{name: "SnapshotBlob", on: blobTarget, methods: mPut, comp: "snapshot",
		handle: (*Server).createSnapshot, sas: auth.OpSnapshotBlob},
	// Append Blob Seal: "a SAS that has write permissions"; create alone
	// never seals a blob that exists.
	{name: "AppendBlobSeal", on: blobTarget, methods: mPut, comp: "seal",
		handle: (*Server).sealBlob, sas: auth.OpWriteBlobProps},
	// Put Page needs write, never create alone (the blob exists): the
	// permission of Set Blob Properties.
	{name: "PutPageFromURL", on: blobTarget, methods: mPut, comp: "page", headers: []headerIs{hCopySource},
		handle: (*Server).putPageFromURL, sas: auth.OpWriteBlobProps, upload: true},
	{name: "PutPage", on: blobTarget, methods: mPut, comp: "page",
		handle: (*Server).putPage, sas: auth.OpWriteBlobProps, upload: true},
	{name: "GetPageRanges", on: blobTarget, methods: mGet, comp: "pagelist",
		handle: (*Server).getPageRanges, sas: auth.OpReadBlob, public: publicBlob},
	// Incremental Copy Blob writes the destination: the permission of
	// Copy Blob.
	{name: "IncrementalCopyBlob", on: blobTarget, methods: mPut, comp: "incrementalcopy",
		handle: (*Server).incrementalCopy, sas: auth.OpOverwriteBlob},

	// Operations the gateway does not have yet, at any path and with any
	// method. Azure spells some comps in mixed case
	// (immutabilityPolicies), so they match in any case. No SAS grants
	// them and they are never public, so only an account key learns they
	// are missing.
	missingOp("BlobImmutabilityPolicy", "immutabilitypolicies", "Set / Delete Blob Immutability Policy"),
	missingOp("SetBlobLegalHold", "legalhold", "Set Blob Legal Hold"),
	missingOp("Undelete", "undelete", "Undelete at this address"),
	missingOp("SetBlobExpiry", "expiry", "Set Blob Expiry"),
	missingOp("QueryBlobContents", "query", "Query Blob Contents"),
	missingOp("RenameContainer", "rename", "Rename Container"),
}

func missingOp(name, comp, what string) operation {
	return operation{name: name, on: anyTarget, methods: anyMethod, comp: comp, compAnyCase: true,
		handle: (*Server).notImplemented, noSAS: true, missing: what}
}

// notImplemented answers an operation the gateway does not have.
func (s *Server) notImplemented(w http.ResponseWriter, r *http.Request, req *request) error {
	return req.op.notImplementedErr()
}

func (o *operation) notImplementedErr() error {
	return svcerr.Newf(svcerr.NotImplemented, "%s is not implemented by this gateway.", o.missing)
}

func (o *operation) matches(t target, m methods, r *http.Request, req *request) bool {
	if o.on != anyTarget && o.on != t || o.methods&m == 0 {
		return false
	}
	if o.restype != "" && req.query["restype"] != o.restype {
		return false
	}
	if comp := req.query["comp"]; comp != o.comp && !(o.compAnyCase && strings.EqualFold(comp, o.comp)) {
		return false
	}
	if _, ok := req.query[o.query]; o.query != "" && !ok {
		return false
	}
	for _, h := range o.headers {
		v := r.Header.Get(h.name)
		if v == "" || h.value != "" && !strings.EqualFold(v, h.value) {
			return false
		}
	}
	return true
}

// resolve names the request's operation, or refuses a request that names
// none, whatever its credential.
func resolve(r *http.Request, req *request) (*operation, error) {
	t, m := targetOf(req), methodOf(r.Method)
	for i := range operations {
		if o := &operations[i]; o.matches(t, m, r, req) {
			return o, nil
		}
	}
	return nil, noOperation(t, req)
}

// noOperation is the answer to a request no operation matches: a write to
// a snapshot, an unknown comp, or a restype no operation at the address
// takes, is 400 InvalidQueryParameterValue naming the parameter, as Azure
// answers (a request to the service's address with no comp at all names
// comp with an empty value); a known one with another method (or a
// container path without restype=container) is 405 UnsupportedHttpVerb.
func noOperation(t target, req *request) error {
	comp := req.query["comp"]
	if rt, ok := req.query["restype"]; ok && (t == serviceTarget || t == containerTarget) && !knownRestype(t, rt) {
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "restype", rt, "")
	}
	switch t {
	case serviceTarget:
		if !knownComp(t, comp) {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
		}
	case snapshotTarget:
		if comp != "lease" {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "snapshot", req.query["snapshot"], "snapshots are read-only")
		}
	case versionTarget:
		// Put Blob, Set Blob Metadata, Lease Blob, ... of a version: a
		// version is immutable; writes go to the base blob.
		if knownComp(blobTarget, comp) {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "versionid", req.query["versionid"], "blob versions are read-only")
		}
		return svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
	case containerTarget:
		if (comp != "" || req.query["restype"] == "container") && !knownComp(t, comp) {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
		}
	case blobTarget:
		if !knownComp(t, comp) {
			return svcerr.Query(svcerr.InvalidQueryParameterValue, "comp", comp, "")
		}
	}
	return svcerr.New(svcerr.UnsupportedHttpVerb)
}

// knownRestype reports whether some operation at t (or at any address)
// takes this restype.
func knownRestype(t target, restype string) bool {
	for i := range operations {
		if o := &operations[i]; (o.on == t || o.on == anyTarget) && o.restype == restype {
			return true
		}
	}
	return false
}

// knownComp reports whether some operation on t has this comp.
func knownComp(t target, comp string) bool {
	for i := range operations {
		if operations[i].on == t && operations[i].comp == comp {
			return true
		}
	}
	return false
}

// sasOperation is the permission a SAS must grant for o.
func (o *operation) sasOperation() (auth.Operation, bool) {
	return o.sas, !o.noSAS
}

// opName is the resolved operation's name, "" before or without one.
func (q *request) opName() string {
	if q.op == nil {
		return ""
	}
	return q.op.name
}
