// Package robustness checks blobgw's guarantees under faults: three `blobgw
// serve` processes share one Postgres and one MinIO bucket, many azblob
// clients drive them at random while connections to Postgres are cut (also
// right after COMMIT), a replica is killed and restarted and Postgres is
// restarted, and the recorded history is checked for linearizability with
// porcupine against the per-blob model in this file. See robustness_test.go.
package robustness

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Kind is one operation of the model.
type Kind string

// The operations the clients run. Every write carries a fresh value id in
// its body, so what a read returns names the writes it saw.
const (
	Put     Kind = "put"     // Put Blob (block blobs) or Create (append blobs): content = Value
	Get     Kind = "get"     // Get Blob, optionally If-None-Match
	Delete  Kind = "delete"  // Delete Blob
	Append  Kind = "append"  // Append Block, optionally x-ms-blob-condition-appendpos
	Acquire Kind = "acquire" // Lease Blob acquire, infinite, proposed id LeaseID
	Renew   Kind = "renew"   // Lease Blob renew LeaseID
	Release Kind = "release" // Lease Blob release LeaseID
	Break   Kind = "break"   // Lease Blob break, period 0
	CLI     Kind = "cli"     // `blobgw lease break --period 0`, straight in the store
	List    Kind = "list"    // one blob's entry of a List Blobs over the run's prefix
)

// Input is one call.
type Input struct {
	Kind Kind
	Blob string
	// Value is what a Put stores or an Append adds.
	Value string
	// IfMatch is an ETag this client saw ("" none); IfNoneMatch is "*" on a
	// create-only Put, an ETag on a conditional Get, or "".
	IfMatch, IfNoneMatch string
	// LeaseID is x-ms-lease-id on Put, Delete, Append, Renew, Release and
	// the proposed id on Acquire; "" none.
	LeaseID string
	// AppendPos is x-ms-blob-condition-appendpos; -1 none.
	AppendPos int64
}

// Output is what the call returned.
type Output struct {
	// Unknown: the call failed without a definite answer from the service
	// (a transport error, a timeout, a 5xx): it may or may not have taken
	// effect. Its return time is the end of the history.
	Unknown bool
	// OK: 2xx. Otherwise Code is the refusal's x-ms-error-code (or
	// "NotModified" for a 304).
	OK   bool
	Code string
	// Content and ETag of a Get, the ETag of a Put or Append, the ETag of
	// a listed blob.
	Content, ETag string
	// Listed: a List's blob was in the listing.
	Listed bool
	// NotSent: the connection could not even be made (the replica is
	// down): the request took no effect and stays out of the history.
	NotSent bool
}

// Lease states of the model: leases are infinite and broken with period
// 0, so no state depends on the clock.
const (
	available = iota
	leased
	broken
)

// State is one blob's state.
type State struct {
	Exists  bool
	Content string
	// ETag is the ETag the write that produced this state returned, or
	// unknownETag when that write's answer was lost; the first read that
	// observes the state pins it.
	ETag    string
	Lease   int
	LeaseID string
}

// unknownETag stands for the ETag of a write whose answer was lost. ETags
// are unique, and a client only ever sends an ETag it was given, so an
// If-Match with any ETag it holds cannot match it.
const unknownETag = "?"

// writeLease is the lease rule of a write (Put Blob, Delete Blob, Append
// Block) with lease id id: whether it may proceed and the lease it leaves.
// Without an id a broken lease is cleared; with one it must name the
// active lease.
func writeLease(s State, id string) (bool, int, string) {
	switch {
	case id == "" && s.Lease == leased:
		return false, 0, ""
	case id == "" && s.Lease == broken:
		return true, available, ""
	case id == "":
		return true, s.Lease, s.LeaseID
	case s.Lease == leased && s.LeaseID == id:
		return true, s.Lease, s.LeaseID
	}
	return false, 0, ""
}

// apply is the sequential specification: whether in succeeds on s and the
// state after it (for writes, with the ETag left for the caller to set).
func apply(s State, in Input) (bool, State) {
	n := s
	switch in.Kind {
	case Put:
		if !s.Exists {
			if in.LeaseID != "" || in.IfMatch != "" {
				return false, s
			}
			return true, State{Exists: true, Content: in.Value}
		}
		ok, l, id := writeLease(s, in.LeaseID)
		if !ok || in.IfNoneMatch == "*" || (in.IfMatch != "" && in.IfMatch != s.ETag) {
			return false, s
		}
		return true, State{Exists: true, Content: in.Value, Lease: l, LeaseID: id}
	case Delete:
		if !s.Exists {
			return false, s
		}
		ok, _, _ := writeLease(s, in.LeaseID)
		if !ok || (in.IfMatch != "" && in.IfMatch != s.ETag) {
			return false, s
		}
		return true, State{}
	case Append:
		if !s.Exists {
			return false, s
		}
		ok, l, id := writeLease(s, in.LeaseID)
		if !ok || (in.AppendPos >= 0 && in.AppendPos != int64(len(s.Content))) {
			return false, s
		}
		return true, State{Exists: true, Content: s.Content + in.Value, Lease: l, LeaseID: id}
	case Acquire:
		if !s.Exists || (s.Lease == leased && s.LeaseID != in.LeaseID) {
			return false, s
		}
		n.Lease, n.LeaseID = leased, in.LeaseID
		return true, n
	case Renew:
		return s.Exists && s.Lease == leased && s.LeaseID == in.LeaseID, s
	case Release:
		if !s.Exists || s.Lease == available || s.LeaseID != in.LeaseID {
			return false, s
		}
		n.Lease, n.LeaseID = available, ""
		return true, n
	case Break, CLI:
		if !s.Exists || s.Lease == available {
			return false, s
		}
		n.Lease = broken
		return true, n
	}
	panic("robustness: unknown kind " + in.Kind)
}

