package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blobgw/blobgw/gateway"
)

// plantTemp creates a file in dir last modified age ago.
func plantTemp(t *testing.T, dir, name string, age time.Duration) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("partial upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// Temporary files a crash left in the disk backend's tmp directory are
// removed by every collection pass once older than TempSweepAge (here
// 15 min: twice the 1 s idle timeout is less); younger ones, which a live
// upload of another process may still be writing, stay.
func TestCollectSweepsTemp(t *testing.T) {
	forKinds(t, []string{"sqlite+disk", "postgres+disk"}, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{options: gateway.Options{BodyIdleTimeout: time.Second}})
		tmp := filepath.Join(b.dataDir, "blobs", "tmp")
		plantTemp(t, tmp, "put-00000000000000aa", 2*time.Hour)
		plantTemp(t, tmp, "put-00000000000000bb", 16*time.Minute)
		plantTemp(t, tmp, "put-00000000000000cc", 14*time.Minute)
		plantTemp(t, tmp, "put-00000000000000dd", 0)
		if _, err := b.gws[0].Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []string{"put-00000000000000cc", "put-00000000000000dd"}
		if got := b.tempFiles(t); !slices.Equal(got, want) {
			t.Fatalf("after a pass: %v, want %v", got, want)
		}
	})
}

func TestTempSweepAge(t *testing.T) {
	for _, tc := range []struct{ idle, want time.Duration }{
		{time.Second, 15 * time.Minute},
		{time.Minute, 15 * time.Minute},
		{10 * time.Minute, 20 * time.Minute},
	} {
		if got := gateway.TempSweepAge(tc.idle); got != tc.want {
			t.Errorf("TempSweepAge(%v) = %v, want %v", tc.idle, got, tc.want)
		}
	}
}
