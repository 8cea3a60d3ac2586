package robustness

import (
	"os"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

const idA, idB = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"

// The sequential rules, one step each.
func TestApply(t *testing.T) {
	absent := State{}
	plain := State{Exists: true, Content: "v1", ETag: "e1"}
	leasedA := State{Exists: true, Content: "v1", ETag: "e1", Lease: leased, LeaseID: idA}
	brokenA := State{Exists: true, Content: "v1", ETag: "e1", Lease: broken, LeaseID: idA}
	tests := []struct {
		name string
		s    State
		in   Input
		ok   bool
		want State // ETag left as apply leaves it
	}{
		{"put creates", absent, Input{Kind: Put, Value: "v2"}, true, State{Exists: true, Content: "v2"}},
		{"put with lease id on absent", absent, Input{Kind: Put, Value: "v2", LeaseID: idA}, false, absent},
		{"put if-match on absent", absent, Input{Kind: Put, Value: "v2", IfMatch: "e1"}, false, absent},
		{"put if-none-match * on existing", plain, Input{Kind: Put, Value: "v2", IfNoneMatch: "*"}, false, plain},
		{"put if-match current", plain, Input{Kind: Put, Value: "v2", IfMatch: "e1"}, true, State{Exists: true, Content: "v2"}},
		{"put if-match stale", plain, Input{Kind: Put, Value: "v2", IfMatch: "e0"}, false, plain},
		{"put if-match on lost etag", State{Exists: true, Content: "v1", ETag: unknownETag}, Input{Kind: Put, Value: "v2", IfMatch: "e1"}, false, State{Exists: true, Content: "v1", ETag: unknownETag}},
		{"put without id on leased", leasedA, Input{Kind: Put, Value: "v2"}, false, leasedA},
		{"put with holder's id keeps lease", leasedA, Input{Kind: Put, Value: "v2", LeaseID: idA}, true, State{Exists: true, Content: "v2", Lease: leased, LeaseID: idA}},
		{"put with other id on leased", leasedA, Input{Kind: Put, Value: "v2", LeaseID: idB}, false, leasedA},
		{"put without id clears broken", brokenA, Input{Kind: Put, Value: "v2"}, true, State{Exists: true, Content: "v2"}},
		{"put with old id on broken", brokenA, Input{Kind: Put, Value: "v2", LeaseID: idA}, false, brokenA},
		{"delete", plain, Input{Kind: Delete}, true, absent},
		{"delete absent", absent, Input{Kind: Delete}, false, absent},
		{"delete leased without id", leasedA, Input{Kind: Delete}, false, leasedA},
		{"append at pos", State{Exists: true, Content: "ab"}, Input{Kind: Append, Value: "c", AppendPos: 2}, true, State{Exists: true, Content: "abc"}},
		{"append at wrong pos", State{Exists: true, Content: "ab"}, Input{Kind: Append, Value: "c", AppendPos: 1}, false, State{Exists: true, Content: "ab"}},
		{"append anywhere", State{Exists: true, Content: "ab"}, Input{Kind: Append, Value: "c", AppendPos: -1}, true, State{Exists: true, Content: "abc"}},
		{"acquire", plain, Input{Kind: Acquire, LeaseID: idA}, true, leasedA},
		{"acquire again by holder", leasedA, Input{Kind: Acquire, LeaseID: idA}, true, leasedA},
		{"acquire held by other", leasedA, Input{Kind: Acquire, LeaseID: idB}, false, leasedA},
		{"acquire broken", brokenA, Input{Kind: Acquire, LeaseID: idB}, true, State{Exists: true, Content: "v1", ETag: "e1", Lease: leased, LeaseID: idB}},
		{"acquire absent", absent, Input{Kind: Acquire, LeaseID: idA}, false, absent},
		{"renew holder", leasedA, Input{Kind: Renew, LeaseID: idA}, true, leasedA},
		{"renew broken", brokenA, Input{Kind: Renew, LeaseID: idA}, false, brokenA},
		{"release holder", leasedA, Input{Kind: Release, LeaseID: idA}, true, plain},
		{"release broken by old holder", brokenA, Input{Kind: Release, LeaseID: idA}, true, plain},
		{"release by other", leasedA, Input{Kind: Release, LeaseID: idB}, false, leasedA},
		{"release available", plain, Input{Kind: Release, LeaseID: idA}, false, plain},
		{"break leased", leasedA, Input{Kind: Break}, true, brokenA},
		{"break broken", brokenA, Input{Kind: CLI}, true, brokenA},
		{"break available", plain, Input{Kind: Break}, false, plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Kind != Append {
				tt.in.AppendPos = -1
			}
			ok, got := apply(tt.s, tt.in)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("apply = %v, %+v; want %v, %+v", ok, got, tt.ok, tt.want)
			}
		})
	}
}

