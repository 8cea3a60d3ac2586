package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/blobgw/blobgw/internal/config"
)

// TestCreateOnlySASCannotSealOrAbort: a create-only SAS (c without w) may
// write a blob that does not exist yet, nothing more. Append Blob Seal
// and Abort Copy Blob act on a blob that exists and need w: with c alone
// they are 403 AuthorizationPermissionMismatch, and the blob stays
// unsealed; with w they run. Incremental Copy Blob with c alone creates
// its destination but is 403 UnauthorizedBlobOverwrite onto an existing
// one.
func TestCreateOnlySASCannotSealOrAbort(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "cosw")
	ab := b.client.ServiceClient().NewContainerClient("cosw").NewAppendBlobClient("ab")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	tok := func(p sas.ContainerPermissions) string {
		u := b.sasURL(t, "cosw", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute),
			ExpiryTime: now.Add(time.Hour), Permissions: p.String(), ContainerName: "cosw"})
		return u[:indexQuery(u)] + "/ab" + u[indexQuery(u):]
	}
	co, err := appendblob.NewClientWithNoCredential(tok(sas.ContainerPermissions{Create: true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = co.Seal(ctx, nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")
	props, err := ab.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.IsSealed != nil && *props.IsSealed {
		t.Fatal("a create-only SAS sealed an existing append blob")
	}
	_, err = co.AbortCopyFromURL(ctx, "c0ffee00-0000-0000-0000-000000000000", nil)
	wantErr(t, err, 403, "AuthorizationPermissionMismatch")

	w, err := appendblob.NewClientWithNoCredential(tok(sas.ContainerPermissions{Write: true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Seal(ctx, nil); err != nil {
		t.Fatalf("Seal with w: %v", err)
	}

	// Incremental Copy Blob: c creates the destination, never overwrites it.
	src := pageClient(b.client, "cosw", "disk")
	if _, err := src.Create(ctx, 4096, nil); err != nil {
		t.Fatal(err)
	}
	s1, err := src.CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	srcSAS := withSAS(t, src.URL(), b.cred, "cosw", "disk", "r")
	u := tok(sas.ContainerPermissions{Create: true})
	dst, err := pageblob.NewClientWithNoCredential(u[:indexQuery(u)]+".bak"+u[indexQuery(u):], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.StartCopyIncremental(ctx, srcSAS, *s1.Snapshot, nil); err != nil {
		t.Fatalf("first incremental copy with c: %v", err)
	}
	s2, err := src.CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dst.StartCopyIncremental(ctx, srcSAS, *s2.Snapshot, nil)
	wantErr(t, err, 403, "UnauthorizedBlobOverwrite")
}

// TestSASEncryptionScopeRefused: a SAS's signed encryption scope (ses)
// names the scope its writes are encrypted with. The gateway has the
// account's own scope only: a service or account SAS naming another is
// 400 UnsupportedQueryParameter and stores nothing, never a write stored
// as if the scope had not been asked for; ses=$account-encryption-key
// writes.
func TestSASEncryptionScopeRefused(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "scoped")
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, scope := range []string{"scope1", "$account-encryption-key"} {
		svc, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
			ContainerName: "scoped", Permissions: (&sas.ContainerPermissions{Create: true, Write: true}).String(), EncryptionScope: scope}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: now.Add(time.Hour),
			Permissions:   to.Ptr(sas.AccountPermissions{Create: true, Write: true}).String(),
			ResourceTypes: to.Ptr(sas.AccountResourceTypes{Object: true}).String(), EncryptionScope: scope}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		for kind, qp := range map[string]sas.QueryParameters{"service": svc, "account": acct} {
			name := kind + "-" + scope
			bb := noCredBlob(t, b.serviceURL(0)+"scoped/"+name+"?"+qp.Encode())
			_, err := bb.Upload(ctx, nopSeeker("x"), nil)
			if scope == "$account-encryption-key" {
				if err != nil {
					t.Fatalf("%s SAS with ses=%s: %v", kind, scope, err)
				}
				continue
			}
			wantErr(t, err, 400, "UnsupportedQueryParameter")
			_, err = b.client.ServiceClient().NewContainerClient("scoped").NewBlobClient(name).GetProperties(ctx, nil)
			if !bloberror.HasCode(err, bloberror.BlobNotFound) {
				t.Fatalf("%s SAS with ses=%s: the blob after the refusal: %v", kind, scope, err)
			}
		}
	}
}

// TestSharedKeyCoversRepeatedIfMatch: the Shared Key string-to-sign holds
// one line for If-Match, and Delete Blob acts on every If-Match value
// sent. A second If-Match added to a signed request (the ETag the blob has
// now, where the signer asked for the one it had) must not verify: 403
// AuthenticationFailed, and the blob stays. The same request without the
// added header still gets the 412 its signer asked for.
func TestSharedKeyCoversRepeatedIfMatch(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "cond")
	old, err := b.client.UploadBuffer(ctx, "cond", "doc", []byte("v1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := b.client.UploadBuffer(ctx, "cond", "doc", []byte("v2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	del := func(extra bool) *http.Response {
		r, err := http.NewRequest(http.MethodDelete, b.serviceURL(0)+"cond/doc", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("If-Match", string(*old.ETag))
		b.sign(t, r)
		if extra {
			r.Header.Add("If-Match", string(*cur.ETag))
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	wantStatus(t, del(true), 403, "AuthenticationFailed", "Delete Blob with an If-Match added after signing")
	wantStatus(t, del(false), 412, "ConditionNotMet", "Delete Blob as signed")
	if got := string(download(t, b.client, "cond", "doc")); got != "v2" {
		t.Fatalf("the blob after the refused deletes: %q", got)
	}
}

// TestAnonymousBlockListCommittedOnly: a public container (blob or
// container level) lets an anonymous caller run Get Block List for the
// committed blocks only; the uncommitted list (blocklisttype=uncommitted
// or all) stays the owner's: 401 NoAuthenticationInformation, as for any
// operation the level does not open.
func TestAnonymousBlockListCommittedOnly(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	for _, level := range []container.PublicAccessType{container.PublicAccessTypeBlob, container.PublicAccessTypeContainer} {
		name := "pub" + string(level)
		cc := b.client.ServiceClient().NewContainerClient(name)
		if _, err := cc.Create(ctx, &container.CreateOptions{Access: &level}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.UploadBuffer(ctx, name, "doc", []byte("committed"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewBlockBlobClient("doc").StageBlock(ctx, "c2VjcmV0", nopSeeker("staged"), nil); err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{"", "committed", "uncommitted", "all"} {
			u := b.serviceURL(0) + name + "/doc?comp=blocklist"
			if typ != "" {
				u += "&blocklisttype=" + typ
			}
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if typ == "" || typ == "committed" {
				wantStatus(t, resp, 200, "", "anonymous Get Block List "+typ+" at level "+string(level))
			} else {
				wantStatus(t, resp, 401, "NoAuthenticationInformation", "anonymous Get Block List "+typ+" at level "+string(level))
			}
		}
	}
}

// TestListBlobsTagsNeedTagPermission: List Blobs include=tags shows what
// Get Blob Tags reads, so a SAS must grant t as well as l (403
// AuthorizationPermissionMismatch otherwise), and an anonymous listing of
// a public container cannot ask for them (401 NoAuthenticationInformation);
// the same listings without include=tags run.
func TestListBlobsTagsNeedTagPermission(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	level := container.PublicAccessTypeContainer
	cc := b.client.ServiceClient().NewContainerClient("tagged")
	if _, err := cc.Create(ctx, &container.CreateOptions{Access: &level}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.UploadBuffer(ctx, "tagged", "doc", []byte("x"), &azblob.UploadBufferOptions{Tags: map[string]string{"secret": "s3"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	list := func(u string, tags bool) *http.Response {
		if tags {
			u += "&include=tags"
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	tok := func(p sas.ContainerPermissions) string {
		return b.sasURL(t, "tagged", sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute),
			ExpiryTime: now.Add(time.Hour), Permissions: p.String(), ContainerName: "tagged"}) + "&restype=container&comp=list"
	}
	l := tok(sas.ContainerPermissions{List: true})
	wantStatus(t, list(l, false), 200, "", "List Blobs with l")
	wantStatus(t, list(l, true), 403, "AuthorizationPermissionMismatch", "List Blobs include=tags with l")
	wantStatus(t, list(tok(sas.ContainerPermissions{List: true, Tag: true}), true), 200, "", "List Blobs include=tags with l and t")
	anon := b.serviceURL(0) + "tagged?restype=container&comp=list"
	wantStatus(t, list(anon, false), 200, "", "anonymous List Blobs")
	wantStatus(t, list(anon, true), 401, "NoAuthenticationInformation", "anonymous List Blobs include=tags")
}
