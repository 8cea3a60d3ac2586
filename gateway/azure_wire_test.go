package gateway_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/blobgw/blobgw/leasedb"
)

// Answers checked against what Azure Blob Storage itself answers (the
// azblob SDK's recorded tests and clients' reports of the service's
// replies), for inputs the gateway once answered otherwise.

// TestPutBlockZeroLength: Azure answers a Put Block whose Content-Length
// is 0 as it answers one without Content-Length, 411
// MissingContentLengthHeader naming Content-Length (a block is never
// empty), and stages nothing; the gateway used to stage an empty block.
func TestPutBlockZeroLength(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "zero")
	resp, body := b.do(t, "PUT", "zero/b?comp=block&blockid="+blockID(1), "", nil)
	wantStatus(t, resp, http.StatusLengthRequired, "MissingContentLengthHeader", "Put Block of 0 bytes")
	if !strings.Contains(body, "<HeaderName>Content-Length</HeaderName>") {
		t.Errorf("the refusal does not name Content-Length: %s", body)
	}
	bl, err := blockClient(b.client, "zero", "b").GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	if statusOf(err) != http.StatusNotFound && (err != nil || len(bl.UncommittedBlocks) != 0) {
		t.Fatalf("a refused Put Block staged a block: %v, %+v", err, bl)
	}
	resp, _ = b.do(t, "PUT", "zero/b?comp=block&blockid="+blockID(1), "x", nil)
	wantStatus(t, resp, http.StatusCreated, "", "Put Block of 1 byte")
}

// TestBlobTagsPlainConditionsRefused: Set Blob Tags and Get Blob Tags
// take x-ms-if-tags and x-ms-lease-id (and the x-ms-blob-if-* spelling of
// the standard conditions); Azure's own clients refuse to send a plain
// If-Match, If-None-Match, If-Modified-Since or If-Unmodified-Since with
// them, for the service does not apply those to the tags. One sent anyway
// is 400 ConditionHeadersNotSupported naming it: the gateway used to
// ignore it and set the tags although the condition failed.
func TestBlobTagsPlainConditionsRefused(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "tagc")
	up, err := b.client.UploadBuffer(ctx, "tagc", "b", []byte("bytes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := blockClient(b.client, "tagc", "b").CreateSnapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const tagsBody = `<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tags>`
	for name, value := range failingPlainConditions {
		for _, tc := range []struct{ what, method, path, body string }{
			{"Set Blob Tags", "PUT", "tagc/b?comp=tags", tagsBody},
			{"Get Blob Tags", "GET", "tagc/b?comp=tags", ""},
			{"Get Blob Tags of a snapshot", "GET", "tagc/b?comp=tags&snapshot=" + *snap.Snapshot, ""},
		} {
			resp, body := b.do(t, tc.method, tc.path, tc.body, map[string]string{name: value})
			wantStatus(t, resp, http.StatusBadRequest, "ConditionHeadersNotSupported", tc.what+" with "+name)
			if !strings.Contains(body, "<HeaderName>"+name+"</HeaderName>") {
				t.Errorf("%s: the refusal does not name %s: %s", tc.what, name, body)
			}
		}
	}
	tags, err := blockClient(b.client, "tagc", "b").GetTags(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.BlobTagSet) != 0 {
		t.Fatalf("a refused Set Blob Tags set %v", tags.BlobTagSet)
	}
	// What the operations take is still evaluated: x-ms-blob-if-match and
	// x-ms-if-tags.
	resp, _ := b.do(t, "PUT", "tagc/b?comp=tags", tagsBody, map[string]string{"x-ms-blob-if-match": `"0x8D000000DEADBEE"`})
	wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", "Set Blob Tags with a failing x-ms-blob-if-match")
	resp, _ = b.do(t, "PUT", "tagc/b?comp=tags", tagsBody, map[string]string{"x-ms-blob-if-match": string(*up.ETag)})
	wantStatus(t, resp, http.StatusNoContent, "", "Set Blob Tags with a passing x-ms-blob-if-match")
	resp, _ = b.do(t, "GET", "tagc/b?comp=tags", "", map[string]string{"x-ms-if-tags": `"k" = 'w'`})
	wantStatus(t, resp, http.StatusPreconditionFailed, "ConditionNotMet", "Get Blob Tags with a failing x-ms-if-tags")
	resp, _ = b.do(t, "GET", "tagc/b?comp=tags", "", map[string]string{"x-ms-if-tags": `"k" = 'v'`})
	wantStatus(t, resp, http.StatusOK, "", "Get Blob Tags with a passing x-ms-if-tags")
}

// TestConditionDatesInTheFuture pins what Azure answers to an
// If-Modified-Since / If-Unmodified-Since later than the service's clock:
// it compares the date with the blob's Last-Modified as any other, unlike
// RFC 9110's advice to ignore such a date (the azblob SDK's recorded
// tests send the response's Date plus 10 s and expect the condition to
// fail, or to pass for If-Unmodified-Since). Get Blob: 304; a write: 412
// ConditionNotMet; If-Unmodified-Since in the future lets the write run.
func TestConditionDatesInTheFuture(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "future")
	up, err := b.client.UploadBuffer(ctx, "future", "b", []byte("bytes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	later := up.Date.Add(time.Hour)
	bc := blockClient(b.client, "future", "b")
	// The SDK takes a 304 for success: read the status raw.
	for _, method := range []string{"GET", "HEAD"} {
		resp, _ := b.do(t, method, "future/b", "", map[string]string{"If-Modified-Since": later.Format(http.TimeFormat)})
		if resp.StatusCode != http.StatusNotModified {
			t.Fatalf("%s with If-Modified-Since an hour after the blob's Date: %d, want 304", method, resp.StatusCode)
		}
	}
	_, err = bc.UploadBuffer(ctx, []byte("new"), &blockblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfModifiedSince: &later}}})
	wantErr(t, err, http.StatusPreconditionFailed, "ConditionNotMet")
	_, err = bc.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfModifiedSince: &later}}})
	wantErr(t, err, http.StatusPreconditionFailed, "ConditionNotMet")
	if _, err := bc.UploadBuffer(ctx, []byte("new"), &blockblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfUnmodifiedSince: &later}}}); err != nil {
		t.Fatalf("Put Blob with If-Unmodified-Since in the future: %v", err)
	}
	got, err := bc.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := io.ReadAll(got.Body); string(data) != "new" {
		t.Fatalf("content %q after the write, want new", data)
	}
	got.Body.Close()
}

