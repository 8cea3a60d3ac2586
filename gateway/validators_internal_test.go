package gateway

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestHandValidatorsMatchRE: validVersion and containerNameChars, which
// replaced a regular expression per request, accept exactly what the
// expressions accepted, on a corpus and on random strings over the
// characters that matter.
func TestHandValidatorsMatchRE(t *testing.T) {
	versionRE := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	containerRE := regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9])*$`)
	corpus := []string{"", "2025-11-05", "2025-11-5", "2025-11-05\n", "2025/11/05", "20251-1-05", "٢٠٢٥-١١-٠٥", "2025-11-05 ",
		"abc", "a", "-", "a-", "-a", "a-b", "a--b", "abc-def-0", "ABC", "a_b", "a.b", "cnt", "$root", "é", "a-b-"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "09az-AZ_.\n/é"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		corpus = append(corpus, string(b))
	}
	for range 5000 { // dddd-dd-dd shapes with one character changed
		b := []byte("2025-11-05")
		b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
		corpus = append(corpus, string(b))
	}
	for _, s := range corpus {
		if got, want := validVersion(s), versionRE.MatchString(s); got != want {
			t.Errorf("validVersion(%q) = %v, the expression says %v", s, got, want)
		}
		if got, want := containerNameChars(s), containerRE.MatchString(s); got != want {
			t.Errorf("containerNameChars(%q) = %v, the expression says %v", s, got, want)
		}
	}
}
