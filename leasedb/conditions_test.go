package leasedb

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blobgw/blobgw/svcerr"
)

func TestEvalRead(t *testing.T) {
	lm := time.Date(2024, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	res := Resource{Exists: true, ETag: `"0x8DA"`, LastModified: lm}
	before := lm.Add(-time.Hour).Truncate(time.Second)
	sameSecond := lm.Truncate(time.Second)
	after := lm.Add(time.Hour)
	tests := []struct {
		name string
		c    Conditions
		want string // "", "304", or an error code
	}{
		{"none", Conditions{}, ""},
		{"if-match hit", Conditions{IfMatch: []string{"0x8DA"}}, ""},
		{"if-match star", Conditions{IfMatch: []string{"*"}}, ""},
		{"if-match any of list", Conditions{IfMatch: []string{"0x1", "0x8DA"}}, ""},
		{"if-match miss", Conditions{IfMatch: []string{"0x1"}}, "ConditionNotMet"},
		{"if-none-match hit", Conditions{IfNoneMatch: []string{"0x8DA"}}, "304"},
		{"if-none-match star", Conditions{IfNoneMatch: []string{"*"}}, "304"},
		{"if-none-match miss", Conditions{IfNoneMatch: []string{"0x1"}}, ""},
		{"if-none-match list ANDed", Conditions{IfNoneMatch: []string{"0x1", "0x8DA"}}, "304"},
		{"ims older", Conditions{HadIMS: true, IfModifiedSince: before}, ""},
		{"ims same second", Conditions{HadIMS: true, IfModifiedSince: sameSecond}, "304"},
		{"ims later", Conditions{HadIMS: true, IfModifiedSince: after}, "304"},
		{"ius later", Conditions{HadIUS: true, IfUnmodifiedSince: after}, ""},
		{"ius same second", Conditions{HadIUS: true, IfUnmodifiedSince: sameSecond}, ""},
		{"ius older", Conditions{HadIUS: true, IfUnmodifiedSince: before}, "ConditionNotMet"},
		{"if-match stale dominates ims old", Conditions{IfMatch: []string{"0x1"}, HadIMS: true, IfModifiedSince: before}, "ConditionNotMet"},
		{"ius fail dominates inm", Conditions{IfNoneMatch: []string{"0x8DA"}, HadIUS: true, IfUnmodifiedSince: before}, "ConditionNotMet"},
		{"inm fails ims passes", Conditions{IfNoneMatch: []string{"0x8DA"}, HadIMS: true, IfModifiedSince: before}, ""},
		{"inm fails ims fails", Conditions{IfNoneMatch: []string{"0x8DA"}, HadIMS: true, IfModifiedSince: after}, "304"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := EvalRead(tt.c, res)
			got := ""
			switch {
			case err == nil:
			case IsNotModified(err):
				got = "304"
			default:
				e, _ := svcerr.As(err)
				got = string(e.Code)
			}
			if got != tt.want {
				t.Errorf("EvalRead = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvalWrite(t *testing.T) {
	lm := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	exists := Resource{Exists: true, ETag: `"0x8DA"`, LastModified: lm}
	missing := Resource{}
	tests := []struct {
		name string
		c    Conditions
		r    Resource
		kind WriteKind
		want svcerr.Code
	}{
		{"none existing", Conditions{}, exists, UpdateWrite, ""},
		{"none missing", Conditions{}, missing, CreateWrite, ""},
		{"if-match hit", Conditions{IfMatch: []string{"0x8DA"}}, exists, UpdateWrite, ""},
		{"if-match quoted value", Conditions{IfMatch: []string{unquote(`"0x8DA"`)}}, exists, UpdateWrite, ""},
		{"if-match miss", Conditions{IfMatch: []string{"0x8DB"}}, exists, UpdateWrite, svcerr.ConditionNotMet},
		{"if-match on missing", Conditions{IfMatch: []string{"0x8DA"}}, missing, CreateWrite, svcerr.ConditionNotMet},
		{"if-match star on missing", Conditions{IfMatch: []string{"*"}}, missing, CreateWrite, svcerr.ConditionNotMet},
		{"if-match star existing", Conditions{IfMatch: []string{"*"}}, exists, UpdateWrite, ""},
		{"inm star create existing", Conditions{IfNoneMatch: []string{"*"}}, exists, CreateWrite, svcerr.BlobAlreadyExists},
		{"inm star update existing", Conditions{IfNoneMatch: []string{"*"}}, exists, UpdateWrite, svcerr.ConditionNotMet},
		{"inm star missing", Conditions{IfNoneMatch: []string{"*"}}, missing, CreateWrite, ""},
		{"inm etag hit", Conditions{IfNoneMatch: []string{"0x8DA"}}, exists, CreateWrite, svcerr.ConditionNotMet},
		{"inm etag miss", Conditions{IfNoneMatch: []string{"0x8DB"}}, exists, CreateWrite, ""},
		{"inm etag missing", Conditions{IfNoneMatch: []string{"0x8DA"}}, missing, CreateWrite, ""},
		{"ims passes", Conditions{HadIMS: true, IfModifiedSince: lm.Add(-time.Second)}, exists, UpdateWrite, ""},
		{"ims fails", Conditions{HadIMS: true, IfModifiedSince: lm}, exists, UpdateWrite, svcerr.ConditionNotMet},
		{"ius passes", Conditions{HadIUS: true, IfUnmodifiedSince: lm}, exists, UpdateWrite, ""},
		{"ius fails", Conditions{HadIUS: true, IfUnmodifiedSince: lm.Add(-time.Second)}, exists, UpdateWrite, svcerr.ConditionNotMet},
		{"dates ignored on missing", Conditions{HadIUS: true, IfUnmodifiedSince: lm.Add(-time.Hour)}, missing, CreateWrite, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := EvalWrite(tt.c, tt.r, tt.kind)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("EvalWrite = %v, want nil", err)
				}
				return
			}
			if !svcerr.HasCode(err, tt.want) {
				t.Fatalf("EvalWrite = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestValidateWrite(t *testing.T) {
	d := time.Now()
	tests := []struct {
		name string
		c    Conditions
		ok   bool
	}{
		{"one", Conditions{IfMatch: []string{"a"}}, true},
		{"if-match + ius", Conditions{IfMatch: []string{"a"}, HadIUS: true, IfUnmodifiedSince: d}, true},
		{"inm + ims", Conditions{IfNoneMatch: []string{"a"}, HadIMS: true, IfModifiedSince: d}, true},
		{"if-match + inm", Conditions{IfMatch: []string{"a"}, IfNoneMatch: []string{"b"}}, false},
		{"ims + ius", Conditions{HadIMS: true, HadIUS: true}, false},
		{"two etags", Conditions{IfMatch: []string{"a", "b"}}, false},
		{"three", Conditions{IfMatch: []string{"a"}, HadIMS: true, HadIUS: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateWrite(tt.c)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateWrite = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !svcerr.HasCode(err, svcerr.MultipleConditionHeadersNotSupported) {
				t.Fatalf("code = %v", err)
			}
		})
	}
}

// errors.Is(err, ErrNotModified) holds for the 304 outcome only, not for
// every ConditionNotMet (svcerr.Error matches errors of its code).
func TestErrNotModifiedIs(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"ErrNotModified", ErrNotModified, true},
		{"wrapped", fmt.Errorf("get blob: %w", ErrNotModified), true},
		{"ConditionNotMet", svcerr.New(svcerr.ConditionNotMet), false},
		{"wrapped ConditionNotMet", fmt.Errorf("x: %w", svcerr.New(svcerr.ConditionNotMet)), false},
		{"same code and message", &svcerr.Error{Code: svcerr.ConditionNotMet, Message: "not modified"}, false},
		{"EvalRead 412", EvalRead(Conditions{IfMatch: []string{"0x1"}}, Resource{Exists: true, ETag: `"0x2"`}), false},
		{"EvalRead 304", EvalRead(Conditions{IfNoneMatch: []string{"*"}}, Resource{Exists: true, ETag: `"0x2"`}), true},
		{"BlobNotFound", svcerr.New(svcerr.BlobNotFound), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, ErrNotModified); got != tt.want {
				t.Errorf("errors.Is(%v, ErrNotModified) = %v, want %v", tt.err, got, tt.want)
			}
			if got := IsNotModified(tt.err); got != tt.want {
				t.Errorf("IsNotModified(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	// The 304 still carries ConditionNotMet for x-ms-error-code.
	if !svcerr.HasCode(ErrNotModified, svcerr.ConditionNotMet) {
		t.Errorf("ErrNotModified has no ConditionNotMet code")
	}
	if !errors.Is(ErrNotModified, svcerr.New(svcerr.ConditionNotMet)) {
		t.Errorf("ErrNotModified does not match ConditionNotMet")
	}
}

// TestETagMatches: the empty entity-tag (If-Match: "") is a valid header
// value that matches no ETag, also not the empty one of a missing
// resource; * matches any.
func TestETagMatches(t *testing.T) {
	for _, tc := range []struct {
		stored, value string
		want          bool
	}{
		{`"0x8D1"`, "0x8D1", true},
		{`"0x8D1"`, "0x8D2", false},
		{`"0x8D1"`, "*", true},
		{`"0x8D1"`, "", false},
		{"", "", false},
		{`""`, "", false},
		{"", "*", true},
	} {
		if got := ETagMatches(tc.stored, tc.value); got != tc.want {
			t.Errorf("ETagMatches(%q, %q) = %v, want %v", tc.stored, tc.value, got, tc.want)
		}
	}
}
