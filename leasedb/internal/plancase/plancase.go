// Package plancase is the data model and the cases of the List Blobs
// query-plan tests of both metadata drivers (leasedb/postgres and
// leasedb/sqlite plan_test.go): what the container the tests fill holds,
// which ListEntries calls they make, and what each must return. The fill
// itself is SQL of each driver's dialect; run.go runs a case through a
// Store and keeps the worst cost per family for the tests' logs.
package plancase

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
)

// The container the tests list (Container of Account):
//
//   - blobs d/0000000 … d/0199999 (Names of them) and m/00000 … m/01999
//     (MNames);
//   - two snapshots (Snap1, Snap2) of every d/ name i with i%8 == 0
//     (50,000 rows);
//   - two staged blocks of every d/ name i with i%8 == 2 (a committed blob
//     with staged blocks: listed once, as the blob) and of d/<i>.u for
//     every i with i%8 == 4 (no blob row: listed as uncommitted), 50,000
//     names in all.
//
// Container Other, right after it in every primary key, holds the same
// kind of names; a listing of Container must never read its rows.
const (
	Account   = "acct"
	Container = "c"
	Other     = "c2"
	Names     = 200000
	MNames    = 2000
	Snap1     = "2024-01-01T00:00:01.0000000Z"
	Snap2     = "2024-01-01T00:00:02.0000000Z"
)

// InsertContainers inserts the rows of Container and Other, in SQL both
// dialects accept: the first statement of every fill (filledStore of each
// driver's plan tests runs it).
const InsertContainers = `INSERT INTO containers (account, name, etag) VALUES ('acct', 'c', '"c"'), ('acct', 'c2', '"c2"')`

// FillCounts is the statement that counts what a List Blobs fill wrote:
// the blob, snapshot and block rows of Container (argument 1) and the blob
// rows of Other (argument 2); param(n) is the dialect's numbered
// placeholder. CheckFill judges its answer.
func FillCounts(param func(n int) string) string {
	c, o := param(1), param(2)
	return `SELECT (SELECT count(*) FROM blobs WHERE container = ` + c + `),
		(SELECT count(*) FROM snapshots WHERE container = ` + c + `), (SELECT count(*) FROM blocks WHERE container = ` + c + `),
		(SELECT count(*) FROM blobs WHERE container = ` + o + `)`
}

// CheckFill reports a fill whose FillCounts differ from what the model
// describes (or that left Other empty).
func CheckFill(blobs, snapshots, blocks, other int) error {
	if blobs != Names+MNames || snapshots != Names/4 || blocks != Names/2 || other == 0 {
		return fmt.Errorf("filled %d blobs, %d snapshots, %d blocks, %d blobs in the other container", blobs, snapshots, blocks, other)
	}
	return nil
}

// Entry is one ListEntries item of the model of Container.
type Entry struct {
	Name, Snapshot string
	Kind           int // sqlq.KindSnapshot, KindBlob, KindStaged
}

// Model returns every entry of Container, in listing order.
func Model() []Entry {
	out := make([]Entry, 0, Names+Names/4+Names/8+MNames)
	for i := 0; i < Names; i++ {
		name := fmt.Sprintf("d/%07d", i)
		if i%8 == 0 {
			out = append(out, Entry{name, Snap1, sqlq.KindSnapshot}, Entry{name, Snap2, sqlq.KindSnapshot})
		}
		out = append(out, Entry{name, "", sqlq.KindBlob})
		if i%8 == 4 {
			// "d/0000004" < "d/0000004.u" < "d/0000005"
			out = append(out, Entry{name + ".u", "", sqlq.KindStaged})
		}
	}
	for i := 0; i < MNames; i++ {
		out = append(out, Entry{fmt.Sprintf("m/%05d", i), "", sqlq.KindBlob})
	}
	return out
}

// Case is one ListEntries call.
type Case struct {
	Name                         string
	Prefix, After, AfterSnapshot string
	Limit                        int
	Inc                          leasedb.ListInclude
}

// Want returns what ListEntries must return for c according to model.
func (c Case) Want(model []Entry) []Entry {
	// No entry of a name before the cursor or the prefix qualifies.
	start := sort.Search(len(model), func(i int) bool { return model[i].Name >= max(c.After, c.Prefix) })
	var out []Entry
	for _, e := range model[start:] {
		if len(out) == c.Limit || !strings.HasPrefix(e.Name, c.Prefix) {
			break // names under the prefix are contiguous
		}
		if (e.Kind == sqlq.KindSnapshot && !c.Inc.Snapshots) || (e.Kind == sqlq.KindStaged && !c.Inc.Uncommitted) {
			continue
		}
		past := e.Name > c.After ||
			e.Name == c.After && c.AfterSnapshot != "" && (e.Kind != sqlq.KindSnapshot || e.Snapshot > c.AfterSnapshot)
		if past {
			out = append(out, e)
		}
	}
	return out
}

