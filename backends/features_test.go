package backends_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/backends"
)

// plain implements only backends.Backend.
type plain struct{}

func (plain) Put(context.Context, string, io.Reader, int64) error { return nil }
func (plain) Open(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, backends.ErrNotFound
}
func (plain) Delete(context.Context, string) error { return nil }
func (plain) Stat(context.Context, string) (backends.ObjectInfo, error) {
	return backends.ObjectInfo{}, backends.ErrNotFound
}
func (plain) List(context.Context, string, func(backends.ObjectInfo) error) error { return nil }

type batch struct{ plain }

func (batch) DeleteMany(context.Context, []string) error { return nil }

type adopting struct{ batch }

func (adopting) IsAdopted(string) bool { return true }

type sweeping struct{ plain }

func (sweeping) SweepTemp(context.Context, time.Duration) (int, error) { return 0, nil }

type all struct{ adopting }

func (all) SweepTemp(context.Context, time.Duration) (int, error) { return 0, nil }

func TestFeaturesOf(t *testing.T) {
	tests := []struct {
		name string
		b    backends.Backend
		want []string
	}{
		{"none", plain{}, nil},
		{"batch delete", batch{}, []string{"BatchDelete"}},
		{"s3-like", adopting{}, []string{"BatchDelete", "AdoptedKeys"}},
		{"disk-like", sweeping{}, []string{"TempSweep"}},
		{"all", all{}, []string{"BatchDelete", "AdoptedKeys", "TempSweep"}},
	}
	for _, tc := range tests {
		f := backends.FeaturesOf(tc.b)
		if got := f.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: FeaturesOf(...).Names() = %q, want %q", tc.name, got, tc.want)
		}
		has := []bool{f.BatchDeleter != nil, f.AdoptedKeys != nil, f.TempSweeper != nil}
		for i, name := range []string{"BatchDelete", "AdoptedKeys", "TempSweep"} {
			if has[i] != slices.Contains(tc.want, name) {
				t.Errorf("%s: field for %s set = %v", tc.name, name, has[i])
			}
		}
	}
}
