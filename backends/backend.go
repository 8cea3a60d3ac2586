// Package backends defines where blob bytes live. A Backend stores immutable
// objects under keys the gateway chooses: a key is written once and deleted
// once, so an overwrite never touches bytes a reader may be streaming. The
// backend knows nothing of blobs, ETags or leases; that is leasedb's job.
package backends

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned by Open and Stat for a key that does not exist.
var ErrNotFound = errors.New("backends: object not found")

// ErrExists is returned by Put when the key already exists (keys are never
// reused; seeing this means a caller bug).
var ErrExists = errors.New("backends: object already exists")

// ErrUnavailable marks a failure of the backend itself (unreachable,
// overloaded, timing out after retries), as opposed to a bad request. The
// gateway answers it with 503 ServerBusy, which clients retry; a backend
// wraps its transport errors with it (fmt.Errorf("...: %w: %v",
// backends.ErrUnavailable, err)).
var ErrUnavailable = errors.New("backends: backend unavailable")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Backend is the small interface every byte store implements.
type Backend interface {
	// Put stores the bytes read from r under key. size is the expected
	// length, or -1 when unknown. The object becomes visible (to Open,
	// Stat, List) only if Put returns nil, and a nil return means the bytes
	// are durable. If r returns an error, or yields a length different from
	// a non-negative size, Put fails with that error (or a length error) and
	// leaves nothing behind. Put streams: memory stays bounded whatever the
	// object size.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Open returns a reader for length bytes starting at offset (length -1:
	// to the end). ErrNotFound when the key does not exist.
	Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Delete removes the object. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Stat describes one object; ErrNotFound when it does not exist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List calls fn for every object whose key starts with prefix, in no
	// particular order, stopping at the first error fn returns.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
}

// ValidKey reports whether key is acceptable to every backend: 1..512 bytes
// of [a-zA-Z0-9/_.-], no leading or trailing '/', no empty, "." or ".."
// segment, no segment longer than 255 bytes (a file name on disk). The gateway generates keys; this guards against misuse.
func ValidKey(key string) bool {
	if len(key) == 0 || len(key) > 512 || key[0] == '/' || key[len(key)-1] == '/' {
		return false
	}
	seg := 0
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			s := key[seg:i]
			if s == "" || s == "." || s == ".." || len(s) > 255 {
				return false
			}
			seg = i + 1
			continue
		}
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
