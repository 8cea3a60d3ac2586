package storetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// genericOnly is a Store whose transactions offer only the Tx methods: a
// leasedb.DB on it takes the generic multi-statement paths.
type genericOnly struct{ leasedb.Store }

type plainTx struct{ leasedb.Tx }

func (g genericOnly) Update(ctx context.Context, fn func(leasedb.Tx) error) error {
	return g.Store.Update(ctx, func(tx leasedb.Tx) error { return fn(plainTx{tx}) })
}

func (g genericOnly) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return g.Store.View(ctx, func(tx leasedb.Tx) error { return fn(plainTx{tx}) })
}

// testPutBlobPaths runs one sequence of Put Blobs (new blobs, overwrites
// dropping staged blocks, over a snapshot, over previous versions with
// versioning on and then off, over keys shared with a copy, refusals of a
// condition and of a lost intent), then of Set Blob Metadata, Set Blob
// Properties and Put Block List (likewise) once through the store as it is (its
// few-statement Put Blob where its Tx offers leasedb.BlobWriteLocker) and
// once through the generic Tx sequence, each in an account of its own, and
// compares what each left: the outcomes, the blob, snapshot, version and
// staged block rows, and the collection queue (which keys, which of them
// due now).
func testPutBlobPaths(t *testing.T, s leasedb.Store) {
	type result struct {
		outcomes []string
		rows     []string
		queued   []string
		due      []string
	}
	run := func(db *leasedb.DB, account string) result {
		ctx := ctxT(t)
		var res result
		k := func(n string) string { return account + "/" + n }
		now := dbNow(t, s)
		insertAccountContainer(t, s, account)
		intent := func(key string) {
			update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		}
		ref := func(name string) leasedb.BlobRef {
			return leasedb.BlobRef{Account: account, Container: "c", Name: name}
		}
		outcome := func(step string, err error) { res.outcomes = append(res.outcomes, stepOutcome(t, account, step, err)) }
		etag := map[string]string{}
		put := func(step, name, key string, withIntent bool, cond leasedb.Conditions) {
			if withIntent {
				intent(k(key))
			}
			b, _, err := db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(name), Type: "BlockBlob",
				Extents: []leasedb.Extent{{Key: k(key), Size: 4}},
				BlobContent: leasedb.BlobContent{Props: leasedb.Props{ContentType: "text/" + key},
					Metadata: map[string]string{"step": step}, Tags: map[string]string{"t": key}},
				Cond: cond})
			outcome(step, err)
			if err == nil {
				etag[name] = b.ETag
			}
		}
		put("new", "b1", "k1", true, leasedb.Conditions{})
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			_, err := tx.StageBlock(ctx, account, "c", "b1", leasedb.Block{ID: "YmxvY2s=", Key: k("staged"), Size: 3})
			return err
		})
		put("over staged", "b1", "k2", true, leasedb.Conditions{IfMatch: []string{strings.Trim(etag["b1"], `"`)}})
		_, err := db.CreateSnapshot(ctx, ref("b1"), "", leasedb.Conditions{}, nil)
		outcome("snapshot", err)
		put("over snapshot", "b1", "k3", true, leasedb.Conditions{})
		put("if-match fails", "b1", "k4", true, leasedb.Conditions{IfMatch: []string{"0x1"}})
		put("intent lost", "b1", "k5", false, leasedb.Conditions{})
		put("if-none-match", "b1", "k6", true, leasedb.Conditions{IfNoneMatch: []string{"*"}})

		outcome("versioning on", db.SetVersioning(ctx, account, true))
		put("versioned new", "b2", "v1", true, leasedb.Conditions{})
		put("versioned over", "b2", "v2", true, leasedb.Conditions{})
		outcome("versioning off", db.SetVersioning(ctx, account, false))
		put("over a version", "b2", "v3", true, leasedb.Conditions{})
		put("over versions", "b2", "v4", true, leasedb.Conditions{})

		// b3 shares b1's extents (a copy), then both are overwritten.
		var src *leasedb.Blob
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			var err error
			src, err = tx.Blob(ctx, account, "c", "b1", leasedb.LockNone)
			return err
		})
		_, _, err = db.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref("b3"), Type: "BlockBlob", Extents: src.Extents,
			Copy: leasedb.CopyTarget{SharedExtents: true, Source: ref("b1")}})
		outcome("copy shared", err)
		put("over shared", "b1", "k7", true, leasedb.Conditions{})
		put("over last sharer", "b3", "k8", true, leasedb.Conditions{})

		// Set Blob Metadata and Set Blob Properties (writeExisting).
		setMeta := func(step, name string, cond leasedb.Conditions) {
			_, err := db.SetBlobMetadata(ctx, ref(name), "", cond, map[string]string{"set": step})
			outcome(step, err)
		}
		setMeta("set metadata", "b1", leasedb.Conditions{})
		_, err = db.SetBlobProperties(ctx, ref("b1"), "", leasedb.Conditions{}, leasedb.Props{ContentType: "x/set"})
		outcome("set properties", err)
		setMeta("set metadata if-match fails", "b1", leasedb.Conditions{IfMatch: []string{"0x1"}})
		_, err = db.SetBlobProperties(ctx, ref("absent"), "", leasedb.Conditions{}, leasedb.Props{})
		outcome("set properties of an absent blob", err)
		put("unversioned", "b4", "k9", true, leasedb.Conditions{})
		outcome("versioning on again", db.SetVersioning(ctx, account, true))
		setMeta("set metadata versioned", "b2", leasedb.Conditions{})
		setMeta("set metadata, first version", "b4", leasedb.Conditions{})
		outcome("versioning off again", db.SetVersioning(ctx, account, false))
		setMeta("set metadata of a version", "b2", leasedb.Conditions{})
		setMeta("set metadata over versions", "b2", leasedb.Conditions{})

		// Put Block List (CommitBlocks).
		stage := func(name, id, key string) string {
			bid := base64.StdEncoding.EncodeToString([]byte(id))
			update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
				_, err := tx.StageBlock(ctx, account, "c", name, leasedb.Block{ID: bid, Key: k(key), Size: 2})
				return err
			})
			return bid
		}
		commit := func(step, name string, cond leasedb.Conditions, ids ...string) {
			var refs []leasedb.BlockRef
			for _, id := range ids {
				refs = append(refs, leasedb.BlockRef{Kind: leasedb.BlockLatest, ID: id})
			}
			_, _, err := db.CommitBlocks(ctx, leasedb.CommitBlocksRequest{Ref: ref(name), Blocks: refs, Cond: cond,
				BlobContent: leasedb.BlobContent{Metadata: map[string]string{"step": step}}})
			outcome(step, err)
		}
		a := stage("b5", "a", "blk-a")
		stage("b5", "b", "blk-b")
		commit("block list new", "b5", leasedb.Conditions{}, a)
		c := stage("b5", "c", "blk-c")
		_, err = db.CreateSnapshot(ctx, ref("b5"), "", leasedb.Conditions{}, nil)
		outcome("snapshot b5", err)
		commit("block list over a snapshot", "b5", leasedb.Conditions{}, c, a)
		commit("block list keeps a committed block", "b5", leasedb.Conditions{}, c)
		commit("block list if-match fails", "b5", leasedb.Conditions{IfMatch: []string{"0x1"}}, c)
		commit("block list unknown block", "b5", leasedb.Conditions{}, "bm9uZQ==")
		commit("block list over a copy", "b3", leasedb.Conditions{}, stage("b3", "d", "blk-d"))
		outcome("versioning on for blocks", db.SetVersioning(ctx, account, true))
		commit("block list versioned", "b2", leasedb.Conditions{}, stage("b2", "e", "blk-e"))
		outcome("versioning off for blocks", db.SetVersioning(ctx, account, false))
		commit("block list over a version", "b2", leasedb.Conditions{}, stage("b2", "f", "blk-f"))

		norm := func(b *leasedb.Blob, kind string) string {
			c := *b
			c.ETag, c.Created, c.LastModified = "", time.Time{}, time.Time{}
			if c.VersionID != "" {
				c.VersionID = "v"
			}
			if c.Snapshot != "" {
				c.Snapshot = "s"
			}
			var keys []string
			for _, e := range c.Extents {
				keys = append(keys, strings.TrimPrefix(e.Key, account+"/"))
			}
			c.Extents, c.Account = nil, ""
			return fmt.Sprintf("%s %+v keys=%v", kind, c, keys)
		}
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			bs, err := tx.ListBlobs(ctx, account, "c", "", "", 0)
			if err != nil {
				return err
			}
			for _, b := range bs {
				res.rows = append(res.rows, norm(b, "blob"))
				others, err := tx.NameRows(ctx, account, "c", b.Name)
				if err != nil {
					return err
				}
				for _, o := range others {
					res.rows = append(res.rows, norm(o, "other"))
				}
				blocks, err := tx.Blocks(ctx, account, "c", b.Name)
				if err != nil {
					return err
				}
				for _, bl := range blocks {
					res.rows = append(res.rows, "block "+b.Name+" "+strings.TrimPrefix(bl.Key, account+"/"))
				}
			}
			return nil
		})
		res.queued, res.due = accountQueue(t, s, account)
		return res
	}
	fast := run(&leasedb.DB{Store: s, Grace: time.Hour}, "fastpath")
	generic := run(&leasedb.DB{Store: genericOnly{s}, Grace: time.Hour}, "genericpath")
	if !reflect.DeepEqual(fast, generic) {
		t.Errorf("the two paths differ:\n%s", diffLines(fmt.Sprintf("%+v", generic), fmt.Sprintf("%+v", fast)))
		t.Logf("generic:\n%s\nfast:\n%s", strings.Join(generic.outcomes, "\n"), strings.Join(fast.outcomes, "\n"))
		t.Logf("generic rows:\n%s\nfast rows:\n%s", strings.Join(generic.rows, "\n"), strings.Join(fast.rows, "\n"))
		t.Logf("generic queue %v due %v\nfast queue %v due %v", generic.queued, generic.due, fast.queued, fast.due)
	}
	// The sequence means something only if it did what it says.
	want := []string{"new: ok", "over staged: ok", "snapshot: ok", "over snapshot: ok",
		"if-match fails: " + string(svcerr.ConditionNotMet), "intent lost: " + string(svcerr.OperationTimedOut),
		"if-none-match: " + string(svcerr.BlobAlreadyExists)}
	for _, w := range []string{"set metadata if-match fails: " + string(svcerr.ConditionNotMet),
		"block list new: ok", "block list over a snapshot: ok", "block list keeps a committed block: ok",
		"block list if-match fails: " + string(svcerr.ConditionNotMet), "block list unknown block: " + string(svcerr.InvalidBlockList),
		"set properties of an absent blob: " + string(svcerr.BlobNotFound), "set metadata of a version: ok"} {
		if !slices.Contains(generic.outcomes, w) {
			t.Errorf("outcomes %v, want %q among them", generic.outcomes, w)
		}
	}
	for i, w := range want {
		if i >= len(generic.outcomes) || generic.outcomes[i] != w {
			t.Errorf("outcome %d: %v, want %q", i, generic.outcomes, w)
			break
		}
	}
	if len(generic.due) == 0 || len(generic.queued) == 0 {
		t.Errorf("nothing queued: %+v", generic)
	}
}

// diffLines is a and b when they differ (the caller prints them).
func diffLines(a, b string) string { return "generic: " + a + "\nfast:    " + b }
