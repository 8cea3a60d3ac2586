package storetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
)

// testStageBlockPaths runs one sequence of Put Blocks (DB.StageBlock: a
// new block, the same id staged again, ids of another length than the
// staged and than the committed blocks, the staged block limit, lowered
// to 3, the lease rules, a blob of another type, an inline blob, a
// missing container, a lost intent) once through the store as it is (its
// few-statement Put Block where its Tx offers leasedb.BlockStager) and
// once through the generic Tx sequence, each in an account of its own,
// and compares what each left: the outcomes, the staged blocks, the
// collection queue (which keys, which of them due now). Then an intent
// the collector claimed fails the write on each path and leaves the
// claimed entry and no block.
func testStageBlockPaths(t *testing.T, s leasedb.Store) {
	type result struct {
		outcomes []string
		blocks   []string
		queued   []string
		due      []string
	}
	const leaseID = "11111111-2222-3333-4444-555555555555" // fullBlob's
	id := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	run := func(db *leasedb.DB, account string) result {
		ctx := ctxT(t)
		var res result
		k := func(n string) string { return account + "/" + n }
		now := dbNow(t, s)
		insertAccountContainer(t, s, account)
		// The committed rows the blocks are staged beside.
		row := func(name, typ string, lease leasedb.Lease, extents ...leasedb.Extent) {
			b := fullBlob("c", name)
			b.Account, b.Type, b.Lease, b.Extents, b.BlockCount = account, typ, lease, extents, len(extents)
			update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
		}
		leased := fullBlob("", "").Lease
		row("leased", "BlockBlob", leased, leasedb.Extent{Key: k("leased-obj"), Size: 1})
		row("append", "AppendBlob", leasedb.Lease{}, leasedb.Extent{Key: k("append-obj"), Size: 1})
		row("committed", "BlockBlob", leasedb.Lease{}, leasedb.Extent{Key: k("committed-obj"), Size: 3, BlockID: id("abc")},
			leasedb.Extent{Key: k("committed-obj2"), Size: 3, BlockID: id("def")})
		row("plain", "BlockBlob", leasedb.Lease{}, leasedb.Extent{Key: k("plain-obj"), Size: 3})
		row("inline", "BlockBlob", leasedb.Lease{}, leasedb.Extent{Size: 4096, Data: make([]byte, 4096)})
		stage := func(step, container, name, blockID, key string, withIntent bool, lease string) {
			if withIntent {
				update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddIntent(ctx, k(key), now.Add(time.Hour)) })
			}
			err := db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leasedb.BlobRef{Account: account, Container: container, Name: name},
				Block: leasedb.Block{ID: blockID, Key: k(key), Size: int64(len(key))}, LeaseID: lease})
			res.outcomes = append(res.outcomes, stepOutcome(t, account, step, err))
		}
		stage("new", "c", "b", id("aaa"), "b-a1", true, "")
		stage("same id again", "c", "b", id("aaa"), "b-a2", true, "")
		stage("another id", "c", "b", id("bbb"), "b-b", true, "")
		stage("id of another length", "c", "b", id("cccc"), "b-c4", true, "")
		stage("third block", "c", "b", id("ccc"), "b-c", true, "")
		stage("over the limit", "c", "b", id("ddd"), "b-d", true, "")
		stage("same id at the limit", "c", "b", id("aaa"), "b-a3", true, "")
		stage("over the limit, another length", "c", "b", id("dddd"), "b-d4", true, "")
		stage("intent lost", "c", "b2", id("aaa"), "b2-a", false, "")
		stage("missing container", "nocontainer", "b", id("aaa"), "nc", true, "")
		stage("missing container with a lease id", "nocontainer", "b", id("aaa"), "nc2", true, leaseID)
		stage("lease id of an absent blob", "c", "absent", id("aaa"), "absent", true, leaseID)
		stage("leased, no lease id", "c", "leased", id("aaa"), "leased-1", true, "")
		stage("leased, another lease id", "c", "leased", id("aaa"), "leased-2", true, "00000000-2222-3333-4444-555555555555")
		stage("leased, its lease id", "c", "leased", id("aaa"), "leased-3", true, leaseID)
		stage("append blob", "c", "append", id("aaa"), "append-1", true, "")
		stage("append blob, lease id", "c", "append", id("aaa"), "append-2", true, leaseID)
		stage("committed, another length", "c", "committed", id("abcd"), "committed-1", true, "")
		stage("committed, its length", "c", "committed", id("xyz"), "committed-2", true, "")
		stage("plain, any length", "c", "plain", id("abcdefgh"), "plain-1", true, "")
		stage("inline, any length", "c", "inline", id("abcdefgh"), "inline-1", true, "")
		stage("unleased blob, lease id", "c", "plain", id("abcdefgj"), "plain-2", true, leaseID)

		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			for _, name := range []string{"b", "b2", "absent", "leased", "append", "committed", "plain", "inline"} {
				blocks, err := tx.Blocks(ctx, account, "c", name)
				if err != nil {
					return err
				}
				for _, bl := range blocks {
					if bl.StagedAt.Before(now) {
						t.Errorf("%s: block %s staged at %v, before %v", account, bl.ID, bl.StagedAt, now)
					}
					res.blocks = append(res.blocks, fmt.Sprintf("%s %s %s %d", name, bl.ID, strings.TrimPrefix(bl.Key, account+"/"), bl.Size))
				}
			}
			return nil
		})
		res.queued, res.due = accountQueue(t, s, account)
		return res
	}
	fast := run(&leasedb.DB{Store: s, StagedBlockLimit: 3}, "fastpath")
	generic := run(&leasedb.DB{Store: genericOnly{s}, StagedBlockLimit: 3}, "genericpath")
	if !reflect.DeepEqual(fast, generic) {
		t.Errorf("the two paths differ:\n%s", diffLines(fmt.Sprintf("%+v", generic), fmt.Sprintf("%+v", fast)))
	}
	// The sequence means something only if it did what it says.
	want := []string{"new: ok", "same id again: ok", "another id: ok",
		"id of another length: " + string(svcerr.InvalidBlobOrBlock), "third block: ok",
		"over the limit: " + string(svcerr.BlockCountExceedsLimit), "same id at the limit: " + string(svcerr.BlockCountExceedsLimit),
		"over the limit, another length: " + string(svcerr.InvalidBlobOrBlock),
		"intent lost: " + string(svcerr.OperationTimedOut),
		"missing container: " + string(svcerr.ContainerNotFound), "missing container with a lease id: " + string(svcerr.ContainerNotFound),
		"lease id of an absent blob: " + string(svcerr.LeaseNotPresentWithBlobOperation),
		"leased, no lease id: " + string(svcerr.LeaseIdMissing),
		"leased, another lease id: " + string(svcerr.LeaseIdMismatchWithBlobOperation), "leased, its lease id: ok",
		"append blob: " + string(svcerr.InvalidBlobType), "append blob, lease id: " + string(svcerr.InvalidBlobType),
		"committed, another length: " + string(svcerr.InvalidBlobOrBlock), "committed, its length: ok",
		"plain, any length: ok", "inline, any length: ok",
		"unleased blob, lease id: " + string(svcerr.LeaseNotPresentWithBlobOperation)}
	if !slices.Equal(generic.outcomes, want) {
		t.Errorf("generic outcomes:\n%s\nwant:\n%s", strings.Join(generic.outcomes, "\n"), strings.Join(want, "\n"))
	}
	// The block staged again left its first key due at once.
	if !slices.Contains(generic.due, "b-a1") || slices.Contains(generic.due, "b-a2") {
		t.Errorf("due %v, want b-a1 (replaced) and not b-a2 (staged)", generic.due)
	}

	// An intent the collector claimed (its deadline passed) fails the
	// write with nothing written: the claimed entry stays, for the
	// collector to finish, and no block names its key.
	for _, path := range []struct {
		name string
		db   *leasedb.DB
	}{{"store", &leasedb.DB{Store: s}}, {"generic", &leasedb.DB{Store: genericOnly{s}}}} {
		ctx := ctxT(t)
		key := "claimed/" + path.name
		now := dbNow(t, s)
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.AddIntent(ctx, key, now.Add(-time.Second)) })
		claimed, err := s.ClaimDue(ctx, 1000, time.Hour)
		if err != nil || !slices.Contains(claimed, key) {
			t.Fatalf("%s: ClaimDue = %v, %v; want %s among them", path.name, claimed, err, key)
		}
		err = path.db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leasedb.BlobRef{Account: "fastpath", Container: "c", Name: "claimed"},
			Block: leasedb.Block{ID: id("aaa"), Key: key, Size: 1}})
		if e, ok := svcerr.As(err); !ok || e.Code != svcerr.OperationTimedOut {
			t.Errorf("%s: StageBlock with a claimed intent: %v, want %s", path.name, err, svcerr.OperationTimedOut)
		}
		if !slices.Contains(keysOf(t, s), key) {
			t.Errorf("%s: the claimed intent %s left the collection queue", path.name, key)
		}
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			blocks, err := tx.Blocks(ctx, "fastpath", "c", "claimed")
			if err == nil && len(blocks) != 0 {
				t.Errorf("%s: a claimed intent staged %+v", path.name, blocks)
			}
			return err
		})
	}
}