// TestUnknownQueryValuesOverTheWire: a comp or restype that no operation
// at the address takes is 400 InvalidQueryParameterValue naming it, with
// its value, as Azure answers (a GET of the service's address with no comp
// names comp with no value); a known one with another method stays 405.
func TestUnknownQueryValuesOverTheWire(t *testing.T) {
	b := setup(t, "sqlite")
	createContainers(t, b.client, "qvals")
	for _, tc := range []struct {
		method, path       string
		status             int
		code, param, value string
	}{
		{"GET", "", 400, "InvalidQueryParameterValue", "comp", ""},
		{"GET", "?comp=bogus", 400, "InvalidQueryParameterValue", "comp", "bogus"},
		{"GET", "qvals?restype=bogus", 400, "InvalidQueryParameterValue", "restype", "bogus"},
		{"GET", "qvals?comp=bogus", 400, "InvalidQueryParameterValue", "comp", "bogus"},
		{"GET", "qvals?restype=container&comp=bogus", 400, "InvalidQueryParameterValue", "comp", "bogus"},
		{"GET", "qvals/b?comp=bogus", 400, "InvalidQueryParameterValue", "comp", "bogus"},
		{"HEAD", "?comp=list", 405, "UnsupportedHttpVerb", "", ""},
	} {
		resp, body := b.do(t, tc.method, tc.path, "", nil)
		wantStatus(t, resp, tc.status, tc.code, tc.method+" "+tc.path)
		if tc.param != "" && !strings.Contains(body, "<QueryParameterName>"+tc.param+"</QueryParameterName>") {
			t.Errorf("%s %s: the refusal does not name %s: %s", tc.method, tc.path, tc.param, body)
		}
		if tc.value != "" && !strings.Contains(body, "<QueryParameterValue>"+tc.value+"</QueryParameterValue>") {
			t.Errorf("%s %s: the refusal does not carry %q: %s", tc.method, tc.path, tc.value, body)
		}
	}
}

