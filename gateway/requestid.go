package gateway

import (
	"encoding/binary"
	"math/rand/v2"
)

// newRequestID is a request's x-ms-request-id: a random (version 4) UUID
// as Azure sends. Its 122 random bits come from math/rand/v2 (the
// runtime's ChaCha8 generator, seeded from the system per thread): the id
// only has to be unique, not secret, and so, unlike uuid.NewString, it
// reads no system randomness per request and allocates the string only
// (uuid.NewString: 2 allocations).
func newRequestID() string {
	hi := rand.Uint64()&^0xf000 | 0x4000       // version 4: the high nibble of byte 6
	lo := rand.Uint64()&^(0xc0<<56) | 0x80<<56 // variant RFC 4122: byte 8 is 10xxxxxx
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], hi)
	binary.BigEndian.PutUint64(u[8:], lo)
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(b[:])
}