// testStageBlockRaces: Put Blocks racing on one name decide the rules of
// the staged blocks against what the others committed, on every path: of
// blocks with ids of two lengths staged at once, those staged share one
// length and the others are refused; of more blocks than the limit, the
// limit is staged and the rest refused.
func testStageBlockRaces(t *testing.T, s leasedb.Store) {
	mustInsertContainer(t, s, "c")
	for _, path := range []struct {
		name string
		db   *leasedb.DB
	}{{"store", &leasedb.DB{Store: s, StagedBlockLimit: 5}}, {"generic", &leasedb.DB{Store: genericOnly{s}, StagedBlockLimit: 5}}} {
		ctx := ctxT(t)
		now := dbNow(t, s)
		for _, race := range []string{"lengths", "limit"} {
			const n = 12
			name := path.name + "-" + race
			var mu sync.Mutex
			codes := map[string]int{}
			errs := concurrently(n, func(g int) error {
				blockID := fmt.Sprintf("%03d", g)
				if race == "lengths" && g%2 == 1 {
					blockID = fmt.Sprintf("%06d", g)
				}
				key := "race/" + name + "/" + blockID
				if err := s.Update(ctx, func(tx leasedb.Tx) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) }); err != nil {
					return err
				}
				err := path.db.StageBlock(ctx, leasedb.StageBlockRequest{Ref: leasedb.BlobRef{Account: acct, Container: "c", Name: name},
					Block: leasedb.Block{ID: base64.StdEncoding.EncodeToString([]byte(blockID)), Key: key, Size: 1}})
				code := "ok"
				if e, ok := svcerr.As(err); ok {
					code = string(e.Code)
				} else if err != nil {
					return err
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
				return nil
			})
			for _, err := range errs {
				t.Fatalf("%s: %v", name, err)
			}
			blocks := getBlocks(t, s, "c", name)
			lengths := map[int]bool{}
			for _, b := range blocks {
				lengths[len(b.ID)] = true
			}
			if len(lengths) != 1 || codes["ok"] != len(blocks) {
				t.Errorf("%s: %d blocks staged, id lengths %v, outcomes %v", name, len(blocks), lengths, codes)
			}
			switch race {
			case "lengths":
				if codes["ok"]+codes[string(svcerr.InvalidBlobOrBlock)]+codes[string(svcerr.BlockCountExceedsLimit)] != n {
					t.Errorf("%s: outcomes %v", name, codes)
				}
			case "limit":
				if codes["ok"] != 5 || codes[string(svcerr.BlockCountExceedsLimit)] != n-5 {
					t.Errorf("%s: outcomes %v, want 5 staged and %d refused", name, codes, n-5)
				}
			}
		}
	}
}
