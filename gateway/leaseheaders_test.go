package gateway

import (
	"net/http"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// Normalized lease ids, as leasedb stores and compares them.
const (
	idA = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	idB = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
)

func TestNormalizeLeaseID(t *testing.T) {
	const want = "ca761232-ed42-11ce-bacd-00aa0057b223"
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"ca761232-ed42-11ce-bacd-00aa0057b223", want, true},
		{"CA761232-ED42-11CE-BACD-00AA0057B223", want, true},
		{"Ca761232-eD42-11cE-BaCd-00Aa0057B223", want, true},
		{"ca761232ed4211cebacd00aa0057b223", want, true},
		{"CA761232ED4211CEBACD00AA0057B223", want, true},
		{"{ca761232-ed42-11ce-bacd-00aa0057b223}", want, true},
		{"(CA761232-ED42-11CE-BACD-00AA0057B223)", want, true},
		{"  ca761232-ed42-11ce-bacd-00aa0057b223 ", want, true},
		{"", "", false},
		{"ca761232-ed42-11ce-bacd-00aa0057b22", "", false},    // 35 chars
		{"ca761232-ed42-11ce-bacd-00aa0057b2233", "", false},  // 37 chars
		{"ca761232ed4211cebacd00aa0057b22g", "", false},       // non-hex
		{"ca761232-ed42-11ce-bacd-00aa0057b22z", "", false},   // non-hex
		{"ca761232-ed4211ce-bacd-00aa0057b223-", "", false},   // misplaced hyphen
		{"ca761232+ed42+11ce+bacd+00aa0057b223", "", false},   // wrong separators
		{"{ca761232-ed42-11ce-bacd-00aa0057b223)", "", false}, // mismatched brackets
		{"[ca761232-ed42-11ce-bacd-00aa0057b223]", "", false},
		{"{ca761232ed4211cebacd00aa0057b223}", "", false}, // braces need the hyphenated form
		{"urn:uuid:ca761232-ed42-11ce-bacd-00aa0057b223", "", false},
		{"{0xca761232,0xed42,0x11ce,{0xba,0xcd,0x00,0xaa,0x00,0x57,0xb2,0x23}}", "", false}, // X form: not accepted
		{"ca761232-ed42-11ce-bacd-00aa0057b223\x00", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := normalizeLeaseID(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("normalizeLeaseID(%q) = (%q, %v), want (%q, %v)", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseLeaseRequest(t *testing.T) {
	const (
		rawA = "{AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA}"
		rawB = "bbbbbbbbbbbb4bbb8bbbbbbbbbbbbbbb"
		bad  = "not-a-guid"
	)
	tests := []struct {
		name                                string
		action, id, proposed, dur, breakPer string
		want                                leasedb.LeaseRequest
		wantCode                            svcerr.Code
		wantHeader                          string
	}{
		// valid requests
		{name: "acquire infinite", action: "acquire", dur: "-1",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, Duration: -1, BreakPeriod: -1}},
		{name: "acquire 15 proposed", action: "acquire", proposed: rawA, dur: "15",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: idA, Duration: 15, BreakPeriod: -1}},
		{name: "acquire 60", action: "acquire", proposed: rawB, dur: "60",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, ProposedID: idB, Duration: 60, BreakPeriod: -1}},
		{name: "acquire ignores lease id and break period", action: "acquire", id: bad, dur: "30", breakPer: "x",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, Duration: 30, BreakPeriod: -1}},
		{name: "action case-insensitive", action: "Acquire", dur: "20",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, Duration: 20, BreakPeriod: -1}},
		{name: "renew", action: "renew", id: rawA,
			want: leasedb.LeaseRequest{Action: leasedb.LeaseRenew, ID: idA, BreakPeriod: -1}},
		{name: "renew ignores others", action: "renew", id: idA, proposed: bad, dur: "5", breakPer: "99",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseRenew, ID: idA, BreakPeriod: -1}},
		{name: "change", action: "change", id: rawA, proposed: rawB,
			want: leasedb.LeaseRequest{Action: leasedb.LeaseChange, ID: idA, ProposedID: idB, BreakPeriod: -1}},
		{name: "release", action: "release", id: "(" + idA + ")",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseRelease, ID: idA, BreakPeriod: -1}},
		{name: "break natural", action: "break",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: -1}},
		{name: "break 0", action: "break", breakPer: "0",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 0}},
		{name: "break 60", action: "break", breakPer: "60",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 60}},
		{name: "break ignores ids and duration", action: "break", id: bad, proposed: bad, dur: "x", breakPer: "7",
			want: leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 7}},

		// x-ms-lease-action
		{name: "missing action", wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-lease-action"},
		{name: "unknown action", action: "steal", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-action"},
		{name: "padded action", action: " acquire", dur: "15", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-action"},

		// x-ms-lease-id
		{name: "renew missing id", action: "renew", wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-lease-id"},
		{name: "change missing id", action: "change", proposed: idB, wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-lease-id"},
		{name: "release missing id", action: "release", wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-lease-id"},
		{name: "renew bad id", action: "renew", id: bad, wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-id"},
		{name: "change bad id", action: "change", id: bad, proposed: idB, wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-id"},
		{name: "release bad id", action: "release", id: idA + "0", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-id"},
		{name: "change bad id and proposed reports id", action: "change", id: bad, proposed: bad, wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-id"},

		// x-ms-proposed-lease-id
		{name: "change missing proposed", action: "change", id: idA, wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-proposed-lease-id"},
		{name: "change bad proposed", action: "change", id: idA, proposed: bad, wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-proposed-lease-id"},
		{name: "acquire bad proposed", action: "acquire", proposed: bad, dur: "15", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-proposed-lease-id"},

		// x-ms-lease-duration
		{name: "acquire missing duration", action: "acquire", wantCode: svcerr.MissingRequiredHeader, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration 14", action: "acquire", dur: "14", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration 61", action: "acquire", dur: "61", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration 0", action: "acquire", dur: "0", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration -2", action: "acquire", dur: "-2", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration text", action: "acquire", dur: "infinite", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration decimal", action: "acquire", dur: "15.0", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire duration overflow", action: "acquire", dur: "99999999999999999999", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-duration"},
		{name: "acquire bad proposed before duration", action: "acquire", proposed: bad, dur: "1", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-proposed-lease-id"},

		// x-ms-lease-break-period
		{name: "break period 61", action: "break", breakPer: "61", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-break-period"},
		{name: "break period -1", action: "break", breakPer: "-1", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-break-period"},
		{name: "break period text", action: "break", breakPer: "soon", wantCode: svcerr.InvalidHeaderValue, wantHeader: "x-ms-lease-break-period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLeaseRequest(tt.action, tt.id, tt.proposed, tt.dur, tt.breakPer)
			svcerrtest.Code(t, err, tt.wantCode)
			if tt.wantCode == "" {
				if got != tt.want {
					t.Errorf("request = %+v, want %+v", got, tt.want)
				}
				return
			}
			if svcerr.Status(tt.wantCode) != 400 {
				t.Errorf("status of %s = %d, want 400", tt.wantCode, svcerr.Status(tt.wantCode))
			}
			e, _ := svcerr.As(err)
			if len(e.Details) == 0 || e.Details[0] != [2]string{"HeaderName", tt.wantHeader} {
				t.Errorf("details = %v, want HeaderName %s", e.Details, tt.wantHeader)
			}
		})
	}
}

// leaseIDHeader is the lease id of a read or write: optional, normalized.
func TestLeaseIDHeader(t *testing.T) {
	tests := []struct {
		name, value, want string
		wantCode          svcerr.Code
	}{
		{"absent", "", "", ""},
		{"normalized", "{AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA}", idA, ""},
		{"bare hex", "bbbbbbbbbbbb4bbb8bbbbbbbbbbbbbbb", idB, ""},
		{"not a guid", "lease-1", "", svcerr.InvalidHeaderValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.value != "" {
				h.Set("x-ms-lease-id", tt.value)
			}
			got, err := leaseIDHeader(h)
			svcerrtest.Code(t, err, tt.wantCode)
			if got != tt.want {
				t.Errorf("leaseIDHeader = %q, want %q", got, tt.want)
			}
			if tt.wantCode != "" {
				if e, _ := svcerr.As(err); len(e.Details) == 0 || e.Details[0] != [2]string{"HeaderName", "x-ms-lease-id"} {
					t.Errorf("details = %v, want HeaderName x-ms-lease-id", e.Details)
				}
			}
		})
	}
}
