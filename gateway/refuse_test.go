package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/svcerr"
)

// TestVersionIDRefused: with versioning never turned on there are no
// versions, so a read, delete, Set Blob Tier or Set Blob Tags naming one
// answers 404 BlobNotFound, however the parameter is spelled, and a write
// naming one (Set Blob Metadata, Snapshot Blob, Put Blob) is 400: a
// version is immutable. Nothing changes. Before, Delete Blob with a
// made-up version id deleted the live blob, Get returned it, and Set Blob
// Tier / Tags / Metadata applied to it. A copy whose source names a version
// of a blob in this gateway finds no source; List Blobs include=versions
// lists the blobs without version ids (none has one), and
// include=deletedwithversions with a delimiter or with versions is 501.
func TestVersionIDRefused(t *testing.T) {
	const vid = "2024-01-01T00:00:00.0000000Z"
	forKinds(t, edgeKinds, func(t *testing.T, kind string) {
		b := setup(t, kind)
		cc := b.fillEdge(t)
		ctx := context.Background()
		if _, err := cc.NewAppendBlobClient("log").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		before := b.accountState(t)
		keep, err := cc.NewBlobClient("keep").WithVersionID(vid)
		if err != nil {
			t.Fatal(err)
		}
		_, err = keep.Delete(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = keep.DownloadStream(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = keep.GetProperties(ctx, nil)
		wantErr(t, err, 404, "")
		_, err = keep.SetTier(ctx, blob.AccessTierCool, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = keep.SetTags(ctx, map[string]string{"t": "2"}, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = keep.GetTags(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")
		_, err = keep.SetMetadata(ctx, map[string]*string{"m": to.Ptr("w")}, nil)
		wantErr(t, err, 400, "InvalidQueryParameterValue")

		// Any case of the name; hand-built, as the SDK spells it one way.
		for _, q := range []string{"versionid", "versionId", "VERSIONID"} {
			cases := []struct {
				method, path, body string
				status             int
				code               string
			}{
				{"DELETE", "edge/keep?" + q + "=" + vid, "", 404, "BlobNotFound"},
				{"GET", "edge/keep?" + q + "=" + vid, "", 404, "BlobNotFound"},
				{"PUT", "edge/keep?comp=tier&" + q + "=" + vid, "", 404, "BlobNotFound"},
				{"PUT", "edge/keep?comp=metadata&" + q + "=" + vid, "", 400, "InvalidQueryParameterValue"},
				{"PUT", "edge/keep?comp=snapshot&" + q + "=" + vid, "", 400, "InvalidQueryParameterValue"},
				{"PUT", "edge/keep?" + q + "=" + vid, "new bytes", 400, "InvalidQueryParameterValue"},
			}
			for _, c := range cases {
				hdr := map[string]string{"x-ms-access-tier": "Cool", "x-ms-meta-m": "w", "x-ms-blob-type": "BlockBlob"}
				resp, body := b.do(t, c.method, c.path, c.body, hdr)
				if d := statusDiff(resp, c.status, c.code); d != "" {
					t.Errorf("%s %s: %s\n%s", c.method, c.path, d, body)
				}
			}
		}

		// Copy sources naming a version of a blob here.
		src := cc.NewBlobClient("keep").URL()
		for _, q := range []string{"?versionid=", "?versionId="} {
			_, err = cc.NewBlockBlobClient("copy").StartCopyFromURL(ctx, src+q+vid, nil)
			wantErr(t, err, 404, "BlobNotFound")
			_, err = cc.NewBlockBlobClient("copy").CopyFromURL(ctx, src+q+vid, nil)
			wantErr(t, err, 404, "CannotVerifyCopySource")
			_, err = cc.NewBlockBlobClient("copy").UploadBlobFromURL(ctx, src+q+vid, nil)
			wantErr(t, err, 404, "CannotVerifyCopySource")
			_, err = cc.NewBlockBlobClient("copy").StageBlockFromURL(ctx, blockID(1), src+q+vid, nil)
			wantErr(t, err, 404, "CannotVerifyCopySource")
			_, err = cc.NewAppendBlobClient("log").AppendBlockFromURL(ctx, src+q+vid, nil)
			wantErr(t, err, 404, "CannotVerifyCopySource")
		}

		pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Versions: true}})
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Segment.BlobItems) == 0 {
			t.Fatal("include=versions listed nothing")
		}
		for _, it := range page.Segment.BlobItems {
			if it.VersionID != nil || it.IsCurrentVersion != nil {
				t.Errorf("%s listed with version %v, current %v: versioning was never on", *it.Name, it.VersionID, it.IsCurrentVersion)
			}
		}
		// include=deletedwithversions with a delimiter is built
		// (TestListDeletedWithVersions); with versions it is not.
		for _, q := range []string{"include=metadata,DeletedWithVersions,versions&delimiter=/", "include=versions,DeletedWithVersions"} {
			resp, _ := b.do(t, "GET", "edge?restype=container&comp=list&"+q, "", nil)
			if resp.StatusCode != 501 {
				t.Errorf("%s: %d, want 501", q, resp.StatusCode)
			}
		}

		if after := b.accountState(t); after != before {
			t.Fatalf("a request naming a version changed something:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if got := download(t, b.client, "edge", "keep"); string(got) != "kept" {
			t.Fatalf("keep is %q", got)
		}
	})
}

// TestRefusedFeatures: customer-provided keys, encryption scopes other than
// the account's, immutability policies and legal holds, and service
// properties that enable soft delete, static websites or analytics are
// refused with 400 and store nothing; page blob operations answer 501
// NotImplemented (Blob Batch, once refused here too: batch_test.go). Before, each was accepted and ignored (a
// blob "encrypted" with a customer key read back as plaintext without
// it), and page blobs and batches got 400 or 405.
func TestRefusedFeatures(t *testing.T) {
	forKinds(t, edgeKinds, func(t *testing.T, kind string) {
		b := setup(t, kind)
		cc := b.fillEdge(t)
		ctx := context.Background()
		before := b.accountState(t)
		notStored := func(name string) {
			t.Helper()
			_, err := cc.NewBlobClient(name).GetProperties(ctx, nil)
			wantErr(t, err, 404, "")
		}

		key := bytes.Repeat([]byte{7}, 32)
		cpk := &blob.CPKInfo{EncryptionKey: to.Ptr(base64.StdEncoding.EncodeToString(key)),
			EncryptionKeySHA256: to.Ptr(base64.StdEncoding.EncodeToString(make([]byte, 32))), // a wrong hash
			EncryptionAlgorithm: to.Ptr(blob.EncryptionAlgorithmTypeAES256)}
		_, err := cc.NewBlockBlobClient("cpk").Upload(ctx, nopSeeker("secret"), &blockblob.UploadOptions{CPKInfo: cpk})
		wantErr(t, err, 400, "UnsupportedHeader")
		notStored("cpk")
		_, err = cc.NewBlockBlobClient("cpk").StageBlock(ctx, blockID(1), nopSeeker("secret"), &blockblob.StageBlockOptions{CPKInfo: cpk})
		wantErr(t, err, 400, "UnsupportedHeader")
		_, err = cc.NewBlobClient("keep").DownloadStream(ctx, &blob.DownloadStreamOptions{CPKInfo: cpk})
		wantErr(t, err, 400, "UnsupportedHeader")
		_, err = cc.NewBlobClient("keep").SetMetadata(ctx, map[string]*string{"m": to.Ptr("w")}, &blob.SetMetadataOptions{CPKInfo: cpk})
		wantErr(t, err, 400, "UnsupportedHeader")

		_, err = cc.NewBlockBlobClient("scoped").Upload(ctx, nopSeeker("x"), &blockblob.UploadOptions{
			CPKScopeInfo: &blob.CPKScopeInfo{EncryptionScope: to.Ptr("myscope")}})
		wantErr(t, err, 400, "UnsupportedHeader")
		notStored("scoped")
		_, err = b.client.ServiceClient().NewContainerClient("scoped").Create(ctx, &container.CreateOptions{
			CPKScopeInfo: &container.CPKScopeInfo{DefaultEncryptionScope: to.Ptr("myscope"), PreventEncryptionScopeOverride: to.Ptr(true)}})
		wantErr(t, err, 400, "UnsupportedHeader")
		_, err = b.client.ServiceClient().NewContainerClient("scoped").Create(ctx, &container.CreateOptions{
			CPKScopeInfo: &container.CPKScopeInfo{DefaultEncryptionScope: to.Ptr("$account-encryption-key"), PreventEncryptionScopeOverride: to.Ptr(true)}})
		wantErr(t, err, 400, "UnsupportedHeader")

		_, err = cc.NewBlockBlobClient("held").Upload(ctx, nopSeeker("x"), &blockblob.UploadOptions{LegalHold: to.Ptr(true)})
		wantErr(t, err, 400, "UnsupportedHeader")
		notStored("held")
		_, err = cc.NewBlockBlobClient("held").Upload(ctx, nopSeeker("x"), &blockblob.UploadOptions{
			ImmutabilityPolicyExpiryTime: to.Ptr(time.Now().Add(time.Hour)), ImmutabilityPolicyMode: to.Ptr(blob.ImmutabilityPolicySettingLocked)})
		wantErr(t, err, 400, "UnsupportedHeader")
		notStored("held")
		_, err = cc.NewBlobClient("keep").SetImmutabilityPolicy(ctx, time.Now().Add(time.Hour), nil)
		wantErr(t, err, 501, "NotImplemented")
		_, err = cc.NewBlobClient("keep").DeleteImmutabilityPolicy(ctx, nil)
		wantErr(t, err, 501, "NotImplemented")
		_, err = cc.NewBlobClient("keep").SetLegalHold(ctx, true, nil)
		wantErr(t, err, 501, "NotImplemented")

		svc := b.client.ServiceClient()
		// Blob soft delete is built; a retention outside Azure's 1 to
		// 365 days is refused as Azure does, and nothing is stored.
		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr[int32](366)}})
		wantErr(t, err, 400, "InvalidXmlDocument")
		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{StaticWebsite: &service.StaticWebsite{Enabled: to.Ptr(true), IndexDocument: to.Ptr("index.html")}})
		wantErr(t, err, 400, "UnsupportedXmlNode")
		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{Logging: &service.Logging{Version: to.Ptr("1.0"), Read: to.Ptr(true), Write: to.Ptr(false), Delete: to.Ptr(false),
			RetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}}})
		wantErr(t, err, 400, "UnsupportedXmlNode")
		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{HourMetrics: &service.Metrics{Version: to.Ptr("1.0"), Enabled: to.Ptr(true), IncludeAPIs: to.Ptr(true),
			RetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}}})
		wantErr(t, err, 400, "UnsupportedXmlNode")
		_, err = svc.SetProperties(ctx, &service.SetPropertiesOptions{DefaultServiceVersion: to.Ptr("2020-02-10")})
		wantErr(t, err, 400, "UnsupportedXmlNode")
		// A whole document: the refused element keeps the allowed
		// CORS rule beside it from being stored.
		resp, body := b.do(t, "PUT", "?restype=service&comp=properties",
			`<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders></AllowedHeaders><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule></Cors>`+
				`<ContainerDeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days></ContainerDeleteRetentionPolicy></StorageServiceProperties>`, nil)
		if d := statusDiff(resp, 400, "UnsupportedXmlNode"); d != "" {
			t.Errorf("unknown element: %s: %s", d, body)
		}
		props, err := svc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(props.CORS) != 0 || props.Logging == nil || *props.Logging.Read || *props.HourMetrics.Enabled || props.DefaultServiceVersion != nil {
			t.Fatalf("a refused Set Blob Service Properties was stored: %+v", props)
		}

		// Incremental Copy Blob works (TestIncrementalCopy); a source
		// without a SAS is refused before anything is stored.
		_, err = cc.NewPageBlobClient("inc").StartCopyIncremental(ctx, cc.NewBlobClient("keep").URL(), "2024-01-01T00:00:00.0000000Z", nil)
		wantErr(t, err, 403, "CannotVerifyCopySource")
		notStored("inc")

		if after := b.accountState(t); after != before {
			t.Fatalf("a refused request stored something:\nbefore:\n%s\nafter:\n%s", before, after)
		}

		// What asks for nothing beyond the gateway stays accepted:
		// the account's own scope, legal hold off, features disabled.
		if _, err := cc.NewBlockBlobClient("plain").Upload(ctx, nopSeeker("x"), &blockblob.UploadOptions{
			LegalHold: to.Ptr(false), CPKScopeInfo: &blob.CPKScopeInfo{EncryptionScope: to.Ptr("$account-encryption-key")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.ServiceClient().NewContainerClient("scoped").Create(ctx, &container.CreateOptions{
			CPKScopeInfo: &container.CPKScopeInfo{DefaultEncryptionScope: to.Ptr("$account-encryption-key"), PreventEncryptionScopeOverride: to.Ptr(false)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{
			DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)},
			StaticWebsite:         &service.StaticWebsite{Enabled: to.Ptr(false)},
			Logging: &service.Logging{Version: to.Ptr("1.0"), Read: to.Ptr(false), Write: to.Ptr(false), Delete: to.Ptr(false),
				RetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRefusedHeaderTable: each refused header is refused with 400
// UnsupportedHeader naming it, whatever else the request carries; values
// that ask for nothing the gateway lacks pass; key material is never
// echoed.
func TestRefusedHeaderTable(t *testing.T) {
	tests := []struct {
		hdr    map[string]string
		refuse string // the header named, "" accepted
	}{
		{map[string]string{}, ""},
		{map[string]string{"x-ms-encryption-key": "a2V5"}, "x-ms-encryption-key"},
		{map[string]string{"x-ms-encryption-key-sha256": "aGFzaA=="}, "x-ms-encryption-key-sha256"},
		{map[string]string{"x-ms-encryption-algorithm": "AES256"}, "x-ms-encryption-algorithm"},
		{map[string]string{"x-ms-encryption-scope": "myscope"}, "x-ms-encryption-scope"},
		{map[string]string{"x-ms-encryption-scope": "$account-encryption-key"}, ""},
		{map[string]string{"x-ms-default-encryption-scope": "myscope"}, "x-ms-default-encryption-scope"},
		{map[string]string{"x-ms-default-encryption-scope": "$account-encryption-key"}, ""},
		{map[string]string{"x-ms-deny-encryption-scope-override": "true"}, "x-ms-deny-encryption-scope-override"},
		{map[string]string{"x-ms-deny-encryption-scope-override": "False"}, ""},
		{map[string]string{"x-ms-immutability-policy-until-date": "Mon, 01 Jan 2124 00:00:00 GMT"}, "x-ms-immutability-policy-until-date"},
		{map[string]string{"x-ms-immutability-policy-mode": "Unlocked"}, "x-ms-immutability-policy-mode"},
		{map[string]string{"x-ms-legal-hold": "true"}, "x-ms-legal-hold"},
		{map[string]string{"x-ms-legal-hold": "false"}, ""},
		{map[string]string{"x-ms-immutable-storage-with-versioning-enabled": "true"}, "x-ms-immutable-storage-with-versioning-enabled"},
		{map[string]string{"x-ms-immutable-storage-with-versioning-enabled": "false"}, ""},
		{map[string]string{"x-ms-encryption-key": ""}, ""},
		// Table order decides which one is named.
		{map[string]string{"x-ms-legal-hold": "true", "x-ms-encryption-key": "a2V5"}, "x-ms-encryption-key"},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.hdr {
			h.Set(k, v)
		}
		err := gateway.RefuseHeaders(h)
		if tc.refuse == "" {
			if err != nil {
				t.Errorf("%v: refused: %v", tc.hdr, err)
			}
			continue
		}
		e, ok := svcerr.As(err)
		if !ok || e.Code != svcerr.UnsupportedHeader || e.Status() != 400 || len(e.Details) < 2 || e.Details[0][1] != tc.refuse {
			t.Errorf("%v: %v, want 400 UnsupportedHeader naming %s", tc.hdr, err, tc.refuse)
			continue
		}
		if strings.HasPrefix(tc.refuse, "x-ms-encryption-key") && e.Details[1][1] != "" {
			t.Errorf("%v: key material echoed: %q", tc.hdr, e.Details[1][1])
		}
	}
}

// TestRefusedServiceProps: Set Blob Service Properties documents that turn
// on what the gateway does not do are refused; the same elements off, and
// CORS, pass.
func TestRefusedServiceProps(t *testing.T) {
	const head = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>`
	const tail = `</StorageServiceProperties>`
	tests := []struct {
		body   string
		refuse bool
	}{
		{`<Cors />`, false},
		{`<DeleteRetentionPolicy><Enabled>false</Enabled></DeleteRetentionPolicy>`, false},
		// Blob soft delete is acted on (softdelete.go; its checks:
		// TestParseDeleteRetention).
		{`<DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days></DeleteRetentionPolicy>`, false},
		{`<DeleteRetentionPolicy><Enabled> TRUE </Enabled><Days>7</Days></DeleteRetentionPolicy>`, false},
		{`<StaticWebsite><Enabled>false</Enabled></StaticWebsite>`, false},
		{`<StaticWebsite><Enabled>true</Enabled><IndexDocument>i.html</IndexDocument></StaticWebsite>`, true},
		{`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>`, false},
		{`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>true</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>`, true},
		{`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled></MinuteMetrics>`, false},
		{`<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs></HourMetrics>`, true},
		{`<MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs></MinuteMetrics>`, true},
		{`<DefaultServiceVersion>2020-02-10</DefaultServiceVersion>`, true},
		{`<ContainerDeleteRetentionPolicy><Enabled>true</Enabled></ContainerDeleteRetentionPolicy>`, true},
		{`<Cors /><StaticWebsite><Enabled>true</Enabled></StaticWebsite>`, true},
		// xs:boolean's other spellings of true turn them on as well (as
		// DeleteRetentionPolicy's Enabled is read): never stored and
		// ignored.
		{`<StaticWebsite><Enabled>1</Enabled><IndexDocument>i.html</IndexDocument></StaticWebsite>`, true},
		{`<Logging><Version>1.0</Version><Read>1</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>`, true},
		{`<HourMetrics><Version>1.0</Version><Enabled>1</Enabled><IncludeAPIs>true</IncludeAPIs></HourMetrics>`, true},
		{`<MinuteMetrics><Version>1.0</Version><Enabled>1</Enabled><IncludeAPIs>true</IncludeAPIs></MinuteMetrics>`, true},
		{`<StaticWebsite><Enabled>0</Enabled></StaticWebsite>`, false},
		// A retention policy is stored and answered while logging and
		// metrics are off.
		{`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>`, false},
		{`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>true</Enabled><Days>365</Days></RetentionPolicy></MinuteMetrics>`, false},
	}
	for _, tc := range tests {
		err := gateway.RefuseServiceProps(head + tc.body + tail)
		switch {
		case tc.refuse && !svcerr.HasCode(err, svcerr.UnsupportedXmlNode):
			t.Errorf("%s: %v, want 400 UnsupportedXmlNode", tc.body, err)
		case !tc.refuse && err != nil:
			t.Errorf("%s: refused: %v", tc.body, err)
		}
	}
	// A switch that is neither true nor false is no document Azure takes.
	for _, body := range []string{
		`<StaticWebsite><Enabled>yes</Enabled></StaticWebsite>`,
		`<Logging><Version>1.0</Version><Read>false</Read><Write>on</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>`,
		`<HourMetrics><Version>1.0</Version><Enabled>enabled</Enabled></HourMetrics>`,
		// An enabled retention policy keeps 1 to 365 days.
		`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>true</Enabled><Days>999</Days></RetentionPolicy></Logging>`,
		`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>true</Enabled></RetentionPolicy></Logging>`,
		`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>true</Enabled><Days>0</Days></RetentionPolicy></HourMetrics>`,
		`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>1</Enabled><Days>366</Days></RetentionPolicy></MinuteMetrics>`,
		`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>maybe</Enabled></RetentionPolicy></MinuteMetrics>`,
		// Days and IncludeAPIs are an Int32 and a boolean even while off:
		// they are stored and answered, and the SDKs read them so.
		`<Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled><Days>seven</Days></RetentionPolicy></Logging>`,
		`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><IncludeAPIs>maybe</IncludeAPIs></HourMetrics>`,
	} {
		if err := gateway.RefuseServiceProps(head + body + tail); !svcerr.HasCode(err, svcerr.InvalidXmlDocument) {
			t.Errorf("%s: %v, want 400 InvalidXmlDocument", body, err)
		}
	}
}
