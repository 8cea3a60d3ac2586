package leasedb

import (
	"strings"

	"github.com/blobgw/blobgw/svcerr"
)

// Access tiers of block blobs. Blob.AccessTier holds one of these, or ""
// when no tier was ever set (reported as Hot, inferred).
const (
	TierHot     = "Hot"
	TierCool    = "Cool"
	TierCold    = "Cold"
	TierArchive = "Archive"
)

// CanonicalTier maps a tier name in any letter case to its canonical
// spelling; ok is false for anything else (premium page blob tiers
// included: a standard account refuses them, gateway/page_tier.go).
func CanonicalTier(v string) (tier string, ok bool) {
	for _, t := range []string{TierHot, TierCool, TierCold, TierArchive} {
		if strings.EqualFold(v, t) {
			return t, true
		}
	}
	return "", false
}

// Blob index tag limits (Azure's).
const (
	MaxTags           = 10
	MaxTagKeyLength   = 128
	MaxTagValueLength = 256
)

// ValidateTags applies Azure's rules to a whole tag set: at most 10 tags;
// keys 1–128 and values 0–256 characters from [a-zA-Z0-9 +-./:=_].
// Violations are 400 InvalidTag.
func ValidateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return svcerr.Newf(svcerr.InvalidTag, "A blob can have at most %d tags.", MaxTags)
	}
	for k, v := range tags {
		if len(k) == 0 || len(k) > MaxTagKeyLength || !validTagText(k) {
			return svcerr.Newf(svcerr.InvalidTag, "The tag key %q is invalid: 1 to %d characters from a-z, A-Z, 0-9, space and + - . / : = _.", k, MaxTagKeyLength)
		}
		if len(v) > MaxTagValueLength || !validTagText(v) {
			return svcerr.Newf(svcerr.InvalidTag, "The value of tag %q is invalid: at most %d characters from a-z, A-Z, 0-9, space and + - . / : = _.", k, MaxTagValueLength)
		}
	}
	return nil
}

func validTagText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(" +-./:=_", c) >= 0:
		default:
			return false
		}
	}
	return true
}
