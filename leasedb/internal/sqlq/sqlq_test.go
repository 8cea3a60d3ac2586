package sqlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/leasedb"
)

func plain(int) string      { return "?" }
func dollar(n int) string   { return "$" + strconv.Itoa(n) }
func numbered(n int) string { return "?" + strconv.Itoa(n) }

func TestNameRange(t *testing.T) {
	tests := []struct {
		name          string
		ph            func(int) string
		first         int
		prefix, after string
		limit         int
		want          string
		wantArgs      []any
	}{
		{"all", plain, 1, "", "", 0, "name > ? ORDER BY name", []any{""}},
		{"after", plain, 1, "", "b", 10, "name > ? ORDER BY name LIMIT ?", []any{"b", 10}},
		{"prefix from start", plain, 1, "ab", "", 5, "name >= ? AND name < ? ORDER BY name LIMIT ?", []any{"ab", "ac", 5}},
		{"prefix past cursor", dollar, 3, "ab", "abc", 5, "name > $3 AND name < $4 ORDER BY name LIMIT $5", []any{"abc", "ac", 5}},
		{"cursor before prefix", dollar, 2, "m", "a", 0, "name >= $2 AND name < $3 ORDER BY name", []any{"m", "n"}},
		{"unbounded prefix", dollar, 2, "\U0010FFFF", "", 0, "name >= $2 ORDER BY name", []any{"\U0010FFFF"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, args := NameRange(tc.ph, tc.first, tc.prefix, tc.after, tc.limit)
			if got != tc.want || !reflect.DeepEqual(args, tc.wantArgs) {
				t.Errorf("NameRange = %q %v; want %q %v", got, args, tc.want, tc.wantArgs)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		ph   func(int) string
		n    int
		want string
	}{
		{plain, 0, ""},
		{plain, 1, "?"},
		{plain, 3, "?, ?, ?"},
		{dollar, 3, "$1, $2, $3"},
		{numbered, 2, "?1, ?2"},
	}
	for _, tc := range tests {
		if got := Placeholders(tc.ph, tc.n); got != tc.want {
			t.Errorf("Placeholders(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// The statements bind exactly the values the codec produces, each
// parameter once.
func TestStatementArity(t *testing.T) {
	vals, err := BlobValues(&leasedb.Blob{}, func(time.Time) any { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cvals, err := ContainerValues(&leasedb.Container{}, func(time.Time) any { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		sql  string
		n    int
	}{
		{"PutBlob", PutBlob(dollar), len(vals)},
		{"PutSnapshot", PutSnapshot(dollar), len(vals) + 1},
		{"InsertContainer", InsertContainer(dollar), len(cvals)},
		{"UpdateContainer", UpdateContainer(dollar), len(cvals)},
	}
	for _, tc := range tests {
		for i := 1; i <= tc.n+1; i++ {
			want := 1
			if i > tc.n {
				want = 0
			}
			// "$1" is also a prefix of "$10": count it followed by a non-digit.
			got := 0
			for _, rest := range strings.Split(tc.sql, "$"+strconv.Itoa(i))[1:] {
				if rest == "" || rest[0] < '0' || rest[0] > '9' {
					got++
				}
			}
			if got != want {
				t.Errorf("%s: $%d appears %d times, want %d", tc.name, i, got, want)
			}
		}
	}
	if n := strings.Count(PutBlob(plain), "?"); n != len(vals) {
		t.Errorf("PutBlob(plain) has %d placeholders, want %d", n, len(vals))
	}
	if got, want := strings.Count(BlobCols, ",")+1, len(vals); got != want {
		t.Errorf("BlobCols has %d columns, BlobValues %d", got, want)
	}
	if got, want := strings.Count(ContainerCols, ",")+1, len(cvals); got != want {
		t.Errorf("ContainerCols has %d columns, ContainerValues %d", got, want)
	}
}

// fakeRows hands stored values to Scan as database/sql does: to a
// sql.Scanner through Scan, else by assignment.
type fakeRows struct {
	rows [][]any
	i    int
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.rows) }
func (r *fakeRows) Err() error { return nil }
func (r *fakeRows) Scan(dest ...any) error {
	row := r.rows[r.i-1]
	if len(dest) != len(row) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(row))
	}
	for i, d := range dest {
		if s, ok := d.(sql.Scanner); ok {
			if err := s.Scan(row[i]); err != nil {
				return err
			}
			continue
		}
		dv := reflect.ValueOf(d).Elem()
		if row[i] == nil {
			dv.Set(reflect.Zero(dv.Type()))
			continue
		}
		v := reflect.ValueOf(row[i])
		if !v.Type().AssignableTo(dv.Type()) {
			return fmt.Errorf("scan column %d: %T into %T", i, row[i], d)
		}
		dv.Set(v)
	}
	return nil
}

// asTime and fromNullTime store times as time.Time values, NULL for the
// zero time (the drivers store microseconds or timestamptz instead).
func asTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func fromNullTime(v sql.NullTime) time.Time { return v.Time }

// What BlobValues and ContainerValues write, the scanners read back, in
// the same column order.
func TestRowRoundTrip(t *testing.T) {
	at := time.Date(2024, 5, 17, 10, 11, 12, 345678000, time.UTC)
	blobs := []*leasedb.Blob{
		{Account: "a", Container: "c", Name: "full", Type: "AppendBlob", ETag: `"0x1"`, Created: at, LastModified: at.Add(time.Second),
			Size: 42, Props: leasedb.Props{ContentType: "text/plain", ContentEncoding: "gzip", ContentLanguage: "en",
				ContentDisposition: "inline", CacheControl: "no-cache", ContentMD5: []byte{1, 2, 3}},
			Metadata: map[string]string{"k": "v"}, Extents: []leasedb.Extent{{Key: "obj/1", Size: 42}}, BlockCount: 3,
			Lease:      leasedb.Lease{ID: "id", State: "breaking", Duration: 30, Expires: at.Add(time.Minute), BreakAt: at.Add(2 * time.Minute), Since: at},
			AccessTier: "Cool", Tags: map[string]string{"team": "red"}, Copy: &leasedb.CopyInfo{ID: "copy", Completed: at}, Sealed: true},
		{Account: "a", Container: "c", Name: "bare", Type: "BlockBlob", ETag: `"0x2"`, Metadata: map[string]string{}},
	}
	var rows [][]any
	for _, b := range blobs {
		vals, err := BlobValues(b, asTime)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, vals)
	}
	got, err := ScanBlobs(&fakeRows{rows: rows}, fromNullTime, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(blobs) {
		t.Fatalf("ScanBlobs read %d rows, want %d", len(got), len(blobs))
	}
	for i := range blobs {
		want := *blobs[i]
		if want.Extents == nil {
			want.Extents = got[i].Extents // an empty list reads back as the decoder makes it
		}
		if !reflect.DeepEqual(got[i], &want) {
			t.Errorf("blob %s:\n got %#v\nwant %#v", blobs[i].Name, got[i], &want)
		}
	}

	c := &leasedb.Container{Account: "a", Name: "c", ETag: `"0x3"`, LastModified: at, Metadata: map[string]string{"m": "1"},
		PublicAccess: "blob", Lease: leasedb.Lease{ID: "id", State: "leased", Duration: -1, Since: at},
		ACL: []leasedb.SignedIdentifier{{ID: "policy"}}}
	vals, err := ContainerValues(c, asTime)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ScanContainers(&fakeRows{rows: [][]any{vals}}, fromNullTime)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || !reflect.DeepEqual(cs[0], c) {
		t.Errorf("container:\n got %#v\nwant %#v", cs, c)
	}
}

func TestScanItems(t *testing.T) {
	row := func(name, snapshot string, kind int) []any {
		vals, err := BlobValues(&leasedb.Blob{Name: name}, asTime)
		if err != nil {
			t.Fatal(err)
		}
		return append(vals, snapshot, kind)
	}
	got, err := ScanItems(&fakeRows{rows: [][]any{
		row("a", "2024-01-01T00:00:00.0000000Z", KindSnapshot),
		row("a", "", KindBlob),
		row("b", "", KindStaged),
		row("p/", "", KindPrefix),
	}}, fromNullTime)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		name, snapshot, prefix string
		uncommitted            bool
	}
	var short []item
	for _, it := range got {
		var i item
		if it.Blob != nil {
			i = item{name: it.Blob.Name, snapshot: it.Blob.Snapshot, uncommitted: it.Uncommitted}
		}
		i.prefix = it.Prefix
		short = append(short, i)
	}
	want := []item{
		{name: "a", snapshot: "2024-01-01T00:00:00.0000000Z"},
		{name: "a"},
		{name: "b", uncommitted: true},
		{prefix: "p/"},
	}
	if !reflect.DeepEqual(short, want) {
		t.Errorf("ScanItems = %+v, want %+v", short, want)
	}
}

// A prefix row's blob columns are placeholders that ScanItems does not
// decode: a page of prefixes costs what its names cost (List Blobs with a
// delimiter), so even columns no blob row could hold are not an error.
func TestScanItemsPrefixNotDecoded(t *testing.T) {
	vals, err := BlobValues(&leasedb.Blob{Name: "p/"}, asTime)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if s, ok := v.(string); ok && (s == "{}" || s == "[]") {
			vals[i] = "not json" // metadata and extents
		}
	}
	got, err := ScanItems(&fakeRows{rows: [][]any{append(vals, "", KindPrefix)}}, fromNullTime)
	if err != nil {
		t.Fatalf("ScanItems of a prefix row: %v", err)
	}
	if len(got) != 1 || got[0].Prefix != "p/" || got[0].Blob != nil {
		t.Errorf("ScanItems = %+v, want one prefix p/", got)
	}
}

func TestCheckText(t *testing.T) {
	tests := []struct {
		in []string
		ok bool
	}{
		{nil, true},
		{[]string{"", "a/b", "ß", "\U0010FFFF"}, true},
		{[]string{"ok", "nul\x00"}, false},
		{[]string{"bad\xff"}, false},
	}
	for _, tc := range tests {
		err := CheckText("leasedb/test", tc.in...)
		if (err == nil) != tc.ok {
			t.Errorf("CheckText(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "leasedb/test: ") {
			t.Errorf("CheckText error %q does not name the driver", err)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 500 * time.Microsecond, time.Millisecond},
		{1, time.Millisecond, 2 * time.Millisecond},
		{3, 4 * time.Millisecond, 8 * time.Millisecond},
		{7, 64 * time.Millisecond, 128 * time.Millisecond},
		{50, 64 * time.Millisecond, 128 * time.Millisecond},
	}
	for _, tc := range tests {
		for range 100 {
			if d := Backoff(tc.attempt); d < tc.min || d > tc.max {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", tc.attempt, d, tc.min, tc.max)
			}
		}
	}
}

func TestCtxErr(t *testing.T) {
	driverErr := errors.New("driver: conn closed")
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		err      error
		canceled bool
	}{
		{"live context keeps the error", live, driverErr, false},
		{"ended context is named", ended, driverErr, true},
		{"already the context's error", ended, context.Canceled, true},
	}
	for _, tc := range tests {
		got := CtxErr(tc.ctx, tc.err)
		if !errors.Is(got, tc.err) || errors.Is(got, context.Canceled) != tc.canceled {
			t.Errorf("%s: CtxErr = %v", tc.name, got)
		}
	}
	if got := CtxErr(ended, context.Canceled); got != context.Canceled {
		t.Errorf("CtxErr wrapped the context's own error: %v", got)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context = %v, want context.Canceled", err)
	}
}