// TestListIncludeSystem: List Containers lists the system container $logs
// (storage analytics' logs) only with include=system, as Azure does; it
// used to accept include=system and list $logs whatever it said. List
// Blobs has no include=system: 400 InvalidQueryParameterValue naming
// include, as any include value it does not know.
func TestListIncludeSystem(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "$logs", "$web", "plain")
	names := func(inc service.ListContainersInclude) []string {
		t.Helper()
		var out []string
		pager := b.client.NewListContainersPager(&azblob.ListContainersOptions{Include: inc})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page.ContainerItems {
				out = append(out, *c.Name)
			}
		}
		return out
	}
	if got := strings.Join(names(service.ListContainersInclude{}), ","); got != "$web,plain" {
		t.Errorf("List Containers: %s, want $web,plain", got)
	}
	if got := strings.Join(names(service.ListContainersInclude{System: true, Metadata: true}), ","); got != "$logs,$web,plain" {
		t.Errorf("List Containers include=system: %s, want $logs,$web,plain", got)
	}
	resp, body := b.do(t, "GET", "plain?restype=container&comp=list&include=system", "", nil)
	wantStatus(t, resp, http.StatusBadRequest, "InvalidQueryParameterValue", "List Blobs include=system")
	if !strings.Contains(body, "<QueryParameterName>include</QueryParameterName>") {
		t.Errorf("List Blobs include=system: the refusal does not name include: %s", body)
	}
}

// TestCORSRuleElementsRequired: Set Blob Service Properties takes a
// CorsRule only with all five of AllowedOrigins, AllowedMethods,
// AllowedHeaders, ExposedHeaders and MaxAgeInSeconds (the last three may
// be empty, in any order): Azure answers a rule without one 400
// InvalidXmlDocument (clients whose SDKs left out ExposedHeaders or
// MaxAgeInSeconds report it), and the gateway used to store the rule with
// defaults. A child element outside those five, one of them twice, or an
// element of Cors other than CorsRule, is refused the same way rather
// than dropped.
func TestCORSRuleElementsRequired(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	elems := map[string]string{
		"AllowedOrigins":  "<AllowedOrigins>http://a.example</AllowedOrigins>",
		"AllowedMethods":  "<AllowedMethods>GET</AllowedMethods>",
		"AllowedHeaders":  "<AllowedHeaders>x-ms-*</AllowedHeaders>",
		"ExposedHeaders":  "<ExposedHeaders></ExposedHeaders>",
		"MaxAgeInSeconds": "<MaxAgeInSeconds>5</MaxAgeInSeconds>",
	}
	order := []string{"AllowedOrigins", "AllowedMethods", "AllowedHeaders", "ExposedHeaders", "MaxAgeInSeconds"}
	doc := func(cors string) string {
		return `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors>` + cors + `</Cors></StorageServiceProperties>`
	}
	rule := func(skip, extra string) string {
		var s strings.Builder
		s.WriteString("<CorsRule>")
		for _, n := range order {
			if n != skip {
				s.WriteString(elems[n])
			}
		}
		s.WriteString(extra + "</CorsRule>")
		return s.String()
	}
	refused := map[string]string{
		"an unknown element in a rule": rule("", "<AllowedCredentials>true</AllowedCredentials>"),
		"an element twice":             rule("", elems["AllowedMethods"]),
		"an unknown element in Cors":   rule("", "") + "<Rule/>",
	}
	for _, n := range order {
		refused["no "+n] = rule(n, "")
	}
	for what, cors := range refused {
		resp, body := b.do(t, "PUT", "?restype=service&comp=properties", doc(cors), nil)
		wantStatus(t, resp, http.StatusBadRequest, "InvalidXmlDocument", what+": "+body)
	}
	props, err := b.client.ServiceClient().GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.CORS) != 0 {
		t.Fatalf("a refused document stored CORS rules: %+v", props.CORS)
	}
	// The SDK's order (by name) and empty lists are a rule.
	sdkOrder := "<CorsRule><AllowedHeaders></AllowedHeaders><AllowedMethods>GET</AllowedMethods>" +
		"<AllowedOrigins>*</AllowedOrigins><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>0</MaxAgeInSeconds></CorsRule>"
	resp, body := b.do(t, "PUT", "?restype=service&comp=properties", doc(rule("", "")+sdkOrder), nil)
	wantStatus(t, resp, http.StatusAccepted, "", "two whole rules: "+body)
	if props, err = b.client.ServiceClient().GetProperties(ctx, nil); err != nil || len(props.CORS) != 2 {
		t.Fatalf("CORS rules read back: %v, %+v", err, props.CORS)
	}
}

