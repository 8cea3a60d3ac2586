package gateway

import (
	"testing"

	"github.com/google/uuid"
)

// TestRequestID: request ids are canonical version 4 UUIDs (RFC 4122
// variant, lowercase), all different, and cost one allocation, the string
// (uuid.NewString, used before, two and a read of system randomness).
func TestRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 20000 {
		id := newRequestID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("request id %q: %v, version %v, variant %v", id, err, u.Version(), u.Variant())
		}
		if seen[id] {
			t.Fatalf("request id %q twice", id)
		}
		seen[id] = true
	}
	if n := testing.AllocsPerRun(1000, func() { _ = newRequestID() }); n > 1 {
		t.Errorf("newRequestID: %.0f allocations, want 1", n)
	}
}

func BenchmarkRequestID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newRequestID()
	}
}
