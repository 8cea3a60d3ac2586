package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
)

// testFindTagged: the tag index behind Tx.FindTagged follows every write
// of a blob row (insert, overwrite with other or no tags, delete, Delete
// Container), snapshots stay out of it, and FindTagged returns exactly the
// rows with a value in range, in (container, name) order, resumed at a
// cursor, scoped to one container or the account, with all their tags.
func testFindTagged(t *testing.T, s leasedb.Store) {
	for _, c := range []string{"a", "b", "c"} {
		mustInsertContainer(t, s, c)
	}
	put := func(c, name string, tags map[string]string) {
		t.Helper()
		b := &leasedb.Blob{Account: acct, Container: c, Name: name, Type: "BlockBlob", ETag: `"e"`, Tags: tags}
		update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutBlob(ctx, b) })
	}
	// find returns every match, fetched limit at a time, rendered as
	// "container/name{tags}".
	find := func(container string, r leasedb.TagRange, limit int) []string {
		t.Helper()
		var out []string
		ac, an := "", ""
		view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
			for {
				rows, err := tx.FindTagged(ctx, acct, container, r, ac, an, limit)
				if err != nil {
					return err
				}
				if len(rows) > limit {
					return fmt.Errorf("%d rows for limit %d", len(rows), limit)
				}
				for _, b := range rows {
					out = append(out, fmt.Sprintf("%s/%s%v", b.Container, b.Name, b.Tags))
					ac, an = b.Container, b.Name
				}
				if len(rows) < limit {
					return nil
				}
			}
		})
		return out
	}
	eq := func(k, v string) leasedb.TagRange {
		return leasedb.TagRange{Key: k, Lo: v, LoOp: ">=", Hi: v, HiOp: "<="}
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
		}
	}

	put("a", "2", map[string]string{"team": "red", "year": "2024"})
	put("a", "1", map[string]string{"team": "red", "year": "2023"})
	put("a", "3", map[string]string{"team": "blue", "year": "2025"})
	put("a", "4", nil)
	put("b", "1", map[string]string{"team": "red"})
	put("c", "x", map[string]string{"team": "red", "k y": "ünï'cödé"})
	put("b", "0", map[string]string{"teams": "red", "tea": "red"}) // other keys only
	// A snapshot with tags is not indexed.
	snap := &leasedb.Blob{Account: acct, Container: "b", Name: "1", Snapshot: "2024-05-17T10:11:12.0000000Z", Type: "BlockBlob", ETag: `"e"`,
		Tags: map[string]string{"team": "red", "only": "snapshot"}}
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.PutSnapshot(ctx, snap) })

	red := []string{"a/1map[team:red year:2023]", "a/2map[team:red year:2024]", "b/1map[team:red]", "c/xmap[k y:ünï'cödé team:red]"}
	for _, limit := range []int{1, 2, 3, 100} {
		check(fmt.Sprintf("account, team = red, limit %d", limit), find("", eq("team", "red"), limit), red...)
	}
	check("container a", find("a", eq("team", "red"), 1), red[:2]...)
	check("container b", find("b", eq("team", "red"), 5), red[2])
	check("no such value", find("", eq("team", "green"), 5))
	check("snapshot only", find("", eq("only", "snapshot"), 5))
	check("unicode", find("", eq("k y", "ünï'cödé"), 5), red[3])
	check("year > 2023", find("", leasedb.TagRange{Key: "year", Lo: "2023", LoOp: ">"}, 1),
		"a/2map[team:red year:2024]", "a/3map[team:blue year:2025]")
	check("2023 <= year < 2025", find("a", leasedb.TagRange{Key: "year", Lo: "2023", LoOp: ">=", Hi: "2025", HiOp: "<"}, 1),
		"a/1map[team:red year:2023]", "a/2map[team:red year:2024]")
	check("year <= 2024", find("", leasedb.TagRange{Key: "year", Hi: "2024", HiOp: "<="}, 10),
		"a/1map[team:red year:2023]", "a/2map[team:red year:2024]")
	check("any value of team", find("", leasedb.TagRange{Key: "team"}, 2),
		"a/1map[team:red year:2023]", "a/2map[team:red year:2024]", "a/3map[team:blue year:2025]", red[2], red[3])

	// A cursor in another container: before it, all of it; after, none.
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		for _, tc := range []struct {
			ac, an string
			want   int
		}{{"", "", 2}, {"a", "1", 1}, {"a", "2", 0}, {"0", "z", 2}, {"b", "", 0}} {
			rows, err := tx.FindTagged(ctx, acct, "a", eq("team", "red"), tc.ac, tc.an, 10)
			if err != nil {
				return err
			}
			if len(rows) != tc.want {
				t.Errorf("container a after (%q, %q): %d rows, want %d", tc.ac, tc.an, len(rows), tc.want)
			}
		}
		return nil
	})

	// Overwrites move a blob in and out of the index.
	put("a", "1", map[string]string{"team": "blue"})
	put("a", "4", map[string]string{"team": "red"})
	put("a", "2", nil)
	check("after overwrites", find("a", eq("team", "red"), 10), "a/4map[team:red]")
	check("blue after overwrites", find("a", eq("team", "blue"), 10), "a/1map[team:blue]", "a/3map[team:blue year:2025]")
	check("year after overwrites", find("", leasedb.TagRange{Key: "year"}, 10), "a/3map[team:blue year:2025]")

	// A delete, then a Delete Container, take their entries along.
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error { return tx.DeleteBlob(ctx, acct, "a", "4") })
	check("after delete", find("", eq("team", "red"), 10), red[2], red[3])
	update(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		_, err := tx.DeleteContainer(ctx, acct, "b")
		return err
	})
	check("after delete container", find("", eq("team", "red"), 10), red[3])
	check("blue, other container gone", find("", eq("team", "blue"), 10), "a/1map[team:blue]", "a/3map[team:blue year:2025]")

	// A rolled-back write leaves the index as it was.
	ctx := ctxT(t)
	errRollback := fmt.Errorf("roll back")
	err := s.Update(ctx, func(tx leasedb.Tx) error {
		b := &leasedb.Blob{Account: acct, Container: "c", Name: "x", Type: "BlockBlob", ETag: `"e"`, Tags: map[string]string{"team": "green"}}
		if err := tx.PutBlob(ctx, b); err != nil {
			return err
		}
		return errRollback
	})
	if err == nil || !strings.Contains(err.Error(), "roll back") {
		t.Fatalf("Update: %v", err)
	}
	check("after rollback", find("c", eq("team", "red"), 10), red[3])
	check("rolled-back value", find("c", eq("team", "green"), 10))
}

// TagIndexBackfill checks the migration that introduced the tag index: s
// is at the version before it (0008), insert writes a blob row there with
// the given tags column (JSON, "" for NULL) in the driver's own SQL (Tx
// writes the latest version's columns), and finish migrates s to the latest
// version; the rows written before are then found.
func TagIndexBackfill(t *testing.T, s leasedb.Store, insert func(t *testing.T, container, name, tags string), finish func(t *testing.T)) {
	mustInsertContainer(t, s, "old")
	for i, tags := range []string{`{"team":"red"}`, "", `{"team":"red","x":"y"}`, `{"team":"blue"}`} {
		insert(t, "old", fmt.Sprint(i), tags)
	}
	finish(t)
	var got []string
	view(t, s, func(ctx context.Context, tx leasedb.Tx) error {
		rows, err := tx.FindTagged(ctx, acct, "", leasedb.TagRange{Key: "team", Lo: "red", LoOp: ">=", Hi: "red", HiOp: "<="}, "", "", 10)
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s/%s%v", r.Container, r.Name, r.Tags))
		}
		return err
	})
	if want := []string{"old/0map[team:red]", "old/2map[team:red x:y]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after migrating: %q, want %q", got, want)
	}
}
