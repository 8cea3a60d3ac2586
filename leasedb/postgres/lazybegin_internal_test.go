package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// beginSQL's constants are the BEGIN its general form builds.
func TestBeginSQL(t *testing.T) {
	for _, opts := range []pgx.TxOptions{
		updateOpts,
		{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		{IsoLevel: pgx.Serializable},
	} {
		want := "begin isolation level " + string(opts.IsoLevel)
		if opts.AccessMode != "" {
			want += " " + string(opts.AccessMode)
		}
		if got := beginSQL(opts); got != want {
			t.Errorf("beginSQL(%+v) = %q, want %q", opts, got, want)
		}
	}
}