// includes are the include= combinations every listing case runs with.
var includes = []struct {
	label string
	inc   leasedb.ListInclude
}{
	{"none", leasedb.ListInclude{}},
	{"snapshots", leasedb.ListInclude{Snapshots: true}},
	{"uncommitted", leasedb.ListInclude{Uncommitted: true}},
	{"both", leasedb.ListInclude{Snapshots: true, Uncommitted: true}},
}

// Cases is every combination of includes, prefixes, cursors and page
// sizes (1, 10 and 5000, the largest maxresults).
func Cases() []Case {
	prefixes := []struct {
		label, prefix string
		mid, before   string // a cursor inside the prefix (a name with snapshots), one before it
	}{
		{"noprefix", "", "d/0100000", "c/"},
		{"prefix", "d/01", "d/0150000", "d/0099999"},   // 100,000 names: every page is full
		{"small", "d/00123", "d/0012352", "d/0012299"}, // 100 names: pages of 5000 end at the prefix
		{"empty", "d/00123x", "d/00123x5", "d/00123"},  // between existing names, matches nothing
	}
	var out []Case
	for _, in := range includes {
		for _, p := range prefixes {
			cursors := []struct{ label, after, snap string }{
				{"start", "", ""},
				{"mid", p.mid, ""},
				{"midsnap", p.mid, Snap1},
				{"before", p.before, ""},
			}
			for _, cur := range cursors {
				for _, limit := range []int{1, 10, 5000} {
					out = append(out, Case{
						Name:   fmt.Sprintf("%s/%s/%s/%d", in.label, p.label, cur.label, limit),
						Prefix: p.prefix, After: cur.after, AfterSnapshot: cur.snap,
						Limit: limit, Inc: in.inc,
					})
				}
			}
		}
	}
	return out
}

// SameEntries reports how got differs from want.
func SameEntries(got []leasedb.ListItem, want []Entry) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d items, want %d", len(got), len(want))
	}
	for i, it := range got {
		w := want[i]
		kind := sqlq.KindBlob
		switch {
		case it.Uncommitted:
			kind = sqlq.KindStaged
		case it.Blob.Snapshot != "":
			kind = sqlq.KindSnapshot
		}
		if it.Blob.Name != w.Name || it.Blob.Snapshot != w.Snapshot || kind != w.Kind {
			return fmt.Errorf("item %d is %q snapshot %q kind %d, want %q snapshot %q kind %d",
				i, it.Blob.Name, it.Blob.Snapshot, kind, w.Name, w.Snapshot, w.Kind)
		}
	}
	return nil
}

// FindNames is how many blobs TestFindTaggedPlan puts in each of
// Container and Other: d/0000000 …, tagged n (the number, unique), group
// (number % 100) and, on every 10,000th, rare = yes.
const FindNames = 100000

// FindIndexRows is how many blob_tags rows that data makes.
const FindIndexRows = 2 * (2*FindNames + FindNames/10000)

// FindName is the name of blob i.
func FindName(i int) string { return fmt.Sprintf("d/%07d", i) }

// FindCase is one Tx.FindTagged call of the Find plan tests.
type FindCase struct {
	What      string
	Container string
	R         leasedb.TagRange
	Keep      func(i int) bool // the numbers whose blobs match R
	AC, AN    string           // the cursor
	Limit     int
	// Matches is how many index entries R holds from the cursor on (what
	// a range must read and sort).
	Matches int
}

// FindMatch is one FindTagged result: container and name.
type FindMatch struct{ C, Name string }

// Want lists the matches of c: numbers i (in both containers, Container
// first, unless c names one) past the cursor, at most Limit.
func (c FindCase) Want() []FindMatch {
	var out []FindMatch
	for _, cont := range []string{Container, Other} {
		if c.Container != "" && cont != c.Container {
			continue
		}
		for i := 0; i < FindNames && len(out) < c.Limit; i++ {
			if c.Keep(i) && (cont > c.AC || cont == c.AC && FindName(i) > c.AN) {
				out = append(out, FindMatch{cont, FindName(i)})
			}
		}
	}
	return out
}

