package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

// seedKeyRefs writes in container c (which it creates) blob b with
// extents of blobKeys, its snapshot 2024-01-01T00:00:00.0000000Z with
// snapKeys, block YmxrMQ== of blob u staged with key "a/Block", the
// upload intent "in/1" and gcKeys queued for collection.
func seedKeyRefs(t *testing.T, s leasedb.Store, blobKeys, snapKeys, gcKeys []string) {
	t.Helper()
	extents := func(keys []string) []leasedb.Extent {
		var x []leasedb.Extent
		for _, k := range keys {
			x = append(x, leasedb.Extent{Key: k, Size: 1})
		}
		return x
	}
	mustInsertContainer(t, s, "c")
	now := dbNow(t, s)
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		b := fullBlob("c", "b")
		b.Extents = extents(blobKeys)
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		snap := fullBlob("c", "b")
		snap.Snapshot = "2024-01-01T00:00:00.0000000Z"
		snap.Extents = extents(snapKeys)
		if err := tx.PutSnapshot(ctx, snap); err != nil {
			return err
		}
		if _, err := tx.StageBlock(ctx, acct, "c", "u", leasedb.Block{ID: "YmxrMQ==", Key: "a/Block", Size: 1, StagedAt: now}); err != nil {
			return err
		}
		if err := tx.AddIntent(ctx, "in/1", now.Add(time.Hour)); err != nil {
			return err
		}
		return tx.AddGC(ctx, gcKeys, now.Add(time.Hour))
	})
}

// keyRef is one (key, ref) pair ReferencedKeys or QueuedReferencedKeys
// listed.
type keyRef struct{ key, ref string }

// listKeyRefs returns what list (ReferencedKeys or QueuedReferencedKeys,
// named what) lists, in its order.
func listKeyRefs(t *testing.T, what string, list func(context.Context, func(key, ref string) error) error) []keyRef {
	t.Helper()
	var got []keyRef
	if err := list(ctxT(t), func(key, r string) error {
		got = append(got, keyRef{key, r})
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return got
}

// testReferencedKeys: every key of a blob row, a snapshot row, a staged
// block, an intent and a queue entry, once each, in byte order (upper case
// before lower case, '-' and '.' before '/', whatever the database's
// collation), with a row's name when a row holds it.
func testReferencedKeys(t *testing.T, s leasedb.Store) {
	seedKeyRefs(t, s, []string{"obj/b/2", "obj/b/1", "Shared.k", "obj/b/1"}, []string{"Shared.k", "snap-only"},
		[]string{"gc/queued", "obj-b"})
	got := listKeyRefs(t, "ReferencedKeys", s.ReferencedKeys)
	var keys []string
	for _, r := range got {
		keys = append(keys, r.key)
	}
	want := []string{"Shared.k", "a/Block", "gc/queued", "in/1", "obj-b", "obj/b/1", "obj/b/2", "snap-only"}
	if !slices.Equal(keys, want) {
		t.Fatalf("ReferencedKeys = %q, want %q", keys, want)
	}
	for _, r := range got {
		switch r.key {
		case "gc/queued", "in/1", "obj-b":
			if r.ref != "" {
				t.Errorf("queued key %s: ref %q, want \"\"", r.key, r.ref)
			}
		case "a/Block":
			if !strings.HasPrefix(r.ref, acct+"/c/u") {
				t.Errorf("staged key %s: ref %q, want the blob name", r.key, r.ref)
			}
		case "snap-only":
			if r.ref != acct+"/c/b?snapshot=2024-01-01T00:00:00.0000000Z" {
				t.Errorf("snapshot key %s: ref %q", r.key, r.ref)
			}
		default:
			if !strings.HasPrefix(r.ref, acct+"/c/b") {
				t.Errorf("row key %s: ref %q, want the blob name", r.key, r.ref)
			}
		}
	}
	// fn's error stops the listing and comes back unchanged.
	stop := errors.New("stop")
	n := 0
	err := s.ReferencedKeys(ctxT(t), func(string, string) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("ReferencedKeys with failing fn: err %v after %d calls, want stop after 1", err, n)
	}
}

// testQueuedReferencedKeys: a key the collection queue holds for deletion
// while a blob row, a snapshot row or a staged block references it is
// listed once, in byte order, with a row's name; an upload intent, a
// queued key nothing references and a referenced key the queue lacks are
// not.
func testQueuedReferencedKeys(t *testing.T, s leasedb.Store) {
	seedKeyRefs(t, s, []string{"obj/live", "obj/queued", "Shared.k"}, []string{"Shared.k", "snap/queued"},
		[]string{"gc/alone", "obj/queued", "snap/queued", "Shared.k", "a/Block"})
	got := listKeyRefs(t, "QueuedReferencedKeys", s.QueuedReferencedKeys)
	want := []keyRef{
		{"Shared.k", ""}, // either row's name
		{"a/Block", acct + "/c/u (staged block YmxrMQ==)"},
		{"obj/queued", acct + "/c/b"},
		{"snap/queued", acct + "/c/b?snapshot=2024-01-01T00:00:00.0000000Z"},
	}
	if len(got) != len(want) {
		t.Fatalf("QueuedReferencedKeys = %q, want the keys of %q", got, want)
	}
	for i, w := range want {
		if got[i].key != w.key || (w.ref != "" && got[i].ref != w.ref) || !strings.HasPrefix(got[i].ref, acct+"/c/") {
			t.Errorf("QueuedReferencedKeys[%d] = %q, want %q", i, got[i], w)
		}
	}
}
