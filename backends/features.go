package backends

import (
	"context"
	"time"
)

// Optional abilities. A Backend may implement any of the interfaces below
// on top of its five methods; the gateway and the commands find them only
// through Features, never by asserting a concrete backend type, and
// backendtest runs one sub-suite per ability a backend declares.
//
//	ability       interface     disk  s3   used by
//	batch delete  BatchDeleter   -    yes  collector: one request per 1000 replaced objects
//	adopted keys  AdoptedKeys    -    yes  Copy Blob: an adopted object is copied, not shared
//	temp sweep    TempSweeper   yes    -   collector and serve: uploads a crash cut off
//
// A backend without an ability gets the fallback written beside each use
// (one Delete per key; no key is adopted; nothing to sweep).

// BatchDeleter is the ability to delete many objects per request (S3's
// DeleteObjects). DeleteMany removes keys as Delete does, missing keys not
// being an error; it validates every key before deleting any, and on
// failure the caller must assume every key may remain.
type BatchDeleter interface {
	DeleteMany(ctx context.Context, keys []string) error
}

// AdoptedKeys is the ability of a backend that reaches objects it did not
// write (blobgw import s3 adopts existing bucket objects). IsAdopted
// reports whether key names such an object. Put refuses adopted keys and
// List does not report them; Open, Stat and Delete work on them. An
// adopted object backs one blob name only, so the gateway copies its
// bytes rather than sharing the object.
type AdoptedKeys interface {
	IsAdopted(key string) bool
}

// TempSweeper is the optional ability of a backend that stages uploads in
// temporary storage of its own (the disk backend's root/tmp), which a
// crash mid-upload leaves behind where no upload intent names it. The
// collector calls SweepTemp on every pass: it removes temporary data last
// written more than olderThan ago (such data can never be committed) and
// reports how many items it removed. olderThan must exceed the longest a
// live upload goes without writing, in this process and in any other
// sharing the storage.
type TempSweeper interface {
	SweepTemp(ctx context.Context, olderThan time.Duration) (int, error)
}

// Features are the optional abilities of one backend: each field is the
// backend itself seen through that ability's interface, or nil when the
// backend lacks it.
type Features struct {
	BatchDeleter BatchDeleter
	AdoptedKeys  AdoptedKeys
	TempSweeper  TempSweeper
}

// FeaturesOf returns the abilities b declares.
func FeaturesOf(b Backend) Features {
	if w, ok := b.(interface{ Features() Features }); ok {
		// A wrapper (Observe) answers for the backend it wraps.
		return w.Features()
	}
	var f Features
	f.BatchDeleter, _ = b.(BatchDeleter)
	f.AdoptedKeys, _ = b.(AdoptedKeys)
	f.TempSweeper, _ = b.(TempSweeper)
	return f
}

// Names lists the abilities present, in the order of the table above (for
// logs and test names).
func (f Features) Names() []string {
	var names []string
	if f.BatchDeleter != nil {
		names = append(names, "BatchDelete")
	}
	if f.AdoptedKeys != nil {
		names = append(names, "AdoptedKeys")
	}
	if f.TempSweeper != nil {
		names = append(names, "TempSweep")
	}
	return names
}
