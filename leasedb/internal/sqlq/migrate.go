package sqlq

import (
	"fmt"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/migrations"
)

// Migration is what a driver's MigrateTo decides before it touches the
// database: the embedded migrations of its dialect, the newest version
// they reach and the version to stop at. Running them, and the lock that
// serializes migrators, stay in the driver.
type Migration struct {
	Files  []migrations.File
	Latest int
	Target int
}

// PlanMigration reads dialect's migrations for a MigrateTo(target) of
// driver ("leasedb/sqlite"): target 0 is the newest, a target past the
// newest (or negative) is an error.
func PlanMigration(driver, dialect string, target int) (Migration, error) {
	files, err := migrations.Files(dialect)
	if err != nil {
		return Migration{}, fmt.Errorf("%s: migrate: %w", driver, err)
	}
	latest := files[len(files)-1].Version
	if target < 0 || target > latest {
		return Migration{}, fmt.Errorf("%s: migrate: no schema version %d (this blobgw knows up to %d)", driver, target, latest)
	}
	if target == 0 {
		target = latest
	}
	return Migration{Files: files, Latest: latest, Target: target}, nil
}

// TooNew refuses a database at schema version from when a newer blobgw
// migrated it past Latest (an error wrapping leasedb.ErrSchemaTooNew that
// names both versions); db names the database in the error.
func (m Migration) TooNew(db string, from int) error {
	if from <= m.Latest {
		return nil
	}
	return fmt.Errorf("%s has schema version %d, this blobgw knows up to version %d; upgrade blobgw: %w",
		db, from, m.Latest, leasedb.ErrSchemaTooNew)
}

// Pending returns the migrations that bring a database at schema version
// from to Target, in order; none when it is already there or past it
// (there are no down migrations).
func (m Migration) Pending(from int) []migrations.File {
	var out []migrations.File
	for _, f := range m.Files {
		if f.Version > from && f.Version <= m.Target {
			out = append(out, f)
		}
	}
	return out
}