// FindCases: equalities on a rare and a common value, across the account
// and in one container, from the start and from cursors in either
// container, and ranges.
func FindCases() []FindCase {
	eq := func(k, v string) leasedb.TagRange {
		return leasedb.TagRange{Key: k, Lo: v, LoOp: ">=", Hi: v, HiOp: "<="}
	}
	rare := func(i int) bool { return i%10000 == 0 }
	group7 := func(i int) bool { return i%100 == 7 }
	return []FindCase{
		{"rare, account", "", eq("rare", "yes"), rare, "", "", 10, 10},
		{"rare, c", Container, eq("rare", "yes"), rare, "", "", 1000, 10},
		{"group 7, c, first page", Container, eq("group", "7"), group7, "", "", 10, 10},
		{"group 7, c, mid cursor", Container, eq("group", "7"), group7, Container, FindName(50007), 10, 10},
		{"group 7, account, cursor in c", "", eq("group", "7"), group7, Container, FindName(90007), 1000, 1000},
		{"group 7, account, cursor in c2", "", eq("group", "7"), group7, Other, FindName(30007), 10, 10},
		{"n > 0099990, c", Container, leasedb.TagRange{Key: "n", Lo: "0099990", LoOp: ">"}, func(i int) bool { return i > 99990 }, "", "", 5, 9},
		{"0050000 <= n < 0050020, account", "", leasedb.TagRange{Key: "n", Lo: "0050000", LoOp: ">=", Hi: "0050020", HiOp: "<"},
			func(i int) bool { return i >= 50000 && i < 50020 }, Container, FindName(50009), 100, 30},
	}
}

// DelimCase is one ListDelimited call.
type DelimCase struct {
	Name                     string
	Prefix, Delimiter, After string
	Limit                    int
	Inc                      leasedb.ListInclude
}

// DelimEntry is one ListDelimited item of the model: an Entry, or a
// BlobPrefix (Prefix set).
type DelimEntry struct {
	Entry
	Prefix string
}

// Want returns what ListDelimited must return for c according to model:
// the entries under the prefix strictly after c.After, those whose name
// holds the delimiter after the prefix rolled up into one prefix each.
func (c DelimCase) Want(model []Entry) []DelimEntry {
	start := sort.Search(len(model), func(i int) bool {
		return model[i].Name > c.After && model[i].Name >= c.Prefix
	})
	var out []DelimEntry
	for _, e := range model[start:] {
		if len(out) == c.Limit || !strings.HasPrefix(e.Name, c.Prefix) {
			break
		}
		if (e.Kind == sqlq.KindSnapshot && !c.Inc.Snapshots) || (e.Kind == sqlq.KindStaged && !c.Inc.Uncommitted) {
			continue
		}
		if i := strings.Index(e.Name[len(c.Prefix):], c.Delimiter); i >= 0 {
			p := e.Name[:len(c.Prefix)+i+len(c.Delimiter)]
			if len(out) == 0 || out[len(out)-1].Prefix != p {
				out = append(out, DelimEntry{Prefix: p})
			}
			continue
		}
		out = append(out, DelimEntry{Entry: e})
	}
	return out
}

// DelimCases: prefixes that each hide 100,000 names or more ("/" from
// the start), many small prefixes between plain names ("0" under d/01:
// d/010 holds 10,000 names, d/01110 ten), a delimiter of two characters,
// staged names that roll up only when listed (".": d/0000004.u), a
// delimiter no name holds (every entry plain), each from the start, from
// a cursor right after a prefix or in the middle of one, at limits 1 and
// 5000.
func DelimCases() []DelimCase {
	shapes := []struct {
		label, prefix, delim string
		cursors              []string // besides the start
	}{
		{"slash", "", "/", []string{"d/\U0010FFFF"}},
		{"zero", "d/01", "0", []string{"d/0150000"}},
		{"twozeros", "d/0", "00", []string{"d/0100\U0010FFFF"}},
		{"dot", "d/000", ".", []string{"d/0000004.\U0010FFFF"}},
		{"absent", "d/01", "|", nil},
	}
	var out []DelimCase
	for _, in := range includes {
		for _, sh := range shapes {
			for i, after := range append([]string{""}, sh.cursors...) {
				for _, limit := range []int{1, 5000} {
					out = append(out, DelimCase{
						Name:   fmt.Sprintf("%s/%s/cursor%d/%d", in.label, sh.label, i, limit),
						Prefix: sh.prefix, Delimiter: sh.delim, After: after, Limit: limit, Inc: in.inc,
					})
				}
			}
		}
	}
	return out
}