// TestBlobNameLimitInUTF16Units: Azure's 1,024-character limit on a blob
// name counts UTF-16 code units of the decoded name (512 characters
// outside the BMP fit), and a longer name is 400 OutOfRangeInput. The
// gateway counted UTF-8 bytes, so it refused a name of 513 accented
// letters that Azure takes. A name is also held to what the stores' keys
// hold, leasedb.MaxBlobNameBytes (2,048 bytes: 682 CJK ideographs, not
// Azure's 1,024), refused the same way. The longest names, without
// repeats a database could compress away, and with the longest tag,
// go through every store's columns and keys: written, read, listed,
// staged, snapshotted, tagged, copied and deleted.
func TestBlobNameLimitInUTF16Units(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1024))
	ideographs := func(n int) string {
		var s strings.Builder
		for range n {
			s.WriteRune(rune(0x4E00 + rng.IntN(0x9FFF-0x4E00)))
		}
		return s.String()
	}
	letters := func(n int) string { // U+00C0 to U+024F: 2 bytes each
		var s strings.Builder
		for range n {
			r := rune(0xC0 + rng.IntN(0x250-0xC0))
			if r == 0xD7 || r == 0xF7 {
				r = 'é'
			}
			s.WriteRune(r)
		}
		return s.String()
	}
	forKinds(t, []string{"sqlite", "postgres"}, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "names")
		cc := b.client.ServiceClient().NewContainerClient("names")
		cjk := "d/" + ideographs(682)
		latin := "e/" + letters(1022)
		emoji := strings.Repeat("\U0001F60A", 512)
		longTag := map[string]string{strings.Repeat("k", leasedb.MaxTagKeyLength): strings.Repeat("v", leasedb.MaxTagValueLength)}
		names := []string{strings.Repeat("a", 1024), cjk, latin, emoji}
		for _, name := range names {
			bc := cc.NewBlockBlobClient(name)
			if _, err := bc.UploadBuffer(ctx, []byte("body"), &blockblob.UploadBufferOptions{Tags: longTag}); err != nil {
				t.Fatalf("Put Blob of %d bytes: %v", len(name), err)
			}
			if _, err := bc.StageBlock(ctx, blockID(1), nopSeeker("blk"), nil); err != nil {
				t.Fatalf("Put Block of %d bytes: %v", len(name), err)
			}
			if _, err := bc.CommitBlockList(ctx, []string{blockID(1)}, &blockblob.CommitBlockListOptions{Tags: longTag}); err != nil {
				t.Fatalf("Put Block List of %d bytes: %v", len(name), err)
			}
			if _, err := bc.CreateSnapshot(ctx, nil); err != nil {
				t.Fatalf("Snapshot Blob of %d bytes: %v", len(name), err)
			}
			if _, err := bc.SetTags(ctx, map[string]string{"k": "w"}, nil); err != nil {
				t.Fatalf("Set Blob Tags of %d bytes: %v", len(name), err)
			}
			got, err := bc.DownloadStream(ctx, nil)
			if err != nil {
				t.Fatalf("Get Blob of %d bytes: %v", len(name), err)
			}
			data, _ := io.ReadAll(got.Body)
			got.Body.Close()
			if string(data) != "blk" {
				t.Fatalf("Get Blob of %d bytes: %q", len(name), data)
			}
		}
		copied := emoji[:len(emoji)-4] + "!"
		if _, err := cc.NewBlockBlobClient(copied).CopyFromURL(ctx, cc.NewBlobClient(cjk).URL(), nil); err != nil {
			t.Fatalf("Copy Blob between long names: %v", err)
		}
		var listed []string
		pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Segment.BlobItems {
				if it.Snapshot == nil {
					listed = append(listed, *it.Name)
				}
			}
		}
		if want := []string{names[0], cjk, latin, copied, emoji}; !slices.Equal(listed, want) {
			t.Fatalf("List Blobs: %d names, want the 5 written in order", len(listed))
		}
		hier := cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: to.Ptr("d/")})
		page, err := hier.NextPage(ctx)
		if err != nil || len(page.Segment.BlobItems) != 1 || *page.Segment.BlobItems[0].Name != cjk {
			t.Fatalf("List Blobs prefix d/ with a delimiter: %v", err)
		}
		for _, name := range names {
			if _, err := cc.NewBlobClient(name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
				t.Fatalf("Delete Blob of %d bytes: %v", len(name), err)
			}
		}
		for _, name := range []string{
			"e/" + letters(1023),                    // 1,025 units
			strings.Repeat("\U0001F60A", 512) + "a", // 1,025 units
			strings.Repeat("a", 1025),
			"d/" + ideographs(683), // 685 units, 2,051 bytes
		} {
			_, err := cc.NewBlockBlobClient(name).UploadBuffer(ctx, []byte("x"), nil)
			wantErr(t, err, http.StatusBadRequest, "OutOfRangeInput")
		}
	})
}
