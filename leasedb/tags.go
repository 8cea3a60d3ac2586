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
// included: see CanonicalPremiumTier).
func CanonicalTier(v string) (tier string, ok bool) {
	for _, t := range []string{TierHot, TierCool, TierCold, TierArchive} {
		if strings.EqualFold(v, t) {
			return t, true
		}
	}
	return "", false
}

// gib is one binary gigabyte.
const gib = int64(1) << 30

// premiumTierSizes are the premium page blob tiers (x-ms-access-tier on a
// page blob) with the largest blob length each allows, in Azure's order.
// A premium tier sets a disk's size, IOPS and bandwidth class; here only
// the size limit applies.
var premiumTierSizes = []struct {
	tier string
	max  int64
}{
	{"P1", 4 * gib}, {"P2", 8 * gib}, {"P3", 16 * gib}, {"P4", 32 * gib}, {"P6", 64 * gib},
	{"P10", 128 * gib}, {"P15", 256 * gib}, {"P20", 512 * gib}, {"P30", 1024 * gib},
	{"P40", 2048 * gib}, {"P50", 4096 * gib}, {"P60", 8192 * gib}, {"P70", 16384 * gib},
	{"P80", 32767 * gib},
}

// CanonicalPremiumTier maps a premium page blob tier in any letter case
// (surrounding spaces ignored) to its canonical spelling and the largest
// page blob length it allows; ok is false for anything else.
func CanonicalPremiumTier(v string) (tier string, max int64, ok bool) {
	v = strings.TrimSpace(v)
	for _, t := range premiumTierSizes {
		if strings.EqualFold(v, t.tier) {
			return t.tier, t.max, true
		}
	}
	return "", 0, false
}

// PremiumTier reads v (x-ms-access-tier) as a premium page blob tier for a
// page blob of size bytes, with one lookup: ok is false when v names no
// premium tier (a standard tier, or nothing); otherwise tier is its
// canonical spelling and err the tier's size rule: a page blob longer
// than its tier allows is 409 BlobTierInadequateForContentLength (Set Blob
// Tier to a smaller tier, and here also Put Blob, Copy Blob and a resize
// by Set Blob Properties past the tier).
func PremiumTier(v string, size int64) (tier string, ok bool, err error) {
	tier, max, ok := CanonicalPremiumTier(v)
	if ok && size > max {
		err = svcerr.New(svcerr.BlobTierInadequateForContentLength)
	}
	return tier, ok, err
}

// CheckPremiumTierSize is the size rule of a stored tier (PremiumTier):
// any other tier (or none) has no size rule.
func CheckPremiumTierSize(tier string, size int64) error {
	_, _, err := PremiumTier(tier, size)
	return err
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