// observe checks a read (Get, List) against s and returns s with its ETag
// pinned by what the read saw.
func observe(s State, in Input, out Output) (bool, State) {
	pin := func(etag string) (bool, State) {
		switch s.ETag {
		case unknownETag:
			s.ETag = etag
			return true, s
		case etag:
			return true, s
		}
		return false, s
	}
	if in.Kind == List {
		if out.Listed != s.Exists {
			return false, s
		}
		if !s.Exists {
			return true, s
		}
		return pin(out.ETag)
	}
	switch {
	case !s.Exists:
		return !out.OK && out.Code == "BlobNotFound", s
	case in.IfNoneMatch != "" && in.IfNoneMatch == s.ETag:
		return !out.OK && out.Code == "NotModified", s
	case !out.OK || out.Content != s.Content:
		return false, s
	}
	return pin(out.ETag)
}

// step is the nondeterministic step function: the states s may move to
// when in returns out.
func step(s State, in Input, out Output) []State {
	if in.Kind == Get || in.Kind == List {
		if out.Unknown {
			return []State{s}
		}
		if ok, n := observe(s, in, out); ok {
			return []State{n}
		}
		return nil
	}
	ok, n := apply(s, in)
	writes := in.Kind == Put || in.Kind == Append
	if out.Unknown {
		if !ok {
			return []State{s}
		}
		if writes {
			n.ETag = unknownETag
		}
		return []State{s, n}
	}
	if ok != out.OK {
		return nil
	}
	if ok && writes {
		n.ETag = out.ETag
	}
	return []State{n}
}

// Model is the porcupine model, partitioned by blob.
var Model = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			b := op.Input.(Input).Blob
			by[b] = append(by[b], op)
		}
		names := make([]string, 0, len(by))
		for b := range by {
			names = append(names, b)
		}
		sort.Strings(names)
		out := make([][]porcupine.Operation, 0, len(names))
		for _, b := range names {
			out = append(out, by[b])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{State{}} },
	Step: func(state, input, output interface{}) []interface{} {
		next := step(state.(State), input.(Input), output.(Output))
		out := make([]interface{}, len(next))
		for i, s := range next {
			out[i] = s
		}
		return out
	},
	Equal: func(a, b interface{}) bool { return a.(State) == b.(State) },
	Hash: func(state interface{}) uint64 {
		s := state.(State)
		h := fnv.New64a()
		fmt.Fprintf(h, "%v|%s|%s|%d|%s", s.Exists, s.Content, s.ETag, s.Lease, s.LeaseID)
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(Input), output.(Output)
		call := string(in.Kind) + "(" + in.Blob
		if in.Value != "" {
			call += " v=" + in.Value
		}
		if in.IfMatch != "" {
			call += " if-match=" + in.IfMatch
		}
		if in.IfNoneMatch != "" {
			call += " if-none-match=" + in.IfNoneMatch
		}
		if in.LeaseID != "" {
			call += " lease=" + in.LeaseID[len(in.LeaseID)-4:]
		}
		if in.AppendPos >= 0 && in.Kind == Append {
			call += fmt.Sprintf(" pos=%d", in.AppendPos)
		}
		call += ")"
		switch {
		case out.Unknown:
			return call + " -> ?"
		case in.Kind == List:
			return fmt.Sprintf("%s -> listed=%v %s", call, out.Listed, out.ETag)
		case !out.OK:
			return call + " -> " + out.Code
		case in.Kind == Get:
			return fmt.Sprintf("%s -> %q %s", call, out.Content, out.ETag)
		}
		return call + " -> ok " + out.ETag
	},
	DescribeState: func(state interface{}) string {
		s := state.(State)
		if !s.Exists {
			return "absent"
		}
		lease := [...]string{"available", "leased", "broken"}[s.Lease]
		if s.LeaseID != "" {
			lease += " " + s.LeaseID[len(s.LeaseID)-4:]
		}
		return fmt.Sprintf("%q etag=%s lease=%s", s.Content, s.ETag, lease)
	},
}
