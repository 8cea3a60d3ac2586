package gateway

import (
	"errors"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/gateway/auth"
	"github.com/blobgw/blobgw/svcerr"
)

// resolveFor parses a request the way ServeHTTP does (query, then address)
// and resolves its operation. path is below the account: "" the service,
// "c" a container, "cnt/b" a blob.
func resolveFor(t *testing.T, method, path, query string, hdr map[string]string) (*operation, error) {
	t.Helper()
	u := "http://127.0.0.1:10000/devstoreaccount1/" + path
	if query != "" {
		u += "?" + query
	}
	r := httptest.NewRequest(method, u, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	req := &request{}
	var err error
	if req.query, err = parseQuery(r.URL.RawQuery); err != nil {
		t.Fatalf("%s %s?%s: parseQuery: %v", method, path, query, err)
	}
	if err := (&Server{}).parseAddress(r, req); err != nil {
		t.Fatalf("%s %s?%s: parseAddress: %v", method, path, query, err)
	}
	return resolve(r, req)
}

func handlerName(o *operation) string {
	n := runtime.FuncForPC(reflect.ValueOf(o.handle).Pointer()).Name()
	return strings.TrimSuffix(n[strings.LastIndex(n, ".")+1:], "-fm")
}

const noSAS auth.Operation = -1

// TestResolve pins every operation's match: the request shape, the
// operation name logs report, the handler, the SAS permission, the public
// access level that opens it and whether it takes an upload slot.
func TestResolve(t *testing.T) {
	copySrc := map[string]string{"x-ms-copy-source": "http://127.0.0.1:10000/devstoreaccount1/c/src"}
	fromURL := map[string]string{"x-ms-copy-source": "http://127.0.0.1:10000/devstoreaccount1/c/src", "x-ms-blob-type": "BlockBlob"}
	brk := map[string]string{"x-ms-lease-action": "Break"}
	acquire := map[string]string{"x-ms-lease-action": "acquire"}
	const snap = "snapshot=2024-01-01T00:00:00.0000000Z"
	const ver = "versionid=2024-01-01T00:00:00.0000000Z"
	tests := []struct {
		method, path, query string
		hdr                 map[string]string
		name, handler       string
		sas                 auth.Operation
		public              publicAccess
		upload              bool
	}{
		{"GET", "", "restype=account&comp=properties", nil, "GetAccountInformation", "getAccountInfo", auth.OpAccountInfo, notPublic, false},
		{"HEAD", "cnt", "restype=account&comp=properties", nil, "GetAccountInformation", "getAccountInfo", auth.OpAccountInfo, notPublic, false},
		{"GET", "cnt/b", "restype=account&comp=properties", nil, "GetAccountInformation", "getAccountInfo", auth.OpAccountInfo, notPublic, false},
		{"GET", "cnt/b", "restype=account&comp=properties&" + snap, nil, "GetAccountInformation", "getAccountInfo", auth.OpAccountInfo, notPublic, false},
		{"GET", "cnt/b", "comp=blocklist&" + snap, nil, "GetBlockList", "getSnapshotBlockList", auth.OpReadBlob, publicBlob, false},
		{"GET", "cnt/b", "comp=tags&" + snap, nil, "GetBlobTags", "getSnapshotTags", auth.OpBlobTags, notPublic, false},

		{"GET", "", "comp=list", nil, "ListContainers", "listContainers", auth.OpListContainers, notPublic, false},
		{"GET", "", "comp=blobs&where=x", nil, "FindBlobsByTags", "findBlobs", auth.OpFindBlobsService, notPublic, false},
		{"GET", "", "restype=service&comp=properties", nil, "GetBlobServiceProperties", "getServiceProperties", auth.OpGetServiceProperties, notPublic, false},
		{"HEAD", "", "restype=service&comp=properties", nil, "GetBlobServiceProperties", "getServiceProperties", auth.OpGetServiceProperties, notPublic, false},
		{"PUT", "", "restype=service&comp=properties", nil, "SetBlobServiceProperties", "setServiceProperties", auth.OpSetServiceProperties, notPublic, false},

		{"PUT", "cnt", "restype=container", nil, "CreateContainer", "createContainer", auth.OpCreateContainer, notPublic, false},
		{"PUT", "cnt", "restype=container&comp=undelete", nil, "RestoreContainer", "restoreContainer", auth.OpCreateContainer, notPublic, false},
		{"GET", "cnt", "restype=container", nil, "GetContainerProperties", "getContainerProperties", auth.OpGetContainer, publicContainer, false},
		{"HEAD", "cnt", "restype=container", nil, "GetContainerProperties", "getContainerProperties", auth.OpGetContainer, publicContainer, false},
		{"DELETE", "cnt", "restype=container", nil, "DeleteContainer", "deleteContainer", auth.OpDeleteContainer, notPublic, false},
		{"GET", "cnt", "restype=container&comp=metadata", nil, "GetContainerMetadata", "getContainerProperties", auth.OpGetContainer, publicContainer, false},
		{"PUT", "cnt", "restype=container&comp=metadata", nil, "SetContainerMetadata", "setContainerMetadata", auth.OpSetContainerMetadata, notPublic, false},
		{"GET", "cnt", "restype=container&comp=acl", nil, "GetContainerACL", "getContainerACL", auth.OpContainerACL, notPublic, false},
		{"HEAD", "cnt", "restype=container&comp=acl", nil, "GetContainerACL", "getContainerACL", auth.OpContainerACL, notPublic, false},
		{"PUT", "cnt", "restype=container&comp=acl", nil, "SetContainerACL", "setContainerACL", auth.OpContainerACL, notPublic, false},
		{"GET", "cnt", "restype=container&comp=list", nil, "ListBlobs", "listBlobs", auth.OpListBlobs, publicContainer, false},
		{"GET", "cnt", "restype=container&comp=blobs&where=x", nil, "FindBlobsByTagsInContainer", "findBlobs", auth.OpFindBlobsContainer, notPublic, false},
		{"PUT", "cnt", "restype=container&comp=lease", acquire, "LeaseContainer", "leaseContainer", auth.OpLeaseContainer, notPublic, false},
		{"PUT", "cnt", "restype=container&comp=lease", brk, "LeaseContainer", "leaseContainer", auth.OpBreakContainerLease, notPublic, false},

		{"GET", "cnt/b", snap, nil, "GetBlob", "getSnapshot", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", snap, nil, "GetBlobProperties", "getSnapshot", auth.OpReadBlob, publicBlob, false},
		{"GET", "cnt/b", "comp=metadata&" + snap, nil, "GetBlobMetadata", "getSnapshot", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", "comp=metadata&" + snap, nil, "GetBlobMetadata", "getSnapshot", auth.OpReadBlob, publicBlob, false},
		{"DELETE", "cnt/b", snap + "&deletetype=permanent", nil, "DeleteBlob", "permanentDelete", auth.OpPermanentDeleteBlob, notPublic, false},
		{"DELETE", "cnt/b", snap, nil, "DeleteBlob", "deleteSnapshot", auth.OpDeleteBlob, notPublic, false},
		{"PUT", "cnt/b", "comp=lease&" + snap, acquire, "LeaseBlob", "leaseBlob", auth.OpLeaseBlob, notPublic, false},
		{"PUT", "cnt/b", "comp=lease&" + snap, brk, "LeaseBlob", "leaseBlob", auth.OpBreakBlobLease, notPublic, false},
		{"GET", "cnt/b", ver, nil, "GetBlob", "getVersion", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", ver, nil, "GetBlobProperties", "getVersion", auth.OpReadBlob, publicBlob, false},
		{"GET", "cnt/b", "comp=metadata&" + ver, nil, "GetBlobMetadata", "getVersion", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", "comp=metadata&" + ver, nil, "GetBlobMetadata", "getVersion", auth.OpReadBlob, publicBlob, false},
		{"DELETE", "cnt/b", ver + "&deletetype=permanent", nil, "DeleteBlob", "permanentDelete", auth.OpPermanentDeleteBlob, notPublic, false},
		{"DELETE", "cnt/b", ver, nil, "DeleteBlob", "deleteVersion", auth.OpDeleteBlobVersion, notPublic, false},
		{"GET", "cnt/b", "comp=tags&" + ver, nil, "GetBlobTags", "getBlobTags", auth.OpBlobTags, notPublic, false},
		{"PUT", "cnt/b", "comp=tags&" + ver, nil, "SetBlobTags", "setBlobTags", auth.OpBlobTags, notPublic, false},
		{"PUT", "cnt/b", "comp=tier&" + ver, nil, "SetBlobTier", "setBlobTier", auth.OpWriteBlobProps, notPublic, false},

		{"PUT", "cnt/b", "comp=undelete", nil, "UndeleteBlob", "undeleteBlob", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "", nil, "PutBlob", "putBlob", auth.OpOverwriteBlob, notPublic, true},
		{"PUT", "cnt/b", "", copySrc, "CopyBlob", "copyBlob", auth.OpOverwriteBlob, notPublic, true},
		{"PUT", "cnt/b", "", fromURL, "PutBlobFromURL", "putBlobFromURL", auth.OpOverwriteBlob, notPublic, true},
		{"PUT", "cnt/b", "", map[string]string{"x-ms-blob-type": "BlockBlob"}, "PutBlob", "putBlob", auth.OpOverwriteBlob, notPublic, true},
		{"GET", "cnt/b", "", nil, "GetBlob", "getBlob", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", "", nil, "GetBlobProperties", "getBlob", auth.OpReadBlob, publicBlob, false},
		{"DELETE", "cnt/b", "", nil, "DeleteBlob", "deleteBlob", auth.OpDeleteBlob, notPublic, false},
		// deletetype on the base blob resolves to Delete Blob; refuse.go answers it.
		{"DELETE", "cnt/b", "deletetype=permanent", nil, "DeleteBlob", "deleteBlob", auth.OpDeleteBlob, notPublic, false},
		{"GET", "cnt/b", "comp=metadata", nil, "GetBlobMetadata", "getBlob", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", "comp=metadata", nil, "GetBlobMetadata", "getBlob", auth.OpReadBlob, publicBlob, false},
		{"PUT", "cnt/b", "comp=metadata", nil, "SetBlobMetadata", "setBlobMetadata", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "comp=properties", nil, "SetBlobProperties", "setBlobProperties", auth.OpWriteBlobProps, notPublic, false},
		// Only GET and HEAD of restype=account&comp=properties are Get
		// Account Information; a PUT on a blob is Set Blob Properties.
		{"PUT", "cnt/b", "restype=account&comp=properties", nil, "SetBlobProperties", "setBlobProperties", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "comp=lease", acquire, "LeaseBlob", "leaseBlob", auth.OpLeaseBlob, notPublic, false},
		{"PUT", "cnt/b", "comp=lease", brk, "LeaseBlob", "leaseBlob", auth.OpBreakBlobLease, notPublic, false},
		{"PUT", "cnt/b", "comp=block&blockid=AAAA", nil, "PutBlock", "putBlock", auth.OpPutBlock, notPublic, true},
		{"PUT", "cnt/b", "comp=block&blockid=AAAA", copySrc, "PutBlockFromURL", "putBlockFromURL", auth.OpPutBlock, notPublic, true},
		{"PUT", "cnt/b", "comp=blocklist", nil, "PutBlockList", "putBlockList", auth.OpOverwriteBlob, notPublic, false},
		{"GET", "cnt/b", "comp=blocklist", nil, "GetBlockList", "getBlockList", auth.OpReadBlob, publicBlob, false},
		{"HEAD", "cnt/b", "comp=blocklist", nil, "GetBlockList", "getBlockList", auth.OpReadBlob, publicBlob, false},
		{"PUT", "cnt/b", "comp=appendblock", nil, "AppendBlock", "appendBlock", auth.OpAppendBlock, notPublic, true},
		{"PUT", "cnt/b", "comp=appendblock", copySrc, "AppendBlockFromURL", "appendBlockFromURL", auth.OpAppendBlock, notPublic, true},
		{"GET", "cnt/b", "comp=tags", nil, "GetBlobTags", "getBlobTags", auth.OpBlobTags, notPublic, false},
		{"PUT", "cnt/b", "comp=tags", nil, "SetBlobTags", "setBlobTags", auth.OpBlobTags, notPublic, false},
		{"PUT", "cnt/b", "comp=tier", nil, "SetBlobTier", "setBlobTier", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "comp=copy&copyid=x", nil, "AbortCopyBlob", "abortCopy", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "comp=snapshot", nil, "SnapshotBlob", "createSnapshot", auth.OpSnapshotBlob, notPublic, false},
		{"PUT", "cnt/b", "comp=seal", nil, "AppendBlobSeal", "sealBlob", auth.OpWriteBlobProps, notPublic, false},
		{"PUT", "cnt/b", "comp=page", nil, "PutPage", "putPage", auth.OpWriteBlobProps, notPublic, true},
		{"PUT", "cnt/b", "comp=page", copySrc, "PutPageFromURL", "putPageFromURL", auth.OpWriteBlobProps, notPublic, true},
		{"GET", "cnt/b", "comp=pagelist", nil, "GetPageRanges", "getPageRanges", auth.OpReadBlob, publicBlob, false},
		{"GET", "cnt/b", "comp=pagelist&" + snap, nil, "GetPageRanges", "getPageRanges", auth.OpReadBlob, publicBlob, false},
		{"POST", "", "comp=batch", nil, "BlobBatch", "submitBatch", auth.OpBlobBatch, notPublic, false},
		{"GET", "", "restype=service&comp=stats", nil, "GetBlobServiceStats", "getServiceStats", auth.OpGetServiceProperties, notPublic, false},
		{"POST", "", "restype=service&comp=userdelegationkey", nil, "GetUserDelegationKey", "getUserDelegationKey", noSAS, notPublic, false},
		{"POST", "cnt", "restype=container&comp=batch", nil, "BlobBatch", "submitBatch", auth.OpBlobBatch, notPublic, false},

		// Not built yet: any path, any method, comp in any case.
		{"PUT", "cnt/b", "comp=incrementalcopy", nil, "IncrementalCopyBlob", "incrementalCopy", auth.OpOverwriteBlob, notPublic, false},
		{"PUT", "cnt/b", "comp=immutabilityPolicies", nil, "BlobImmutabilityPolicy", "notImplemented", noSAS, notPublic, false},
		{"DELETE", "cnt/b", "comp=immutabilityPolicies", nil, "BlobImmutabilityPolicy", "notImplemented", noSAS, notPublic, false},
		{"PUT", "cnt/b", "comp=legalhold", nil, "SetBlobLegalHold", "notImplemented", noSAS, notPublic, false},
		{"PUT", "cnt", "comp=undelete", nil, "Undelete", "notImplemented", noSAS, notPublic, false},
		{"PUT", "cnt/b", "comp=expiry", nil, "SetBlobExpiry", "notImplemented", noSAS, notPublic, false},
		{"POST", "cnt/b", "comp=query", nil, "QueryBlobContents", "notImplemented", noSAS, notPublic, false},
		{"PUT", "cnt", "restype=container&comp=rename", nil, "RenameContainer", "notImplemented", noSAS, notPublic, false},
		{"GET", "cnt/b", "comp=LEGALHOLD&" + snap, nil, "SetBlobLegalHold", "notImplemented", noSAS, notPublic, false},
	}
	hit := make([]bool, len(operations))
	for _, tt := range tests {
		o, err := resolveFor(t, tt.method, tt.path, tt.query, tt.hdr)
		if err != nil {
			t.Errorf("%s %s?%s: %v, want %s", tt.method, tt.path, tt.query, err, tt.name)
			continue
		}
		for i := range operations {
			if &operations[i] == o {
				hit[i] = true
			}
		}
		sas, ok := o.sasOperation()
		if !ok {
			sas = noSAS
		}
		if o.name != tt.name || handlerName(o) != tt.handler || sas != tt.sas || o.public != tt.public || o.upload != tt.upload {
			t.Errorf("%s %s?%s %v: %s (%s, SAS %v, public %d, upload %v), want %s (%s, SAS %v, public %d, upload %v)",
				tt.method, tt.path, tt.query, tt.hdr, o.name, handlerName(o), sas, o.public, o.upload,
				tt.name, tt.handler, tt.sas, tt.public, tt.upload)
		}
	}
	for i, h := range hit {
		if !h {
			t.Errorf("operation %d (%s) is resolved by no test row", i, operations[i].name)
		}
	}
}

// TestResolveRefused: a request that names no operation is 400 for an
// unknown comp (or a write to a snapshot) and 405 for a known one with a
// method it does not take, before any credential is looked at.
func TestResolveRefused(t *testing.T) {
	const snap = "snapshot=2024-01-01T00:00:00.0000000Z"
	tests := []struct {
		method, path, query string
		status              int
		code, param         string
	}{
		{"GET", "cnt", "restype=container&comp=bogus", 400, "InvalidQueryParameterValue", "comp"},
		{"PUT", "cnt", "restype=container&comp=properties", 400, "InvalidQueryParameterValue", "comp"},
		{"GET", "cnt/b", "comp=bogus", 400, "InvalidQueryParameterValue", "comp"},
		// comp values are matched exactly (except the operations not
		// built yet).
		{"PUT", "cnt/b", "comp=Block", 400, "InvalidQueryParameterValue", "comp"},
		{"PUT", "cnt/b", snap, 400, "InvalidQueryParameterValue", "snapshot"},
		{"PUT", "cnt/b", "comp=metadata&" + snap, 400, "InvalidQueryParameterValue", "snapshot"},
		{"PUT", "cnt/b", "comp=tags&" + snap, 400, "InvalidQueryParameterValue", "snapshot"},
		{"GET", "cnt/b", "comp=bogus&" + snap, 400, "InvalidQueryParameterValue", "snapshot"},
		{"GET", "cnt/b", "comp=lease&" + snap, 405, "UnsupportedHttpVerb", ""},

		// The service's address with no comp, or an unknown one, names
		// comp (empty when absent), as Azure answers it; an unknown
		// restype at the service or a container names restype.
		{"GET", "", "", 400, "InvalidQueryParameterValue", "comp"},
		{"GET", "", "comp=bogus", 400, "InvalidQueryParameterValue", "comp"},
		{"GET", "", "restype=bogus&comp=properties", 400, "InvalidQueryParameterValue", "restype"},
		{"GET", "", "restype=container", 400, "InvalidQueryParameterValue", "restype"},
		{"GET", "cnt", "restype=bogus", 400, "InvalidQueryParameterValue", "restype"},
		{"GET", "cnt", "restype=service&comp=properties", 400, "InvalidQueryParameterValue", "restype"},
		{"PUT", "cnt", "restype=Container", 400, "InvalidQueryParameterValue", "restype"},
		{"GET", "cnt", "comp=bogus", 400, "InvalidQueryParameterValue", "comp"},
		{"HEAD", "", "comp=list", 405, "UnsupportedHttpVerb", ""},
		{"DELETE", "", "restype=service&comp=properties", 405, "UnsupportedHttpVerb", ""},
		{"PUT", "", "restype=account&comp=properties", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt", "", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt", "comp=list", 405, "UnsupportedHttpVerb", ""},
		{"POST", "cnt", "restype=container", 405, "UnsupportedHttpVerb", ""},
		{"DELETE", "cnt", "restype=container&comp=metadata", 405, "UnsupportedHttpVerb", ""},
		{"DELETE", "cnt", "restype=container&comp=acl", 405, "UnsupportedHttpVerb", ""},
		{"HEAD", "cnt", "restype=container&comp=list", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt", "restype=container&comp=lease", 405, "UnsupportedHttpVerb", ""},
		{"POST", "cnt/b", "", 405, "UnsupportedHttpVerb", ""},
		{"OPTIONS", "cnt/b", "", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt/b", "comp=properties", 405, "UnsupportedHttpVerb", ""},
		{"HEAD", "cnt/b", "comp=tags", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt/b", "comp=block", 405, "UnsupportedHttpVerb", ""},
		{"DELETE", "cnt/b", "comp=blocklist", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt/b", "comp=lease", 405, "UnsupportedHttpVerb", ""},
		{"GET", "cnt/b", "comp=seal", 405, "UnsupportedHttpVerb", ""},
	}
	for _, tt := range tests {
		o, err := resolveFor(t, tt.method, tt.path, tt.query, nil)
		var e *svcerr.Error
		if !errors.As(err, &e) {
			t.Errorf("%s %s?%s: resolved %v, %v; want %d %s", tt.method, tt.path, tt.query, o, err, tt.status, tt.code)
			continue
		}
		if e.Status() != tt.status || e.Code != svcerr.Code(tt.code) || tt.param != "" && !strings.Contains(fmtDetails(e), "QueryParameterName="+tt.param+";") {
			t.Errorf("%s %s?%s: %d %s %v, want %d %s naming %q", tt.method, tt.path, tt.query, e.Status(), e.Code, e.Details, tt.status, tt.code, tt.param)
		}
	}
}

func fmtDetails(e *svcerr.Error) string {
	var b strings.Builder
	for _, d := range e.Details {
		b.WriteString(strings.Join(d[:], "=") + ";")
	}
	return b.String()
}