// SameDelimEntries reports how got differs from want.
func SameDelimEntries(got []leasedb.ListItem, want []DelimEntry) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d items, want %d", len(got), len(want))
	}
	for i, it := range got {
		w := want[i]
		if w.Prefix != "" || it.Prefix != "" {
			if it.Prefix != w.Prefix {
				return fmt.Errorf("item %d is prefix %q (blob %v), want prefix %q (%+v)", i, it.Prefix, it.Blob != nil, w.Prefix, w.Entry)
			}
			continue
		}
		if err := SameEntries(got[i:i+1], []Entry{w.Entry}); err != nil {
			return fmt.Errorf("item %d: %v", i, err)
		}
	}
	return nil
}

// PageCase is one List Blobs page with a delimiter through
// DB.ListBlobsInclude.
type PageCase struct {
	Prefix, Delimiter, Marker string
	Max                       int
	Inc                       leasedb.ListInclude
}

// PageCases are pages whose prefixes hide many names: the re-query of
// max+1 rows after each prefix read millions of rows for them.
func PageCases() []PageCase {
	both := leasedb.ListInclude{Snapshots: true, Uncommitted: true}
	return []PageCase{
		{"", "/", "", 5000, leasedb.ListInclude{}},
		{"", "/", "", 1000, both},
		{"d/01", "0", "", 5000, leasedb.ListInclude{}},
		{"d/01", "0", leasedb.EncodeMarker("d/0150000"), 1000, both},
		{"d/0", "00", "", 5000, leasedb.ListInclude{Uncommitted: true}},
	}
}

// CountingStore counts the rows its transactions' listing calls
// (ListBlobs, ListEntries, ListDelimited) return: what a List Blobs page
// made the database find and the driver decode.
type CountingStore struct {
	leasedb.Store
	Rows int
}

// View implements leasedb.Store.
func (s *CountingStore) View(ctx context.Context, fn func(leasedb.Tx) error) error {
	return s.Store.View(ctx, func(tx leasedb.Tx) error { return fn(countingTx{tx, s}) })
}

type countingTx struct {
	leasedb.Tx
	s *CountingStore
}

func (t countingTx) ListBlobs(ctx context.Context, account, container, prefix, after string, limit int) ([]*leasedb.Blob, error) {
	out, err := t.Tx.ListBlobs(ctx, account, container, prefix, after, limit)
	t.s.Rows += len(out)
	return out, err
}

func (t countingTx) ListEntries(ctx context.Context, account, container, prefix, after, afterSnapshot string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	out, err := t.Tx.ListEntries(ctx, account, container, prefix, after, afterSnapshot, limit, inc)
	t.s.Rows += len(out)
	return out, err
}

func (t countingTx) ListDelimited(ctx context.Context, account, container, prefix, delimiter, after string, limit int, inc leasedb.ListInclude) ([]leasedb.ListItem, error) {
	out, err := t.Tx.ListDelimited(ctx, account, container, prefix, delimiter, after, limit, inc)
	t.s.Rows += len(out)
	return out, err
}

// CheckPages runs PageCases against s: each page must be what the model
// says, and its listing calls must return at most max+1 rows (the page
// and one to know that another follows) plus one batch of a name's
// snapshots.
func CheckPages(ctx context.Context, s leasedb.Store, model []Entry) []error {
	var errs []error
	for _, pc := range PageCases() {
		cs := &CountingStore{Store: s}
		db := &leasedb.DB{Store: cs}
		res, err := db.ListBlobsInclude(ctx, Account, Container, pc.Prefix, pc.Delimiter, pc.Marker, pc.Max, pc.Inc)
		if err != nil {
			errs = append(errs, fmt.Errorf("page %+v: %v", pc, err))
			continue
		}
		after, _ := leasedb.DecodeMarker(pc.Marker)
		want := DelimCase{Prefix: pc.Prefix, Delimiter: pc.Delimiter, After: after, Limit: pc.Max, Inc: pc.Inc}.Want(model)
		if err := SameDelimEntries(res.Items, want); err != nil {
			errs = append(errs, fmt.Errorf("page %+v: %v", pc, err))
		}
		if bound := pc.Max + 1 + 64; cs.Rows > bound {
			errs = append(errs, fmt.Errorf("page %+v: the listing calls returned %d rows for %d items, want at most %d", pc, cs.Rows, len(res.Items), bound))
		}
	}
	return errs
}
