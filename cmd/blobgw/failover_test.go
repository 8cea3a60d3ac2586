package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// TestPostgresFailover runs two `blobgw serve` processes on the multi-host
// DSN of a Postgres primary with a synchronous standby (and one MinIO
// bucket), writes distinct blobs from both while the primary is SIGKILLed
// and the standby promoted, and checks that
//
//   - while no writable Postgres is reachable, writes are answered 503
//     ServerBusy, never another status and never a 2xx;
//   - the gateways write again after the promotion without a restart,
//     within 30 s;
//   - every write acknowledged before, during and after the switch reads
//     back with its bytes, and the lease acquired before it is still held
//     (a write without its id is 412 LeaseIdMissing, one with it works).
func TestPostgresFailover(t *testing.T) {
	pair := pgtest.StartPair(t)
	dsn := pair.NewDatabase(t)
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	cfg := miniotest.NewBucket(t)
	cfg.Prefix = "gw/"
	clients := startServes(t, bin, dir, 2, append(s3ServeArgs(cfg), "--metadata", dsn)...)
	ctx := context.Background()
	const cont = "failover"
	if _, err := clients[0].CreateContainer(ctx, cont, nil); err != nil {
		t.Fatal(err)
	}
	bc := func(i int, name string) *blockblob.Client {
		return clients[i%2].ServiceClient().NewContainerClient(cont).NewBlockBlobClient(name)
	}
	// put bounds every request: a gateway that hangs on a dead database
	// fails the test instead of stalling it.
	put := func(i int, name string, data []byte, leaseID *string) error {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var opts *blockblob.UploadBufferOptions
		if leaseID != nil {
			opts = &blockblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{
				LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: leaseID}}}
		}
		_, err := bc(i, name).UploadBuffer(rctx, data, opts)
		return err
	}
	busy := func(err error) bool {
		var re *azcore.ResponseError
		return errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable && bloberror.HasCode(err, bloberror.ServerBusy)
	}

	// An infinite lease, acquired (and acknowledged) before the failover.
	const leased = "leased"
	leaseID := "00000000-0000-4000-8000-000000000001"
	if err := put(0, leased, []byte("before"), nil); err != nil {
		t.Fatal(err)
	}
	lc, err := lease.NewBlobClient(bc(1, leased), &lease.BlobClientOptions{LeaseID: to.Ptr(leaseID)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}

	// Writers on both gateways, each blob written once with its own bytes.
	var (
		mu    sync.Mutex
		acked = map[string][]byte{}
		phase atomic.Int32 // 0 before the kill, 1 during, 2 after the promotion
		count [3]atomic.Int32
		busyN atomic.Int32
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d/%05d", w, n)
				data := bytes.Repeat([]byte(fmt.Sprintf("writer %d op %d;", w, n)), 1+n%50)
				p := phase.Load()
				err := put(w, name, data, nil)
				switch {
				case err == nil:
					mu.Lock()
					acked[name] = data
					mu.Unlock()
					count[p].Add(1)
				case busy(err):
					busyN.Add(1)
				default:
					t.Errorf("writer %d, %s (phase %d): want success or 503 ServerBusy, got %v", w, name, p, err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	stopWriters := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()

	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(15 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("writes before the failover", func() bool { return count[0].Load() >= 20 })

	phase.Store(1)
	if err := pair.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	// No writable Postgres now (the standby is read-only): every gateway
	// refuses writes, the leaseholder's too, with 503.
	for i := range 2 {
		if err := put(i, fmt.Sprintf("during/%d", i), []byte("lost"), nil); !busy(err) {
			t.Fatalf("gateway %d, Put Blob with the primary dead: want 503 ServerBusy, got %v", i, err)
		}
		if err := put(i, leased, []byte("lost"), &leaseID); !busy(err) {
			t.Fatalf("gateway %d, leaseholder's Put Blob with the primary dead: want 503 ServerBusy, got %v", i, err)
		}
	}
	if err := pair.Promote(); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	// Each gateway reconnects by itself: it writes again within 30 s.
	for i := range 2 {
		start := time.Now()
		for {
			err := put(i, fmt.Sprintf("after/%d", i), []byte("after "+strconv.Itoa(i)), nil)
			if err == nil {
				mu.Lock()
				acked[fmt.Sprintf("after/%d", i)] = []byte("after " + strconv.Itoa(i))
				mu.Unlock()
				t.Logf("gateway %d writes again %v after the promotion", i, time.Since(start).Round(time.Millisecond))
				break
			}
			if !busy(err) {
				t.Fatalf("gateway %d, Put Blob after the promotion: want success or 503 ServerBusy, got %v", i, err)
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("gateway %d still refuses writes 30 s after the promotion: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("writes after the promotion", func() bool { return count[2].Load() >= 20 })
	stopWriters()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("acknowledged writes: %d before the kill, %d during the switch, %d after; %d answered 503",
		count[0].Load(), count[1].Load(), count[2].Load(), busyN.Load())

	// Every acknowledged write is there, with its bytes, on both gateways;
	// the blobs written while the primary was dead are not.
	mu.Lock()
	defer mu.Unlock()
	for name, want := range acked {
		for i := range 2 {
			if got := download(t, bc(i, name).BlobClient()); !bytes.Equal(got, want) {
				t.Fatalf("gateway %d, %s: %d bytes %.40q, want the acknowledged %d bytes %.40q", i, name, len(got), got, len(want), want)
			}
		}
	}
	for i := range 2 {
		if _, err := bc(i, fmt.Sprintf("during/%d", i)).GetProperties(ctx, nil); !bloberror.HasCode(err, bloberror.BlobNotFound) {
			t.Fatalf("during/%d, refused with 503, exists after the failover: %v", i, err)
		}
	}
	// The lease survived: held, writes without its id refused, with it
	// taken.
	for i := range 2 {
		props, err := bc(i, leased).GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.LeaseState == nil || *props.LeaseState != lease.StateTypeLeased {
			t.Fatalf("gateway %d: lease state %v after the failover, want leased", i, props.LeaseState)
		}
		if err := put(i, leased, []byte("no lease"), nil); !bloberror.HasCode(err, bloberror.LeaseIDMissing) {
			t.Fatalf("gateway %d, write without the lease id after the failover: want 412 LeaseIdMissing, got %v", i, err)
		}
		if err := put(i, leased, []byte("holder "+strconv.Itoa(i)), &leaseID); err != nil {
			t.Fatalf("gateway %d, leaseholder's write after the failover: %v", i, err)
		}
	}
	if got := download(t, bc(0, leased).BlobClient()); string(got) != "holder 1" {
		t.Fatalf("leased blob holds %q, want the holder's last write", got)
	}
}
