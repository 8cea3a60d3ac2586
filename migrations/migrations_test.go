package migrations

import (
	"regexp"
	"testing"
)

func TestFiles(t *testing.T) {
	var versions [2][]int
	for i, d := range []string{Postgres, SQLite} {
		fs, err := Files(d)
		if err != nil {
			t.Fatalf("Files(%q): %v", d, err)
		}
		for j, f := range fs {
			if f.Version != j+1 {
				t.Errorf("%s: file %d (%s) has version %d", d, j, f.Name, f.Version)
			}
			if f.SQL == "" {
				t.Errorf("%s/%s is empty", d, f.Name)
			}
			versions[i] = append(versions[i], f.Version)
		}
	}
	// Both dialects describe the same schema versions.
	if len(versions[0]) != len(versions[1]) {
		t.Errorf("postgres has %d migrations, sqlite %d; keep them in step", len(versions[0]), len(versions[1]))
	}
	if _, err := Files("mysql"); err == nil {
		t.Errorf("unknown dialect accepted")
	}
}

// Every table and column of one dialect exists in the other.
func TestDialectsDeclareTheSameTables(t *testing.T) {
	tables := inDialects(t, regexp.MustCompile(`(?i)CREATE TABLE (\w+)`), func(_ File, m []string) string { return m[1] })
	for name, in := range tables {
		if name == "etag_seq" { // a SEQUENCE in Postgres, a table in SQLite
			continue
		}
		if !in[0] || !in[1] {
			t.Errorf("table %s: in postgres %v, in sqlite %v", name, in[0], in[1])
		}
	}
}

// Columns added by ALTER TABLE and indexes exist in both dialects, in the
// same versions.
func TestDialectsAlterAndIndexAlike(t *testing.T) {
	re := regexp.MustCompile(`(?i)ALTER TABLE (\w+) ADD COLUMN (\w+)|CREATE (?:UNIQUE )?INDEX (\w+) ON (\w+)`)
	seen := inDialects(t, re, func(f File, m []string) string {
		if m[3] != "" {
			return f.Name + ": index " + m[3] + " on " + m[4]
		}
		return f.Name + ": column " + m[1] + "." + m[2]
	})
	if len(seen) == 0 {
		t.Fatal("no ALTER TABLE or CREATE INDEX found; is the pattern stale?")
	}
	for what, in := range seen {
		if !in[0] || !in[1] {
			t.Errorf("%s: in postgres %v, in sqlite %v", what, in[0], in[1])
		}
	}
}

// inDialects finds re in every migration file of both dialects and says,
// for each name key gives a match, whether Postgres's files ([0]) and
// SQLite's ([1]) have it.
func inDialects(t *testing.T, re *regexp.Regexp, key func(f File, m []string) string) map[string][2]bool {
	t.Helper()
	seen := map[string][2]bool{}
	for i, d := range []string{Postgres, SQLite} {
		fs, err := Files(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			for _, m := range re.FindAllStringSubmatch(f.SQL, -1) {
				v := seen[key(f, m)]
				v[i] = true
				seen[key(f, m)] = v
			}
		}
	}
	return seen
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int
		ok   bool
	}{
		{"0001_init.sql", 1, true},
		{"0012_x.sql", 12, true},
		{"init.sql", 0, false},
		{"_init.sql", 0, false},
		{"00a1_init.sql", 0, false},
		{"0000_init.sql", 0, false},
	} {
		v, err := version(tc.name)
		if (err == nil) != tc.ok || v != tc.v {
			t.Errorf("version(%q) = %d, %v; want %d, ok=%v", tc.name, v, err, tc.v, tc.ok)
		}
	}
}
