package sqlq

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/migrations"
)

func TestPlanMigration(t *testing.T) {
	for _, dialect := range []string{migrations.SQLite, migrations.Postgres} {
		latest, err := migrations.Latest(dialect)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			target, want int
			ok           bool
		}{
			{0, latest, true},
			{1, 1, true},
			{latest, latest, true},
			{latest + 1, 0, false},
			{-1, 0, false},
		}
		for _, tc := range tests {
			m, err := PlanMigration("leasedb/test", dialect, tc.target)
			if (err == nil) != tc.ok {
				t.Errorf("%s: PlanMigration(%d) error %v, want ok %v", dialect, tc.target, err, tc.ok)
				continue
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "leasedb/test: migrate: ") {
					t.Errorf("%s: error %q does not name the driver", dialect, err)
				}
				continue
			}
			if m.Target != tc.want || m.Latest != latest {
				t.Errorf("%s: PlanMigration(%d) = target %d, latest %d; want %d, %d", dialect, tc.target, m.Target, m.Latest, tc.want, latest)
			}
		}
	}
	if _, err := PlanMigration("leasedb/test", "mysql", 0); err == nil {
		t.Errorf("PlanMigration of an unknown dialect succeeded")
	}
}

func TestMigrationPending(t *testing.T) {
	m := Migration{Files: []migrations.File{{Version: 1}, {Version: 2}, {Version: 3}, {Version: 4}}, Latest: 4, Target: 3}
	tests := []struct {
		from int
		want []int
	}{
		{0, []int{1, 2, 3}},
		{1, []int{2, 3}},
		{3, nil},
		{4, nil},
		{9, nil},
	}
	for _, tc := range tests {
		var got []int
		for _, f := range m.Pending(tc.from) {
			got = append(got, f.Version)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Pending(%d) = %v, want %v", tc.from, got, tc.want)
		}
	}
}

func TestMigrationTooNew(t *testing.T) {
	m := Migration{Latest: 9}
	tests := []struct {
		from int
		ok   bool
	}{{0, true}, {9, true}, {10, false}}
	for _, tc := range tests {
		err := m.TooNew("leasedb/test: x.db", tc.from)
		if (err == nil) != tc.ok {
			t.Errorf("TooNew(%d) = %v, want ok %v", tc.from, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, leasedb.ErrSchemaTooNew) || !strings.HasPrefix(err.Error(), "leasedb/test: x.db has schema version 10") ||
			!strings.Contains(err.Error(), "version 9")) {
			t.Errorf("TooNew(%d) = %q", tc.from, err)
		}
	}
}
