// Tests for SAS verification (sas.go: service SAS, account SAS and the
// permission checks): fixed test vectors (known tokens and signatures),
// literal strings-to-sign for every signed-version range, tokens
// built by the azblob SDK's own SAS builders (the oracle), and the security
// cases that must fail. Tokens here are built from test-only keys; the
// tests also assert that no error ever carries a key or a signature.

package auth

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/blobgw/blobgw/svcerr"
)

var (
	sasStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	sasEnd   = time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	sasNow   = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
)

const (
	sasBlob = "dir/a b+ü.txt" // decoded name with characters that URL-encode
	sasSnap = "2024-01-01T10:00:00.0000000Z"
)

func errCode(err error) svcerr.Code {
	if err == nil {
		return ""
	}
	if e, ok := svcerr.As(err); ok {
		return e.Code
	}
	return "not-a-svcerr:" + svcerr.Code(err.Error())
}

// errText is everything an error would put on the wire.
func errText(err error) string {
	e, ok := svcerr.As(err)
	if !ok {
		return err.Error()
	}
	s := e.Error()
	for _, d := range e.Details {
		s += "\n" + d[0] + "=" + d[1]
	}
	return s
}

// values builds url.Values from name/value pairs.
func values(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func cloneValues(q url.Values) url.Values {
	c := url.Values{}
	for k, vs := range q {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// signSvc signs a service SAS of signed version ≥ 2020-12-06 with the
// 16-field layout written out here, independently of sas.go.
func signSvc(t *testing.T, key string, q url.Values, res Resource) url.Values {
	t.Helper()
	cr := "/blob/" + res.Account + "/" + res.Container
	if q.Get("sr") != "c" {
		cr += "/" + res.Blob
	}
	snap := ""
	if q.Get("sr") == "bs" {
		snap = res.Snapshot
	}
	sts := strings.Join([]string{q.Get("sp"), q.Get("st"), q.Get("se"), cr, q.Get("si"), q.Get("sip"), q.Get("spr"),
		q.Get("sv"), q.Get("sr"), snap, q.Get("ses"), q.Get("rscc"), q.Get("rscd"), q.Get("rsce"), q.Get("rscl"), q.Get("rsct")}, "\n")
	q = cloneValues(q)
	q.Set("sig", Sign(mustKey(t, key), sts))
	return q
}

// signAcct signs an account SAS with the account SAS string-to-sign layout
// written out here.
func signAcct(t *testing.T, key, account string, q url.Values) url.Values {
	t.Helper()
	fields := []string{account, q.Get("sp"), q.Get("ss"), q.Get("srt"), q.Get("st"), q.Get("se"), q.Get("sip"), q.Get("spr"), q.Get("sv")}
	if q.Get("sv") >= "2020-12-06" {
		fields = append(fields, q.Get("ses"))
	}
	q = cloneValues(q)
	q.Set("sig", Sign(mustKey(t, key), strings.Join(fields, "\n")+"\n"))
	return q
}

func TestSASContractVectors(t *testing.T) {
	accts := testAccounts(t)

	t.Run("service", func(t *testing.T) {
		q := values("sp", "r", "st", "2024-01-01T00:00:00Z", "se", "2024-01-02T00:00:00Z", "spr", "https,http",
			"sv", "2020-12-06", "sr", "b", "sig", "6qdJ3dKyDMNNjmjaE7A2FGv2yxuT7v5zkYhZPB+nHh8=")
		res := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
		const wantSTS = "r\n2024-01-01T00:00:00Z\n2024-01-02T00:00:00Z\n/blob/devstoreaccount1/c1/b1\n\n\nhttps,http\n2020-12-06\nb\n\n\n\n\n\n\n"
		p, err := sasParams(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := serviceStringToSign(p, res, devAccount); got != wantSTS {
			t.Fatalf("string-to-sign\n got %q\nwant %q", got, wantSTS)
		}
		if got := Sign(mustKey(t, devKey), wantSTS); got != q.Get("sig") {
			t.Fatalf("Sign = %s, want the vector's signature", got)
		}
		name, err := VerifySAS(SASRequest{Query: q, Resource: res, Op: OpReadBlob, Now: sasNow}, accts, nil)
		if err != nil || name != devAccount {
			t.Fatalf("VerifySAS = %q, %v", name, err)
		}
	})

	t.Run("account", func(t *testing.T) {
		q := values("sp", "rwdlac", "ss", "b", "srt", "sco", "se", "2024-01-02T00:00:00Z", "spr", "https,http",
			"sv", "2020-12-06", "sig", "qtJDpbVYzbOP80Zcp0EqkdgIh5edC+Sd9dI2GuUheB4=")
		const wantSTS = "devstoreaccount1\nrwdlac\nb\nsco\n\n2024-01-02T00:00:00Z\n\nhttps,http\n2020-12-06\n\n"
		p, err := sasParams(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := accountStringToSign(p, devAccount); got != wantSTS {
			t.Fatalf("string-to-sign\n got %q\nwant %q", got, wantSTS)
		}
		if got := Sign(mustKey(t, devKey), wantSTS); got != q.Get("sig") {
			t.Fatalf("Sign = %s, want the vector's signature", got)
		}
		name, err := VerifySAS(SASRequest{Query: q, Resource: Resource{Account: devAccount}, Op: OpListContainers, Now: sasNow}, accts, nil)
		if err != nil || name != devAccount {
			t.Fatalf("VerifySAS = %q, %v", name, err)
		}
	})
}

// TestSASVersionLayouts pins the string-to-sign of every signed-version range
// of the service and account SAS (Create a service SAS, Create an account
// SAS) with literal strings, then verifies tokens signed over them.
func TestSASVersionLayouts(t *testing.T) {
	accts := testAccounts(t)
	pol := func(container, id string) (StoredPolicy, bool) {
		if container == "c1" && id == "pol1" {
			return StoredPolicy{ID: id, Expiry: sasEnd, Permission: "rl"}, true
		}
		return StoredPolicy{}, false
	}
	blob := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
	cases := []struct {
		name    string
		q       url.Values
		res     Resource
		op      Operation
		account bool
		https   bool
		ip      string
		want    string
	}{
		{
			name: "service 2013-08-15 (no /blob prefix, 11 fields)",
			q:    values("sv", "2013-08-15", "sr", "b", "sp", "r", "se", "2024-01-02"),
			res:  blob, op: OpReadBlob,
			want: "r\n\n2024-01-02\n/devstoreaccount1/c1/b1\n\n2013-08-15\n\n\n\n\n",
		},
		{
			name: "service 2015-02-21 (/blob prefix, 11 fields, overrides)",
			q:    values("sv", "2015-02-21", "sr", "b", "sp", "r", "se", "2024-01-02", "rscc", "no-cache", "rsct", "text/plain"),
			res:  blob, op: OpReadBlob,
			want: "r\n\n2024-01-02\n/blob/devstoreaccount1/c1/b1\n\n2015-02-21\nno-cache\n\n\n\ntext/plain",
		},
		{
			name: "service 2015-04-05 (sip, spr; 13 fields)",
			q: values("sv", "2015-04-05", "sr", "c", "sp", "rl", "st", "2024-01-01T00:00Z", "se", "2024-01-02T00:00Z",
				"sip", "10.0.0.1-10.0.0.9", "spr", "https"),
			res: Resource{Account: devAccount, Container: "c1", Blob: "x"}, op: OpReadBlob, https: true, ip: "10.0.0.5",
			want: "rl\n2024-01-01T00:00Z\n2024-01-02T00:00Z\n/blob/devstoreaccount1/c1\n\n10.0.0.1-10.0.0.9\nhttps\n2015-04-05\n\n\n\n\n",
		},
		{
			name: "service 2018-11-09 (sr, snapshot; 15 fields)",
			q:    values("sv", "2018-11-09", "sr", "bs", "sp", "r", "se", "2024-01-02T00:00:00.1234567Z", "rscd", "attachment; filename=a.txt"),
			res:  Resource{Account: devAccount, Container: "c1", Blob: "b1", Snapshot: sasSnap}, op: OpReadBlob,
			want: "r\n\n2024-01-02T00:00:00.1234567Z\n/blob/devstoreaccount1/c1/b1\n\n\n\n2018-11-09\nbs\n" + sasSnap + "\n\nattachment; filename=a.txt\n\n\n",
		},
		{
			name: "service 2020-12-06 (ses; 16 fields; stored policy)",
			q:    values("sv", "2020-12-06", "sr", "c", "si", "pol1", "ses", "scope1", "rsce", "gzip", "rscl", "en"),
			res:  Resource{Account: devAccount, Container: "c1"}, op: OpListBlobs,
			want: "\n\n\n/blob/devstoreaccount1/c1\npol1\n\n\n2020-12-06\nc\n\nscope1\n\n\ngzip\nen\n",
		},
		{
			name: "service 2026-12-06 (current SDK default; 16 fields)",
			q:    values("sv", "2026-12-06", "sr", "b", "sp", "r", "se", "2024-01-02T00:00:00Z"),
			res:  blob, op: OpReadBlob,
			want: "r\n\n2024-01-02T00:00:00Z\n/blob/devstoreaccount1/c1/b1\n\n\n\n2026-12-06\nb\n\n\n\n\n\n\n",
		},
		{
			name: "account 2015-04-05 (9 fields)",
			q:    values("sv", "2015-04-05", "ss", "b", "srt", "o", "sp", "r", "se", "2024-01-02T00:00:00Z"),
			res:  blob, op: OpReadBlob, account: true,
			want: "devstoreaccount1\nr\nb\no\n\n2024-01-02T00:00:00Z\n\n\n2015-04-05\n",
		},
		{
			name: "account 2020-12-06 (ses; 10 fields)",
			q: values("sv", "2020-12-06", "ss", "bq", "srt", "sc", "sp", "rl", "st", "2024-01-01T00:00:00Z", "se", "2024-01-02T00:00:00Z",
				"sip", "10.0.0.1", "spr", "https", "ses", "scope1"),
			res: Resource{Account: devAccount}, op: OpListContainers, account: true, https: true, ip: "10.0.0.1",
			want: "devstoreaccount1\nrl\nbq\nsc\n2024-01-01T00:00:00Z\n2024-01-02T00:00:00Z\n10.0.0.1\nhttps\n2020-12-06\nscope1\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := sasParams(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if tc.account {
				got = accountStringToSign(p, devAccount)
			} else {
				got = serviceStringToSign(p, tc.res, devAccount)
			}
			if got != tc.want {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, tc.want)
			}
			for _, key := range []string{devKey, devKey2} {
				q := cloneValues(tc.q)
				q.Set("sig", Sign(mustKey(t, key), tc.want))
				req := SASRequest{Query: q, Resource: tc.res, Op: tc.op, HTTPS: tc.https, ClientIP: net.ParseIP(tc.ip), Now: sasNow}
				if name, err := VerifySAS(req, accts, pol); err != nil || name != devAccount {
					t.Fatalf("VerifySAS = %q, %v", name, err)
				}
			}
		})
	}
}

func TestSASTimeFormats(t *testing.T) {
	accts := testAccounts(t)
	verify := func(t *testing.T, st, se string, now time.Time) error {
		t.Helper()
		q := values("sv", "2020-12-06", "ss", "b", "srt", "sco", "sp", "r", "se", se)
		if st != "" {
			q.Set("st", st)
		}
		q = signAcct(t, devKey, devAccount, q)
		_, err := VerifySAS(SASRequest{Query: q, Resource: Resource{Account: devAccount, Container: "c", Blob: "b"}, Op: OpReadBlob, Now: now}, accts, nil)
		return err
	}
	for _, se := range []string{
		"2024-01-02", "2024-01-02T00:00Z", "2024-01-02T00:00:00Z", "2024-01-02T00:00:00.1Z", "2024-01-02T00:00:00.1234567Z",
	} {
		if err := verify(t, "", se, sasNow); err != nil {
			t.Errorf("se=%s: %v", se, err)
		}
	}
	for _, st := range []string{"2024-01-01", "2024-01-01T00:00Z", "2024-01-01T11:59:59.9999999Z"} {
		if err := verify(t, st, "2024-01-02", sasNow); err != nil {
			t.Errorf("st=%s: %v", st, err)
		}
	}
	for _, se := range []string{
		"", "2024-01-02T00:00:00", "2024-01-02T00:00:00.12345678Z", "2024-01-02T00:00:00+00:00", "2024-01-02T00Z",
		"2024-1-2", "2024-02-30", "2024-01-02T24:00Z", "Tue, 02 Jan 2024 00:00:00 GMT", " 2024-01-02", "2024-01-02t00:00z",
	} {
		if err := verify(t, "", se, sasNow); errCode(err) != svcerr.AuthenticationFailed {
			t.Errorf("se=%q: got %v, want AuthenticationFailed", se, err)
		}
	}
	if err := verify(t, "2024-01-01T00:00:00.", "2024-01-02", sasNow); errCode(err) != svcerr.AuthenticationFailed {
		t.Errorf("malformed st: got %v", err)
	}
	// Fractions count: 0.5 s is inside a window ending at .5, 0.6 s is not.
	end := time.Date(2024, 1, 2, 0, 0, 0, 500_000_000, time.UTC)
	if err := verify(t, "", "2024-01-02T00:00:00.5Z", end); err != nil {
		t.Errorf("at fractional expiry: %v", err)
	}
	if err := verify(t, "", "2024-01-02T00:00:00.5Z", end.Add(100*time.Millisecond)); errCode(err) != svcerr.AuthenticationFailed {
		t.Errorf("past fractional expiry: %v", err)
	}
}

func TestSASTimeWindow(t *testing.T) {
	accts := testAccounts(t)
	const st, se = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"
	cases := []struct {
		name       string
		st, se     string
		now        time.Time
		wantDetail string // "" → accepted
	}{
		{"at start", st, se, sasStart, ""},
		{"at expiry", st, se, sasEnd, ""},
		{"inside", st, se, sasNow, ""},
		{"1s past expiry", st, se, sasEnd.Add(time.Second),
			"Signature not valid in the specified time frame: Start [Mon, 01 Jan 2024 00:00:00 GMT] - Expiry [Tue, 02 Jan 2024 00:00:00 GMT] - Current [Tue, 02 Jan 2024 00:00:01 GMT]"},
		{"1s before start", st, se, sasStart.Add(-time.Second),
			"Signature not valid in the specified time frame: Start [Mon, 01 Jan 2024 00:00:00 GMT] - Expiry [Tue, 02 Jan 2024 00:00:00 GMT] - Current [Sun, 31 Dec 2023 23:59:59 GMT]"},
		{"expiry before start", se, st, sasNow,
			"Signed expiry time [Mon, 01 Jan 2024 00:00:00 GMT] must be after signed start time [Tue, 02 Jan 2024 00:00:00 GMT]"},
		{"no start, 1s past expiry", "", se, sasEnd.Add(time.Second),
			"Signed expiry time [Tue, 02 Jan 2024 00:00:00 GMT] must be after signed start time [Tue, 02 Jan 2024 00:00:01 GMT]"},
		{"no start, at expiry", "", se, sasEnd, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, kind := range []string{"service", "account"} {
				var q url.Values
				res := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
				if kind == "service" {
					q = signSvc(t, devKey, values("sv", "2020-12-06", "sr", "b", "sp", "r", "st", tc.st, "se", tc.se), res)
				} else {
					q = signAcct(t, devKey, devAccount, values("sv", "2020-12-06", "ss", "b", "srt", "o", "sp", "r", "st", tc.st, "se", tc.se))
				}
				if tc.st == "" {
					q.Del("st")
				}
				_, err := VerifySAS(SASRequest{Query: q, Resource: res, Op: OpReadBlob, Now: tc.now}, accts, nil)
				if tc.wantDetail == "" {
					if err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
					continue
				}
				if errCode(err) != svcerr.AuthenticationFailed || detail(err) != tc.wantDetail {
					t.Fatalf("%s: got %v / %q\nwant AuthenticationFailed / %q", kind, err, detail(err), tc.wantDetail)
				}
				if svcerr.Status(errCode(err)) != 403 {
					t.Fatalf("status %d", svcerr.Status(errCode(err)))
				}
			}
		})
	}
}

// permRow is one row of the operation → SAS permission table (Azure's
// "Permissions for a blob" and account SAS permission lists), written out
// here independently of sas.go's opRules (signed version ≥ 2017-07-29, so break
// operations also accept d).
type permRow struct {
	svc     string // service SAS: any of these letters; "" = never
	srt     string // account SAS resource type; "" = any
	acct    string // account SAS: any of these letters; "" = never
	acctAll bool   // account SAS needs all of acct
}

var permRows = map[Operation]permRow{
	OpListContainers:       {"", "s", "l", false},
	OpCreateContainer:      {"", "c", "cw", false},
	OpGetContainer:         {"", "c", "r", false},
	OpSetContainerMetadata: {"", "c", "w", false},
	OpContainerACL:         {"", "c", "", false},
	OpDeleteContainer:      {"", "c", "d", false},
	OpLeaseContainer:       {"", "c", "w", false},
	OpBreakContainerLease:  {"", "c", "wd", false},
	OpListBlobs:            {"l", "c", "l", false},
	OpReadBlob:             {"r", "o", "r", false},
	OpCreateBlob:           {"cw", "o", "cw", false},
	OpOverwriteBlob:        {"w", "o", "w", false},
	OpPutBlock:             {"w", "o", "w", false},
	OpAppendBlock:          {"aw", "o", "aw", false},
	OpWriteBlobProps:       {"w", "o", "w", false},
	OpSnapshotBlob:         {"cw", "o", "cw", false},
	OpLeaseBlob:            {"w", "o", "w", false},
	OpBreakBlobLease:       {"wd", "o", "wd", false},
	OpDeleteBlob:           {"d", "o", "d", false},
	OpBlobTags:             {"t", "o", "t", false},
	OpServiceProperties:    {"", "s", "rw", true},
	OpAccountInfo:          {"r", "", "rcdlpuw", false},
	OpGetServiceProperties: {"", "s", "r", false},
	OpSetServiceProperties: {"", "s", "w", false},
	OpFindBlobsContainer:   {"f", "c", "f", false},
	OpFindBlobsService:     {"", "s", "f", false},
	OpDeleteBlobVersion:    {"x", "o", "x", false},
	OpBlobBatch:            {"dw", "", "dw", false},
	OpPermanentDeleteBlob:  {"y", "o", "y", false},
}

const lastOp = OpPermanentDeleteBlob

func allOps() []Operation {
	var ops []Operation
	for op := OpListContainers; op <= lastOp; op++ {
		ops = append(ops, op)
	}
	return ops
}

func TestSASEveryOperationHasARule(t *testing.T) {
	for _, op := range allOps() {
		if _, ok := permRows[op]; !ok {
			t.Errorf("%v: no permission row in the test", op)
		}
		if _, ok := opRules[op]; !ok {
			t.Errorf("%v: no rule in sas.go", op)
		}
		if strings.HasPrefix(op.String(), "Operation(") {
			t.Errorf("%d: no name", int(op))
		}
	}
	// An operation without a rule is refused, never allowed.
	bogus := lastOp + 1
	if err := servicePermits(bogus, "c", "racwdxyltfmeopi", "2020-12-06"); errCode(err) != svcerr.AuthorizationPermissionMismatch {
		t.Errorf("unknown op by service SAS: %v", err)
	}
	if err := accountPermits(bogus, "sco", "rwdxylacupfti", "2020-12-06"); errCode(err) != svcerr.AuthorizationPermissionMismatch {
		t.Errorf("unknown op by account SAS: %v", err)
	}
}

// opResource is the resource a request for op addresses in the oracle: the
// account for service-level operations, container c1 for container-level
// ones, blob c1/sasBlob (at snapshot snap) for blob ones; Get Account
// Information is sent to own, the resource the token itself names.
func opResource(op Operation, snap string, own Resource) Resource {
	switch op {
	case OpListContainers, OpServiceProperties, OpGetServiceProperties, OpSetServiceProperties, OpFindBlobsService:
		return Resource{Account: devAccount}
	case OpAccountInfo:
		return own
	case OpCreateContainer, OpGetContainer, OpSetContainerMetadata, OpContainerACL, OpDeleteContainer,
		OpLeaseContainer, OpBreakContainerLease, OpListBlobs, OpFindBlobsContainer, OpBlobBatch:
		return Resource{Account: devAccount, Container: "c1"}
	default:
		return Resource{Account: devAccount, Container: "c1", Blob: sasBlob, Snapshot: snap}
	}
}

func sdkCred(t *testing.T, account, key string) *sas.SharedKeyCredential {
	t.Helper()
	c, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func encodeToken(t *testing.T, qp sas.QueryParameters) url.Values {
	t.Helper()
	q, err := url.ParseQuery(qp.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestSASOracleService verifies service SAS tokens built by the SDK's
// BlobSignatureValues builder against every operation: accepted exactly when
// the permission table allows the token's permissions, AuthorizationPermissionMismatch
// otherwise; requests outside the token's scope fail authentication.
func TestSASOracleService(t *testing.T) {
	accts := testAccounts(t)
	policy := StoredPolicy{ID: "pol1", Expiry: sasEnd, Permission: "rcwl"}
	policies := func(container, id string) (StoredPolicy, bool) {
		if container == "c1" && id == "pol1" {
			return policy, true
		}
		return StoredPolicy{}, false
	}
	snapTime, err := time.Parse(time.RFC3339Nano, "2024-01-01T10:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	perms := []string{"r", "a", "c", "w", "d", "l", "t", "rw", "racwdxltmeopi"} // letters both SDK parsers accept

	type scope struct {
		name string
		blob string
		snap time.Time
		sr   string
		own  Resource
	}
	scopes := []scope{
		{name: "container", sr: "c", own: Resource{Account: devAccount, Container: "c1"}},
		{name: "blob", blob: sasBlob, sr: "b", own: Resource{Account: devAccount, Container: "c1", Blob: sasBlob}},
		{name: "snapshot", blob: sasBlob, snap: snapTime, sr: "bs", own: Resource{Account: devAccount, Container: "c1", Blob: sasBlob, Snapshot: sasSnap}},
	}
	type variant struct {
		name     string
		version  string
		perm     string // "" → from the stored policy
		si       string
		ip       *sas.IPRange
		protocol sas.Protocol
		key      string
		expiry   bool
	}
	var variants []variant
	for _, p := range perms {
		variants = append(variants, variant{name: "sp=" + p, perm: p, expiry: true, key: devKey})
	}
	variants = append(variants,
		variant{name: "sv=2020-12-06", version: "2020-12-06", perm: "rwd", expiry: true, key: devKey},
		variant{name: "key2", perm: "rl", expiry: true, key: devKey2},
		variant{name: "si only", si: "pol1", key: devKey},
		variant{name: "si+sp", si: "pol1", perm: "d", key: devKey},
		variant{name: "ip range+https", perm: "rwl", expiry: true, key: devKey, protocol: sas.ProtocolHTTPS,
			ip: &sas.IPRange{Start: net.ParseIP("10.0.0.0"), End: net.ParseIP("10.0.0.255")}},
		variant{name: "single ip+https,http", perm: "rwl", expiry: true, key: devKey, protocol: sas.ProtocolHTTPSandHTTP,
			ip: &sas.IPRange{Start: net.ParseIP("10.0.0.7")}},
	)

	checked := 0
	for _, sc := range scopes {
		for _, v := range variants {
			if v.si == "pol1" && v.perm != "" {
				// The policy also has a permission; Azure refuses the duplicate.
				policy.Permission = ""
			} else {
				policy.Permission = "rcwl"
			}
			sv := sas.BlobSignatureValues{
				Version:       v.version,
				Protocol:      v.protocol,
				StartTime:     sasStart,
				Permissions:   v.perm,
				Identifier:    v.si,
				ContainerName: "c1",
				BlobName:      sc.blob,
				SnapshotTime:  sc.snap,
			}
			if v.expiry {
				sv.ExpiryTime = sasEnd
			}
			if v.ip != nil {
				sv.IPRange = *v.ip
			}
			qp, err := sv.SignWithSharedKey(sdkCred(t, devAccount, v.key))
			if err != nil {
				t.Fatalf("%s/%s: SDK: %v", sc.name, v.name, err)
			}
			q := encodeToken(t, qp)
			if q.Get("sr") != sc.sr {
				t.Fatalf("%s/%s: SDK built sr=%q", sc.name, v.name, q.Get("sr"))
			}
			granted := q.Get("sp")
			if granted == "" {
				granted = policy.Permission
			}
			for _, op := range allOps() {
				res := opResource(op, "", sc.own)
				if sc.sr == "bs" {
					res = opResource(op, sasSnap, sc.own)
				}
				var want svcerr.Code
				inScope := res.Container == "c1" && (sc.sr == "c" || (res.Blob == sasBlob && res.Snapshot == sc.own.Snapshot))
				row := permRows[op]
				switch {
				case !inScope:
					want = svcerr.AuthenticationFailed
				case row.svc == "" || (op == OpListBlobs && sc.sr != "c") || !strings.ContainsAny(granted, row.svc):
					want = svcerr.AuthorizationPermissionMismatch
				}
				req := SASRequest{Query: q, Resource: res, Op: op, HTTPS: true, ClientIP: net.ParseIP("10.0.0.7"), Now: sasNow}
				name, err := VerifySAS(req, accts, policies)
				if errCode(err) != want || (want == "" && name != devAccount) {
					t.Errorf("%s/%s/%v: got %q, %v; want %q", sc.name, v.name, op, name, err, want)
				}
				checked++
			}
		}
	}
	t.Logf("%d SDK-built service SAS × operation combinations checked", checked)
}

// TestSASOracleAccount does the same for AccountSignatureValues.
func TestSASOracleAccount(t *testing.T) {
	accts := testAccounts(t)
	perms := []string{"r", "w", "d", "l", "a", "c", "t", "u", "p", "rw", "rwdxylacupfti"}
	srts := []string{"s", "c", "o", "sco"}
	checked := 0
	for _, srt := range srts {
		for _, perm := range perms {
			for _, key := range []string{devKey, devKey2} {
				v := sas.AccountSignatureValues{
					Protocol:      sas.ProtocolHTTPS,
					StartTime:     sasStart,
					ExpiryTime:    sasEnd,
					Permissions:   perm,
					ResourceTypes: srt,
					IPRange:       sas.IPRange{Start: net.ParseIP("10.0.0.1"), End: net.ParseIP("10.0.0.9")},
				}
				qp, err := v.SignWithSharedKey(sdkCred(t, devAccount, key))
				if err != nil {
					t.Fatal(err)
				}
				q := encodeToken(t, qp)
				for _, op := range allOps() {
					row := permRows[op]
					var want svcerr.Code
					switch {
					case row.srt != "" && !strings.Contains(srt, row.srt):
						want = svcerr.AuthorizationResourceTypeMismatch
					case row.acct == "":
						want = svcerr.AuthorizationPermissionMismatch
					case row.acctAll:
						for _, c := range row.acct {
							if !strings.ContainsRune(q.Get("sp"), c) {
								want = svcerr.AuthorizationPermissionMismatch
							}
						}
					case !strings.ContainsAny(q.Get("sp"), row.acct):
						want = svcerr.AuthorizationPermissionMismatch
					}
					res := opResource(op, "", Resource{Account: devAccount, Container: "c1", Blob: sasBlob})
					req := SASRequest{Query: q, Resource: res, Op: op, HTTPS: true, ClientIP: net.ParseIP("10.0.0.3"), Now: sasNow}
					name, err := VerifySAS(req, accts, nil)
					if errCode(err) != want || (want == "" && name != devAccount) {
						t.Errorf("srt=%s sp=%s/%v: got %q, %v; want %q", srt, perm, op, name, err, want)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d SDK-built account SAS × operation combinations checked", checked)
}

// TestSASSecurity lists tokens and requests that must be refused.
func TestSASSecurity(t *testing.T) {
	accts := testAccounts(t)
	blobRes := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
	mkBlob := func(t *testing.T, account, key, container, blob, perm string, snap time.Time) url.Values {
		t.Helper()
		qp, err := sas.BlobSignatureValues{
			Protocol: sas.ProtocolHTTPS, StartTime: sasStart, ExpiryTime: sasEnd, Permissions: perm,
			IPRange:       sas.IPRange{Start: net.ParseIP("10.0.0.0"), End: net.ParseIP("10.0.0.255")},
			ContainerName: container, BlobName: blob, SnapshotTime: snap,
		}.SignWithSharedKey(sdkCred(t, account, key))
		if err != nil {
			t.Fatal(err)
		}
		return encodeToken(t, qp)
	}
	mkAcct := func(t *testing.T, srt, perm string) url.Values {
		t.Helper()
		qp, err := sas.AccountSignatureValues{
			Protocol: sas.ProtocolHTTPS, StartTime: sasStart, ExpiryTime: sasEnd, Permissions: perm, ResourceTypes: srt,
		}.SignWithSharedKey(sdkCred(t, devAccount, devKey))
		if err != nil {
			t.Fatal(err)
		}
		return encodeToken(t, qp)
	}
	good := func(t *testing.T) SASRequest {
		return SASRequest{Query: mkBlob(t, devAccount, devKey, "c1", "b1", "r", time.Time{}), Resource: blobRes, Op: OpReadBlob,
			HTTPS: true, ClientIP: net.ParseIP("10.0.0.7"), Now: sasNow}
	}
	set := func(name, value string) func(*SASRequest) {
		return func(r *SASRequest) { r.Query.Set(name, value) }
	}
	del := func(name string) func(*SASRequest) {
		return func(r *SASRequest) { r.Query.Del(name) }
	}
	// tokenOf is good with its token swapped for one the SDK signs with
	// these values, then the mutations.
	tokenOf := func(account, key, container, blob, perm string, snap time.Time, muts ...func(*SASRequest)) func(*testing.T) SASRequest {
		return func(t *testing.T) SASRequest {
			r := good(t)
			r.Query = mkBlob(t, account, key, container, blob, perm, snap)
			for _, m := range muts {
				m(&r)
			}
			return r
		}
	}
	// acctReq is an HTTPS request for op on res under an account SAS of
	// srt and perm, then the mutations.
	acctReq := func(srt, perm string, res Resource, op Operation, muts ...func(*SASRequest)) func(*testing.T) SASRequest {
		return func(t *testing.T) SASRequest {
			r := SASRequest{Query: mkAcct(t, srt, perm), Resource: res, Op: op, HTTPS: true, Now: sasNow}
			for _, m := range muts {
				m(&r)
			}
			return r
		}
	}
	onlyPolicy := func(container, id string) (StoredPolicy, bool) {
		if container == "c1" && id == "pol1" {
			return StoredPolicy{ID: id, Expiry: sasEnd, Permission: "rwdl"}, true
		}
		return StoredPolicy{}, false
	}
	siToken := func(t *testing.T) url.Values {
		qp, err := sas.BlobSignatureValues{ContainerName: "c1", Identifier: "pol1"}.SignWithSharedKey(sdkCred(t, devAccount, devKey))
		if err != nil {
			t.Fatal(err)
		}
		return encodeToken(t, qp)
	}
	// siReq reads blobRes under a token that names stored policy pol1.
	siReq := func(t *testing.T) SASRequest {
		return SASRequest{Query: siToken(t), Resource: blobRes, Op: OpReadBlob, Now: sasNow}
	}

	// The base request must pass, or the cases below prove nothing.
	if _, err := VerifySAS(good(t), accts, nil); err != nil {
		t.Fatalf("base token refused: %v", err)
	}
	if _, err := VerifySAS(siReq(t), accts, onlyPolicy); err != nil {
		t.Fatalf("base si token refused: %v", err)
	}

	cases := []struct {
		name     string
		build    func(t *testing.T) SASRequest
		policies Policies
		want     svcerr.Code
	}{
		{"another account's key", tokenOf(devAccount, otherKey, "c1", "b1", "r", time.Time{}), nil, svcerr.AuthenticationFailed},
		{"another account's token", tokenOf(otherAcct, otherKey, "c1", "b1", "r", time.Time{}), nil, svcerr.AuthenticationFailed},
		{"own token on another account", func(t *testing.T) SASRequest {
			r := good(t)
			r.Resource.Account = otherAcct
			return r
		}, nil, svcerr.AuthenticationFailed},
		{"unknown account", func(t *testing.T) SASRequest {
			r := good(t)
			r.Resource.Account = "nosuchaccount"
			return r
		}, nil, svcerr.AuthenticationFailed},
		{"sp widened", with(good, set("sp", "rw"), opIs(OpOverwriteBlob)), nil, svcerr.AuthenticationFailed},
		{"sp widened, read", with(good, set("sp", "racwd")), nil, svcerr.AuthenticationFailed},
		{"se extended", with(good, set("se", "2024-12-31T00:00:00Z")), nil, svcerr.AuthenticationFailed},
		{"se removed", with(good, del("se")), nil, svcerr.AuthenticationFailed},
		{"st moved", with(good, set("st", "2023-01-01T00:00:00Z")), nil, svcerr.AuthenticationFailed},
		{"st reformatted", with(good, set("st", "2024-01-01T00:00Z")), nil, svcerr.AuthenticationFailed},
		{"sr b→c", with(good, set("sr", "c")), nil, svcerr.AuthenticationFailed},
		{"sr b→bs", with(good, set("sr", "bs"), func(r *SASRequest) { r.Resource.Snapshot = sasSnap }), nil, svcerr.AuthenticationFailed},
		{"spr https→https,http", with(good, set("spr", "https,http"), httpsIs(false)), nil, svcerr.AuthenticationFailed},
		{"spr removed", with(good, del("spr"), httpsIs(false)), nil, svcerr.AuthenticationFailed},
		{"sip widened", with(good, set("sip", "0.0.0.0-255.255.255.255"), ipIs("192.0.2.1")), nil, svcerr.AuthenticationFailed},
		{"sip removed", with(good, del("sip"), ipIs("192.0.2.1")), nil, svcerr.AuthenticationFailed},
		{"sv changed (other layout)", with(good, set("sv", "2019-12-12")), nil, svcerr.AuthenticationFailed},
		{"sv changed (same layout)", with(good, set("sv", "2021-08-06")), nil, svcerr.AuthenticationFailed},
		{"si added", with(good, set("si", "pol1")), onlyPolicy, svcerr.AuthenticationFailed},
		{"rsct added", with(good, set("rsct", "text/html")), nil, svcerr.AuthenticationFailed},
		{"ses added", with(good, set("ses", "scope1")), nil, svcerr.AuthenticationFailed},
		{"sig from another token", func(t *testing.T) SASRequest {
			r := good(t)
			r.Query.Set("sig", mkBlob(t, devAccount, devKey, "c1", "b1", "rw", time.Time{}).Get("sig"))
			return r
		}, nil, svcerr.AuthenticationFailed},
		{"sig truncated", func(t *testing.T) SASRequest {
			r := good(t)
			s := r.Query.Get("sig")
			r.Query.Set("sig", s[:len(s)-4])
			return r
		}, nil, svcerr.AuthenticationFailed},
		{"sig not base64", with(good, set("sig", "not base64!")), nil, svcerr.AuthenticationFailed},
		{"sig empty", with(good, set("sig", "")), nil, svcerr.AuthenticationFailed},
		{"sp duplicated", with(good, func(r *SASRequest) { r.Query.Add("sp", "rwd") }), nil, svcerr.AuthenticationFailed},
		{"sp duplicated by case", with(good, set("SP", "rwd")), nil, svcerr.AuthenticationFailed},
		{"container SAS for A used on B", tokenOf(devAccount, devKey, "ca", "", "rl", time.Time{}, resIs(Resource{Account: devAccount, Container: "cb", Blob: "b1"})), nil, svcerr.AuthenticationFailed},
		{"container SAS for A listing B", tokenOf(devAccount, devKey, "ca", "", "rl", time.Time{}, resIs(Resource{Account: devAccount, Container: "cb"}), opIs(OpListBlobs)), nil, svcerr.AuthenticationFailed},
		{"container SAS at account level", tokenOf(devAccount, devKey, "c1", "", "racwdl", time.Time{}, resIs(Resource{Account: devAccount}), opIs(OpListContainers)), nil, svcerr.AuthenticationFailed},
		{"container SAS creating its container", tokenOf(devAccount, devKey, "c1", "", "racwdl", time.Time{}, resIs(Resource{Account: devAccount, Container: "c1"}), opIs(OpCreateContainer)), nil, svcerr.AuthorizationPermissionMismatch},
		{"blob SAS on sibling blob", with(good, func(r *SASRequest) { r.Resource.Blob = "b2" }), nil, svcerr.AuthenticationFailed},
		{"blob SAS on prefix-sibling blob", with(good, func(r *SASRequest) { r.Resource.Blob = "b1/x" }), nil, svcerr.AuthenticationFailed},
		{"blob SAS on its container", with(good, func(r *SASRequest) { r.Resource.Blob = ""; r.Op = OpListBlobs }), nil, svcerr.AuthenticationFailed},
		{"blob SAS on same name in other container", with(good, func(r *SASRequest) { r.Resource.Container = "c2" }), nil, svcerr.AuthenticationFailed},
		{"snapshot SAS on base blob", tokenOf(devAccount, devKey, "c1", "b1", "r", time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)), nil, svcerr.AuthenticationFailed},
		{"snapshot SAS on other snapshot", tokenOf(devAccount, devKey, "c1", "b1", "r", time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC), func(r *SASRequest) { r.Resource.Snapshot = "2024-01-01T11:00:00.0000000Z" }), nil, svcerr.AuthenticationFailed},
		{"1s past expiry", with(good, func(r *SASRequest) { r.Now = sasEnd.Add(time.Second) }), nil, svcerr.AuthenticationFailed},
		{"1s before start", with(good, func(r *SASRequest) { r.Now = sasStart.Add(-time.Second) }), nil, svcerr.AuthenticationFailed},
		{"IP below range", with(good, ipIs("9.255.255.255")), nil, svcerr.AuthorizationSourceIPMismatch},
		{"IP above range", with(good, ipIs("10.0.1.0")), nil, svcerr.AuthorizationSourceIPMismatch},
		{"IPv6 client", with(good, ipIs("2001:db8::1")), nil, svcerr.AuthorizationSourceIPMismatch},
		{"no client IP", with(good, func(r *SASRequest) { r.ClientIP = nil }), nil, svcerr.AuthorizationSourceIPMismatch},
		{"http when spr=https", with(good, httpsIs(false)), nil, svcerr.AuthorizationProtocolMismatch},
		{"permission missing", with(good, opIs(OpPutBlock)), nil, svcerr.AuthorizationPermissionMismatch},
		{"read-only SAS deleting", with(good, opIs(OpDeleteBlob)), nil, svcerr.AuthorizationPermissionMismatch},
		{"create-only SAS overwriting", tokenOf(devAccount, devKey, "c1", "b1", "c", time.Time{}, opIs(OpOverwriteBlob)), nil, svcerr.AuthorizationPermissionMismatch},
		{"account SAS, ss lacks b", func(t *testing.T) SASRequest {
			q := signAcct(t, devKey, devAccount, values("sv", "2020-12-06", "ss", "qtf", "srt", "sco", "sp", "rwdl",
				"st", "2024-01-01T00:00:00Z", "se", "2024-01-02T00:00:00Z"))
			return SASRequest{Query: q, Resource: blobRes, Op: OpReadBlob, Now: sasNow}
		}, nil, svcerr.AuthorizationServiceMismatch},
		{"account SAS, srt lacks o", acctReq("sc", "rwdl", blobRes, OpReadBlob), nil, svcerr.AuthorizationResourceTypeMismatch},
		{"account SAS, srt lacks c", acctReq("so", "rwdl", Resource{Account: devAccount, Container: "c1"}, OpListBlobs), nil, svcerr.AuthorizationResourceTypeMismatch},
		{"account SAS, srt lacks s", acctReq("co", "rwdl", Resource{Account: devAccount}, OpListContainers), nil, svcerr.AuthorizationResourceTypeMismatch},
		{"account SAS, container ACL", acctReq("sco", "rwdxylacupfti", Resource{Account: devAccount, Container: "c1"}, OpContainerACL), nil, svcerr.AuthorizationPermissionMismatch},
		{"account SAS, srt widened", acctReq("c", "rwdl", blobRes, OpReadBlob, set("srt", "sco")), nil, svcerr.AuthenticationFailed},
		{"account SAS, sp widened", acctReq("sco", "r", blobRes, OpDeleteBlob, set("sp", "rd")), nil, svcerr.AuthenticationFailed},
		{"account SAS, ss changed", acctReq("sco", "r", blobRes, OpReadBlob, set("ss", "bq")), nil, svcerr.AuthenticationFailed},
		{"account SAS on another account", acctReq("sco", "r", Resource{Account: otherAcct, Container: "c1", Blob: "b1"}, OpReadBlob), nil, svcerr.AuthenticationFailed},
		{"account SAS with sr added", acctReq("sco", "r", blobRes, OpReadBlob, set("sr", "b")), nil, svcerr.AuthenticationFailed},
		{"unknown si", func(t *testing.T) SASRequest {
			qp, err := sas.BlobSignatureValues{ContainerName: "c1", Identifier: "nosuch"}.SignWithSharedKey(sdkCred(t, devAccount, devKey))
			if err != nil {
				t.Fatal(err)
			}
			return SASRequest{Query: encodeToken(t, qp), Resource: blobRes, Op: OpReadBlob, Now: sasNow}
		}, onlyPolicy, svcerr.AuthenticationFailed},
		{"policy removed", siReq, func(string, string) (StoredPolicy, bool) { return StoredPolicy{}, false }, svcerr.AuthenticationFailed},
		{"no policy lookup", siReq, nil, svcerr.AuthenticationFailed},
		{"policy of another container", with(siReq, func(r *SASRequest) { r.Resource.Container = "c2" }), func(container, id string) (StoredPolicy, bool) {
			return StoredPolicy{ID: id, Expiry: sasEnd, Permission: "rwdl"}, true // a c2 policy of the same name
		}, svcerr.AuthenticationFailed},
		{"skoid present", with(good, set("skoid", "00000000-0000-0000-0000-000000000000")), nil, svcerr.AuthenticationFailed},
		{"skoid present, user delegation set", with(good, set("skoid", "o"), set("sktid", "t"), set("skt", "2024-01-01T00:00:00Z"),
			set("ske", "2024-01-02T00:00:00Z"), set("sks", "b"), set("skv", "2020-12-06")), nil, svcerr.AuthenticationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.build(t)
			sig := req.Query.Get("sig")
			name, err := VerifySAS(req, accts, tc.policies)
			if err == nil {
				t.Fatalf("accepted (account %q), want %s", name, tc.want)
			}
			if name != "" {
				t.Errorf("account %q returned with an error", name)
			}
			if errCode(err) != tc.want {
				t.Fatalf("got %v (%s), want %s", err, detail(err), tc.want)
			}
			if s := svcerr.Status(errCode(err)); s != 403 {
				t.Errorf("status %d, want 403", s)
			}
			text := errText(err)
			for _, secret := range []string{devKey, devKey2, otherKey} {
				if strings.Contains(text, secret) {
					t.Fatalf("error carries an account key: %s", text)
				}
			}
			if len(sig) >= 8 && strings.Contains(text, sig) {
				t.Fatalf("error carries the signature: %s", text)
			}
		})
	}
}

func with(base func(*testing.T) SASRequest, muts ...func(*SASRequest)) func(*testing.T) SASRequest {
	return func(t *testing.T) SASRequest {
		r := base(t)
		r.Query = cloneValues(r.Query)
		for _, m := range muts {
			m(&r)
		}
		return r
	}
}

func opIs(op Operation) func(*SASRequest) { return func(r *SASRequest) { r.Op = op } }
func httpsIs(b bool) func(*SASRequest)    { return func(r *SASRequest) { r.HTTPS = b } }
func ipIs(s string) func(*SASRequest)     { return func(r *SASRequest) { r.ClientIP = net.ParseIP(s) } }

func TestSASStoredPolicies(t *testing.T) {
	accts := testAccounts(t)
	res := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
	type pcase struct {
		name   string
		token  url.Values // unsigned; signed here with the ≥2020-12-06 layout
		policy StoredPolicy
		op     Operation
		now    time.Time
		want   svcerr.Code
		detail string // substring of the detail, if set
	}
	base := func(kv ...string) url.Values {
		return values(append([]string{"sv", "2020-12-06", "sr", "c", "si", "pol1"}, kv...)...)
	}
	cases := []pcase{
		{name: "policy gives sp and se", token: base(), policy: StoredPolicy{Expiry: sasEnd, Permission: "r"}, op: OpReadBlob},
		{name: "policy gives st, sp, se", token: base(), policy: StoredPolicy{Start: sasStart, Expiry: sasEnd, Permission: "rw"}, op: OpCreateBlob},
		{name: "token sp, policy se", token: base("sp", "d"), policy: StoredPolicy{Expiry: sasEnd}, op: OpDeleteBlob},
		{name: "token se, policy sp", token: base("se", "2024-01-02T00:00:00Z"), policy: StoredPolicy{Permission: "r"}, op: OpReadBlob},
		{name: "token st+se, policy sp", token: base("st", "2024-01-01", "se", "2024-01-02"), policy: StoredPolicy{Permission: "r"}, op: OpReadBlob},
		{name: "policy permission too narrow", token: base(), policy: StoredPolicy{Expiry: sasEnd, Permission: "r"}, op: OpOverwriteBlob,
			want: svcerr.AuthorizationPermissionMismatch},
		{name: "policy expired", token: base(), policy: StoredPolicy{Expiry: sasEnd, Permission: "r"}, op: OpReadBlob, now: sasEnd.Add(time.Second),
			want: svcerr.AuthenticationFailed, detail: "must be after signed start time"},
		{name: "policy not yet valid", token: base(), policy: StoredPolicy{Start: sasEnd, Expiry: sasEnd.Add(time.Hour), Permission: "r"}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "Signature not valid in the specified time frame: Start [Tue, 02 Jan 2024 00:00:00 GMT]"},
		{name: "sp in both", token: base("sp", "r"), policy: StoredPolicy{Expiry: sasEnd, Permission: "r"}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "both in the SAS and in stored access policy"},
		{name: "se in both", token: base("se", "2024-01-02"), policy: StoredPolicy{Expiry: sasEnd, Permission: "r"}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "both in the SAS and in stored access policy"},
		{name: "st in both", token: base("st", "2024-01-01"), policy: StoredPolicy{Start: sasStart, Expiry: sasEnd, Permission: "r"}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "both in the SAS and in stored access policy"},
		{name: "no expiry anywhere", token: base("sp", "r"), policy: StoredPolicy{}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "expiry"},
		{name: "no permission anywhere", token: base("se", "2024-01-02"), policy: StoredPolicy{}, op: OpReadBlob,
			want: svcerr.AuthenticationFailed, detail: "permissions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotContainer, gotID string
			policies := func(container, id string) (StoredPolicy, bool) {
				gotContainer, gotID = container, id
				p := tc.policy
				p.ID = id
				return p, id == "pol1"
			}
			now := tc.now
			if now.IsZero() {
				now = sasNow
			}
			q := signSvc(t, devKey, tc.token, res)
			_, err := VerifySAS(SASRequest{Query: q, Resource: res, Op: tc.op, Now: now}, accts, policies)
			if errCode(err) != tc.want {
				t.Fatalf("got %v (%s), want %q", err, detail(err), tc.want)
			}
			if tc.detail != "" && !strings.Contains(detail(err), tc.detail) {
				t.Fatalf("detail %q does not contain %q", detail(err), tc.detail)
			}
			if gotContainer != "c1" || gotID != "pol1" {
				t.Fatalf("policy looked up as (%q, %q)", gotContainer, gotID)
			}
		})
	}
}

// TestSASRules covers single rules with correctly signed tokens, so that the
// rule and not the signature decides.
func TestSASRules(t *testing.T) {
	accts := testAccounts(t)
	blob := Resource{Account: devAccount, Container: "c1", Blob: "b1"}
	// override sets kv over defaults (one value per name).
	override := func(defaults []string, kv []string) url.Values {
		q := values(defaults...)
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return q
	}
	svc := func(kv ...string) url.Values {
		return override([]string{"sv", "2020-12-06", "sr", "b", "st", "2024-01-01", "se", "2024-01-02"}, kv)
	}
	acct := func(kv ...string) url.Values {
		return override([]string{"sv", "2020-12-06", "ss", "b", "srt", "sco", "se", "2024-01-02"}, kv)
	}
	cases := []struct {
		name    string
		q       url.Values
		account bool
		res     Resource
		op      Operation
		https   bool
		ip      string
		want    svcerr.Code
	}{
		// Letter order of sp is not enforced (Azure documents a fixed
		// order; SDKs and tools send others).
		{name: "service sp out of order", q: svc("sp", "wr"), res: blob, op: OpReadBlob},
		{name: "account sp out of order", q: acct("sp", "lwr"), account: true, res: Resource{Account: devAccount}, op: OpListContainers},
		{name: "unknown letters grant nothing", q: svc("sp", "zq"), res: blob, op: OpReadBlob, want: svcerr.AuthorizationPermissionMismatch},
		// Create-only semantics.
		{name: "c creates", q: svc("sp", "c"), res: blob, op: OpCreateBlob},
		{name: "w creates", q: svc("sp", "w"), res: blob, op: OpCreateBlob},
		{name: "c cannot overwrite", q: svc("sp", "c"), res: blob, op: OpOverwriteBlob, want: svcerr.AuthorizationPermissionMismatch},
		{name: "w overwrites", q: svc("sp", "w"), res: blob, op: OpOverwriteBlob},
		{name: "c cannot put block", q: svc("sp", "c"), res: blob, op: OpPutBlock, want: svcerr.AuthorizationPermissionMismatch},
		{name: "a appends", q: svc("sp", "a"), res: blob, op: OpAppendBlock},
		{name: "account c cannot overwrite", q: acct("sp", "c"), account: true, res: blob, op: OpOverwriteBlob, want: svcerr.AuthorizationPermissionMismatch},
		// d breaks leases only from 2017-07-29.
		{name: "d breaks (2017-07-29)", q: values("sv", "2017-07-29", "ss", "b", "srt", "o", "sp", "d", "se", "2024-01-02"), account: true, res: blob, op: OpBreakBlobLease},
		{name: "d does not break (2017-04-17)", q: values("sv", "2017-04-17", "ss", "b", "srt", "o", "sp", "d", "se", "2024-01-02"), account: true, res: blob, op: OpBreakBlobLease,
			want: svcerr.AuthorizationPermissionMismatch},
		{name: "d does not acquire", q: svc("sp", "d"), res: blob, op: OpLeaseBlob, want: svcerr.AuthorizationPermissionMismatch},
		{name: "d breaks container lease", q: acct("sp", "d"), account: true, res: Resource{Account: devAccount, Container: "c1"}, op: OpBreakContainerLease},
		// Service properties: the combined op needs r and w.
		{name: "service props with r only", q: acct("sp", "r"), account: true, res: Resource{Account: devAccount}, op: OpServiceProperties,
			want: svcerr.AuthorizationPermissionMismatch},
		{name: "service props with rw", q: acct("sp", "rw"), account: true, res: Resource{Account: devAccount}, op: OpServiceProperties},
		{name: "get service props with r", q: acct("sp", "r"), account: true, res: Resource{Account: devAccount}, op: OpGetServiceProperties},
		{name: "set service props with r", q: acct("sp", "r"), account: true, res: Resource{Account: devAccount}, op: OpSetServiceProperties,
			want: svcerr.AuthorizationPermissionMismatch},
		// List Blobs needs a container SAS.
		{name: "container SAS lists", q: svc("sr", "c", "sp", "l"), res: Resource{Account: devAccount, Container: "c1"}, op: OpListBlobs},
		{name: "container SAS reads a blob", q: svc("sr", "c", "sp", "r"), res: blob, op: OpReadBlob},
		{name: "blob SAS cannot list", q: svc("sp", "l"), res: blob, op: OpListBlobs, want: svcerr.AuthorizationPermissionMismatch},
		{name: "blob SAS reads a snapshot of its blob", q: svc("sp", "r"), res: Resource{Account: devAccount, Container: "c1", Blob: "b1", Snapshot: sasSnap}, op: OpReadBlob},
		// sip and spr.
		{name: "single IP match", q: svc("sp", "r", "sip", "10.1.2.3"), res: blob, op: OpReadBlob, ip: "10.1.2.3"},
		{name: "single IP other", q: svc("sp", "r", "sip", "10.1.2.3"), res: blob, op: OpReadBlob, ip: "10.1.2.4", want: svcerr.AuthorizationSourceIPMismatch},
		{name: "range inclusive low", q: svc("sp", "r", "sip", "10.1.2.3-10.1.2.9"), res: blob, op: OpReadBlob, ip: "10.1.2.3"},
		{name: "range inclusive high", q: svc("sp", "r", "sip", "10.1.2.3-10.1.2.9"), res: blob, op: OpReadBlob, ip: "10.1.2.9"},
		{name: "IPv4-mapped client", q: svc("sp", "r", "sip", "10.1.2.3-10.1.2.9"), res: blob, op: OpReadBlob, ip: "::ffff:10.1.2.5"},
		{name: "IPv6 range", q: svc("sp", "r", "sip", "2001:db8::1-2001:db8::ff"), res: blob, op: OpReadBlob, ip: "2001:db8::10"},
		{name: "IPv6 outside", q: svc("sp", "r", "sip", "2001:db8::1-2001:db8::ff"), res: blob, op: OpReadBlob, ip: "2001:db8::100", want: svcerr.AuthorizationSourceIPMismatch},
		{name: "reversed range", q: svc("sp", "r", "sip", "10.1.2.9-10.1.2.3"), res: blob, op: OpReadBlob, ip: "10.1.2.5", want: svcerr.AuthenticationFailed},
		{name: "mixed-family range", q: svc("sp", "r", "sip", "10.1.2.3-2001:db8::1"), res: blob, op: OpReadBlob, ip: "10.1.2.5", want: svcerr.AuthenticationFailed},
		{name: "malformed sip", q: svc("sp", "r", "sip", "10.1.2"), res: blob, op: OpReadBlob, ip: "10.1.2.5", want: svcerr.AuthenticationFailed},
		{name: "spr https over https", q: svc("sp", "r", "spr", "https"), res: blob, op: OpReadBlob, https: true},
		{name: "spr https,http over http", q: svc("sp", "r", "spr", "https,http"), res: blob, op: OpReadBlob},
		{name: "spr http is not legal", q: svc("sp", "r", "spr", "http"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account spr https over http", q: acct("sp", "r", "spr", "https"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthorizationProtocolMismatch},
		{name: "account sip outside", q: acct("sp", "r", "sip", "10.0.0.1"), account: true, res: blob, op: OpReadBlob, ip: "10.0.0.2", want: svcerr.AuthorizationSourceIPMismatch},
		// Malformed but correctly signed tokens.
		{name: "sr=bv unsupported", q: svc("sr", "bv", "sp", "r"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "sr=d unsupported", q: svc("sr", "d", "sp", "r"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "sr=bs without snapshot", q: svc("sr", "bs", "sp", "r"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account ss unknown letter", q: acct("ss", "bx", "sp", "r"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account srt unknown letter", q: acct("srt", "sx", "sp", "r"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account srt empty", q: acct("srt", "", "sp", "r"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account sp empty", q: acct("sp", ""), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account se missing", q: values("sv", "2020-12-06", "ss", "b", "srt", "o", "sp", "r"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "service se missing", q: values("sv", "2020-12-06", "sr", "b", "sp", "r"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "service sp missing", q: values("sv", "2020-12-06", "sr", "b", "se", "2024-01-02"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "sv not a date", q: svc("sp", "r", "sv", "2020-13-06"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "sv missing", q: values("sr", "b", "sp", "r", "se", "2024-01-02"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "service sv too old", q: svc("sp", "r", "sv", "2012-02-12"), res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "account sv too old", q: acct("sp", "r", "sv", "2014-02-14"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "only ss", q: values("sv", "2020-12-06", "ss", "b", "sp", "r", "se", "2024-01-02"), account: true, res: blob, op: OpReadBlob, want: svcerr.AuthenticationFailed},
		{name: "no account", q: svc("sp", "r"), res: Resource{Container: "c1", Blob: "b1"}, op: OpReadBlob, want: svcerr.AuthenticationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q url.Values
			signFor := tc.res
			if signFor.Account == "" {
				signFor.Account = devAccount
			}
			if tc.account {
				q = signAcct(t, devKey, devAccount, tc.q)
			} else {
				q = signSvc(t, devKey, tc.q, signFor)
			}
			req := SASRequest{Query: q, Resource: tc.res, Op: tc.op, HTTPS: tc.https, ClientIP: net.ParseIP(tc.ip), Now: sasNow}
			name, err := VerifySAS(req, accts, nil)
			if errCode(err) != tc.want {
				t.Fatalf("got %q, %v (%s); want %q", name, err, detail(err), tc.want)
			}
		})
	}

	t.Run("fields the version does not sign", func(t *testing.T) {
		// sv 2015-02-21 signs neither sip nor spr; 2019-12-12 does not sign ses.
		for _, extra := range [][2]string{{"sip", "10.0.0.1"}, {"spr", "https"}} {
			q := values("sv", "2015-02-21", "sr", "b", "sp", "r", "se", "2024-01-02")
			q.Set("sig", Sign(mustKey(t, devKey), "r\n\n2024-01-02\n/blob/devstoreaccount1/c1/b1\n\n2015-02-21\n\n\n\n\n"))
			if _, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, Now: sasNow}, accts, nil); err != nil {
				t.Fatalf("base: %v", err)
			}
			q.Set(extra[0], extra[1])
			if _, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, HTTPS: true, ClientIP: net.ParseIP("10.0.0.1"), Now: sasNow}, accts, nil); errCode(err) != svcerr.AuthenticationFailed {
				t.Errorf("unsigned %s accepted: %v", extra[0], err)
			}
		}
		q := values("sv", "2019-12-12", "ss", "b", "srt", "o", "sp", "r", "se", "2024-01-02", "ses", "scope1")
		q = signAcct(t, devKey, devAccount, q)
		if _, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, Now: sasNow}, accts, nil); errCode(err) != svcerr.AuthenticationFailed {
			t.Errorf("unsigned ses accepted: %v", err)
		}
		q = values("sv", "2017-07-29", "sr", "bs", "sp", "r", "se", "2024-01-02")
		q.Set("sig", Sign(mustKey(t, devKey), "r\n\n2024-01-02\n/blob/devstoreaccount1/c1/b1\n\n\n\n2017-07-29\n\n\n\n\n"))
		snap := blob
		snap.Snapshot = sasSnap
		if _, err := VerifySAS(SASRequest{Query: q, Resource: snap, Op: OpReadBlob, Now: sasNow}, accts, nil); errCode(err) != svcerr.AuthenticationFailed {
			t.Errorf("sr=bs before 2018-11-09 accepted: %v", err)
		}
	})

	t.Run("no accounts", func(t *testing.T) {
		q := signSvc(t, devKey, svc("sp", "r"), blob)
		if _, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, Now: sasNow}, nil, nil); errCode(err) != svcerr.AuthenticationFailed {
			t.Errorf("nil accounts: %v", err)
		}
		if _, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, Now: sasNow}, MapAccounts{}, nil); errCode(err) != svcerr.AuthenticationFailed {
			t.Errorf("empty accounts: %v", err)
		}
	})

	t.Run("signature mismatch detail", func(t *testing.T) {
		q := signSvc(t, otherKey, svc("sp", "r"), blob)
		_, err := VerifySAS(SASRequest{Query: q, Resource: blob, Op: OpReadBlob, Now: sasNow}, accts, nil)
		want := "Signature did not match. String to sign used was r\n2024-01-01\n2024-01-02\n/blob/devstoreaccount1/c1/b1\n\n\n\n2020-12-06\nb\n\n\n\n\n\n\n"
		if errCode(err) != svcerr.AuthenticationFailed || detail(err) != want {
			t.Fatalf("got %v / %q", err, detail(err))
		}
	})
}

func TestIsSAS(t *testing.T) {
	for _, tc := range []struct {
		q    url.Values
		want bool
	}{
		{nil, false},
		{values("comp", "list"), false},
		{values("sig", "x"), true},
		{values("Sig", "x", "comp", "list"), true},
		{values("sv", "2020-12-06", "sp", "r"), false},
	} {
		if got := IsSAS(tc.q); got != tc.want {
			t.Errorf("IsSAS(%v) = %v", tc.q, got)
		}
	}
}

func TestResponseOverrides(t *testing.T) {
	svc := values("sv", "2020-12-06", "sr", "b", "sp", "r", "se", "2024-01-02", "sig", "x",
		"rscc", "no-cache", "rscd", "attachment; filename=\"a b.txt\"", "rsce", "gzip", "rscl", "en-GB", "rsct", "text/plain; charset=utf-8")
	got := ResponseOverrides(svc)
	want := map[string]string{
		"Cache-Control":       "no-cache",
		"Content-Disposition": "attachment; filename=\"a b.txt\"",
		"Content-Encoding":    "gzip",
		"Content-Language":    "en-GB",
		"Content-Type":        "text/plain; charset=utf-8",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got := ResponseOverrides(values("sv", "2020-12-06", "sr", "b", "sig", "x", "rsct", "text/html")); len(got) != 1 || got["Content-Type"] != "text/html" {
		t.Errorf("single override: %v", got)
	}
	for name, q := range map[string]url.Values{
		"no SAS":            values("rsct", "text/html"),
		"account SAS":       values("sv", "2020-12-06", "ss", "b", "srt", "o", "sig", "x", "rsct", "text/html"),
		"no overrides":      values("sv", "2020-12-06", "sr", "b", "sig", "x"),
		"duplicated":        {"sr": {"b"}, "sig": {"x"}, "rsct": {"text/plain", "text/html"}},
		"control character": values("sr", "b", "sig", "x", "rsct", "text/html\r\nSet-Cookie: a=b"),
	} {
		if got := ResponseOverrides(q); got != nil {
			t.Errorf("%s: got %v, want nil", name, got)
		}
	}
}

func resIs(res Resource) func(*SASRequest) { return func(r *SASRequest) { r.Resource = res } }