// op builds a history entry; times in arbitrary units.
func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	if in.Blob == "" {
		in.Blob = "x"
	}
	if in.Kind != Append {
		in.AppendPos = -1
	}
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

// The checker on small histories: each bad one is a violation the run must
// catch, each good one a behaviour it must allow (ambiguous outcomes
// included).
func TestCheckerHistories(t *testing.T) {
	put := func(v, etag string) (Input, Output) {
		return Input{Kind: Put, Value: v}, Output{OK: true, ETag: etag}
	}
	p1i, p1o := put("v1", "e1")
	p2i, p2o := put("v2", "e2")
	read := func(v, etag string) Output { return Output{OK: true, Content: v, ETag: etag} }
	tests := []struct {
		name string
		ok   bool
		h    []porcupine.Operation
	}{
		{"read your write", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: Get}, read("v1", "e1"))}},
		{"stale read after acknowledged write", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(0, 20, 30, p2i, p2o), op(1, 40, 50, Input{Kind: Get}, read("v1", "e1"))}},
		{"lost acknowledged write", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 40, 50, Input{Kind: Get}, Output{Code: "BlobNotFound"})}},
		{"concurrent write either order", true, []porcupine.Operation{
			op(0, 0, 30, p1i, p1o), op(1, 5, 25, p2i, p2o), op(2, 40, 50, Input{Kind: Get}, read("v1", "e1"))}},
		{"wrong etag for content", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: Get}, read("v1", "e9"))}},
		{"if-match with stale etag succeeds", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(0, 20, 30, p2i, p2o),
			op(1, 40, 50, Input{Kind: Put, Value: "v3", IfMatch: "e1"}, Output{OK: true, ETag: "e3"})}},
		{"two create-only writes both win", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Put, Value: "v1", IfNoneMatch: "*"}, Output{OK: true, ETag: "e1"}),
			op(1, 5, 15, Input{Kind: Put, Value: "v2", IfNoneMatch: "*"}, Output{OK: true, ETag: "e2"})}},
		{"ambiguous write applied", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 100, Input{Kind: Put, Value: "v2"}, Output{Unknown: true}),
			op(2, 110, 120, Input{Kind: Get}, read("v2", "e7"))}},
		{"ambiguous write not applied", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 100, Input{Kind: Put, Value: "v2"}, Output{Unknown: true}),
			op(2, 110, 120, Input{Kind: Get}, read("v1", "e1"))}},
		{"ambiguous write applied after the window", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 100, Input{Kind: Put, Value: "v2"}, Output{Unknown: true}),
			op(2, 110, 120, Input{Kind: Get}, read("v1", "e1")), op(2, 130, 140, Input{Kind: Get}, read("v2", "e7"))}},
		{"if-match on a lost etag", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: Put, Value: "v2"}, Output{Unknown: true}),
			op(1, 40, 50, Input{Kind: Get}, read("v2", "e7")),
			op(2, 60, 70, Input{Kind: Put, Value: "v3", IfMatch: "e1"}, Output{OK: true, ETag: "e8"})}},
		{"two holders", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o),
			op(1, 20, 30, Input{Kind: Acquire, LeaseID: idA}, Output{OK: true}),
			op(2, 40, 50, Input{Kind: Acquire, LeaseID: idB}, Output{OK: true})}},
		{"write without id while leased", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o),
			op(1, 20, 30, Input{Kind: Acquire, LeaseID: idA}, Output{OK: true}),
			op(2, 40, 50, p2i, p2o)}},
		{"break then another acquires", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o),
			op(1, 20, 30, Input{Kind: Acquire, LeaseID: idA}, Output{OK: true}),
			op(2, 40, 50, Input{Kind: CLI}, Output{OK: true}),
			op(2, 60, 70, Input{Kind: Acquire, LeaseID: idB}, Output{OK: true}),
			op(1, 80, 90, Input{Kind: Renew, LeaseID: idA}, Output{Code: "LeaseIdMismatchWithLeaseOperation"})}},
		{"append twice at one position", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Put}, Output{OK: true, ETag: "e1"}),
			op(1, 20, 30, Input{Kind: Append, Value: "a;", AppendPos: 0}, Output{OK: true, ETag: "e2"}),
			op(2, 25, 35, Input{Kind: Append, Value: "b;", AppendPos: 0}, Output{OK: true, ETag: "e3"})}},
		{"listing misses an acknowledged write", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: List}, Output{OK: true})}},
		{"listing shows it", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: List}, Output{OK: true, Listed: true, ETag: "e1"})}},
		{"not modified with the current etag", true, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(1, 20, 30, Input{Kind: Get, IfNoneMatch: "e1"}, Output{Code: "NotModified"})}},
		{"not modified with a stale etag", false, []porcupine.Operation{
			op(0, 0, 10, p1i, p1o), op(0, 20, 30, p2i, p2o),
			op(1, 40, 50, Input{Kind: Get, IfNoneMatch: "e1"}, Output{Code: "NotModified"})}},
	}
	model := Model.ToModel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(model, tt.h); got != tt.ok {
				t.Fatalf("linearizable = %v, want %v", got, tt.ok)
			}
		})
	}
}

