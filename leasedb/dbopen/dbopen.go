// Package dbopen opens the metadata store a DSN names and brings its schema
// up to date: postgres:// and postgresql:// URLs go to the Postgres driver,
// anything else is a SQLite file path (an optional "sqlite:" or "file:"
// prefix is stripped).
//
// This package must never start a store on a schema it does not know: a
// database migrated by a newer blobgw is refused with
// leasedb.ErrSchemaTooNew rather than read or written with the wrong
// assumptions.
package dbopen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/internal/sqlq"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/sqlite"
)

// Driver names returned by Parse.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// migrator is what both drivers provide beyond leasedb.Store.
type migrator interface {
	leasedb.Store
	Migrate(ctx context.Context) (from, to int, err error)
	SchemaVersion(ctx context.Context) (int, error)
}

var (
	_ migrator = (*postgres.Store)(nil)
	_ migrator = (*sqlite.Store)(nil)
)

// Parse says which driver dsn selects and what that driver is given: the
// DSN itself for Postgres, the file path for SQLite. Postgres must be named
// by URL; a key=value connection string would be taken for a file name.
func Parse(dsn string) (driver, target string, err error) {
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return Postgres, dsn, nil
	case strings.HasPrefix(lower, "sqlite:"):
		target = dsn[len("sqlite:"):]
	case strings.HasPrefix(lower, "file:"):
		target = dsn[len("file:"):]
	default:
		target = dsn
	}
	// "sqlite:///var/lib/blobgw/meta.db" and "file:///..." name an
	// absolute path.
	target = strings.TrimPrefix(target, "//")
	if target == "" {
		return "", "", errors.New("dbopen: empty metadata DSN (want postgres://... or a SQLite file path)")
	}
	return SQLite, target, nil
}

func open(ctx context.Context, dsn string) (migrator, error) {
	driver, target, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	if driver == Postgres {
		return postgres.Open(ctx, target)
	}
	return sqlite.Open(ctx, target)
}

// Open opens the store dsn names and migrates it: an empty database gets
// the whole schema, an older one its pending migrations. A database whose
// schema is newer than the newest migration built into this binary is
// refused with an error wrapping leasedb.ErrSchemaTooNew that names both
// versions.
//
// A migration the database did not answer (leasedb.ErrUnavailable: the
// connection was lost, also at COMMIT, or the server restarted) is run
// again for up to migrateRetryFor: a replica starting while Postgres
// restarts or its connection is cut comes up instead of exiting.
// Migrating is idempotent (the drivers read the schema version under the
// migration lock), so a retried migration whose COMMIT did land applies
// nothing twice.
func Open(ctx context.Context, dsn string) (leasedb.Store, error) {
	s, err := open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(migrateRetryFor)
	for attempt := 1; ; attempt++ {
		_, _, err = s.Migrate(ctx)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, leasedb.ErrUnavailable) || time.Now().After(deadline) || ctx.Err() != nil {
			s.Close()
			return nil, fmt.Errorf("dbopen: %w", err)
		}
		if err := sqlq.Sleep(ctx, min(time.Duration(attempt)*100*time.Millisecond, time.Second)); err != nil {
			s.Close()
			return nil, fmt.Errorf("dbopen: %w", err)
		}
	}
}

// migrateRetryFor bounds how long Open retries an unanswered migration.
const migrateRetryFor = 30 * time.Second

// Migrate applies pending migrations to the database dsn names (the
// `blobgw migrate` command) and returns the schema version before and after;
// from == to when there was nothing to do.
func Migrate(ctx context.Context, dsn string) (from, to int, err error) {
	s, err := open(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	from, to, err = s.Migrate(ctx)
	if err != nil {
		return from, to, fmt.Errorf("dbopen: %w", err)
	}
	return from, to, nil
}

// SchemaVersion returns the schema version of the database dsn names
// without changing it (0 for an empty database).
func SchemaVersion(ctx context.Context, dsn string) (int, error) {
	s, err := open(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.SchemaVersion(ctx)
}
