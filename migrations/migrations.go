// Package migrations holds blobgw's versioned SQL schema, one directory per
// database dialect ("postgres", "sqlite"), embedded into the binary.
//
// Files are named NNNN_description.sql; NNNN is the schema version the file
// brings the database to. Versions start at 1 and have no gaps. A file, once
// released, is never edited: a change to the schema is a new file. Both
// dialects describe the same schema and always carry the same versions.
//
// This package only lists the files. It never connects to a database: the
// drivers in leasedb/sqlite and leasedb/postgres apply the files and keep
// the schema_version bookkeeping.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Dialects supported by Files.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// File is one migration.
type File struct {
	// Version is the schema version after the file is applied.
	Version int
	// Name is the file name, for example "0001_init.sql".
	Name string
	// SQL is the file content: one or more statements, run in one
	// transaction together with the version bookkeeping.
	SQL string
}

// Files returns the migrations of dialect ("postgres" or "sqlite") sorted by
// version. It fails on an unknown dialect, a misnamed file, a duplicate
// version or a gap in the sequence.
func Files(dialect string) ([]File, error) {
	switch dialect {
	case Postgres, SQLite:
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q (want %q or %q)", dialect, Postgres, SQLite)
	}
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", dialect, err)
	}
	var out []File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := version(e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %s/%s: %w", dialect, e.Name(), err)
		}
		b, err := fs.ReadFile(files, path.Join(dialect, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s/%s: %w", dialect, e.Name(), err)
		}
		out = append(out, File{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, f := range out {
		if f.Version != i+1 {
			if i > 0 && f.Version == out[i-1].Version {
				return nil, fmt.Errorf("migrations: %s: version %d appears twice (%s, %s)", dialect, f.Version, out[i-1].Name, f.Name)
			}
			return nil, fmt.Errorf("migrations: %s: %s has version %d, want %d (versions start at 1 without gaps)", dialect, f.Name, f.Version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations: %s: no migration files", dialect)
	}
	return out, nil
}

// Latest returns the newest schema version of dialect.
func Latest(dialect string) (int, error) {
	fs, err := Files(dialect)
	if err != nil {
		return 0, err
	}
	return fs[len(fs)-1].Version, nil
}

// version parses the leading digits of a name like "0001_init.sql".
func version(name string) (int, error) {
	digits, _, ok := strings.Cut(name, "_")
	if !ok || digits == "" {
		return 0, fmt.Errorf("name must look like NNNN_description.sql")
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("name must look like NNNN_description.sql")
		}
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("version %q must be a positive number", digits)
	}
	return v, nil
}