// Blobs are checked apart: a violation on one is found among others.
func TestPartition(t *testing.T) {
	h := []porcupine.Operation{
		op(0, 0, 10, Input{Kind: Put, Blob: "a", Value: "v1"}, Output{OK: true, ETag: "e1"}),
		op(1, 0, 10, Input{Kind: Put, Blob: "b", Value: "v1"}, Output{OK: true, ETag: "e2"}),
		op(2, 20, 30, Input{Kind: Get, Blob: "a"}, Output{OK: true, Content: "v1", ETag: "e1"}),
		op(2, 40, 50, Input{Kind: Get, Blob: "b"}, Output{Code: "BlobNotFound"}),
	}
	if parts := Model.Partition(h); len(parts) != 2 {
		t.Fatalf("%d partitions, want 2", len(parts))
	}
	if porcupine.CheckOperations(Model.ToModel(), h) {
		t.Fatal("lost write on b not found")
	}
}

// A violation is written out: the visualization, and the failing blob's
// history ending at the operation no linearization explains.
func TestWriteViolation(t *testing.T) {
	h := []porcupine.Operation{
		op(0, 0, 10, Input{Kind: Put, Blob: "r/ok", Value: "v1"}, Output{OK: true, ETag: "e1"}),
		op(1, 0, 10, Input{Kind: Put, Blob: "r/bad", Value: "v1"}, Output{OK: true, ETag: "e2"}),
		op(1, 20, 30, Input{Kind: Get, Blob: "r/bad"}, Output{OK: true, Content: "v0", ETag: "e0"}),
		op(1, 40, 50, Input{Kind: Get, Blob: "r/bad"}, Output{OK: true, Content: "v1", ETag: "e2"}),
	}
	res, info := porcupine.CheckOperationsVerbose(Model.ToModel(), h, 0)
	if res != porcupine.Illegal {
		t.Fatalf("check = %s, want Illegal", res)
	}
	html, blobs, err := writeViolation(t.TempDir(), h, info)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization %s: %v", html, err)
	}
	if len(blobs) != 1 || blobs["r/bad"] == "" {
		t.Fatalf("failing blobs %v, want r/bad only", blobs)
	}
	b, err := os.ReadFile(blobs["r/bad"])
	if err != nil {
		t.Fatal(err)
	}
	if want := "shortest failing prefix: 2 operations, ending with\n  get(r/bad) -> \"v0\" e0"; !strings.HasPrefix(string(b), want) {
		t.Fatalf("history file starts\n%s\nwant\n%s", b, want)
	}
}
