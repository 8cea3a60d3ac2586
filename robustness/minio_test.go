package robustness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/testproc"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

const dmContainer = "dist"

// dmPhase is when a request ran: before the kill, while the node is down
// (until its restart is ready), after the restart, or across the kill or
// the restart (dmSwitch).
type dmPhase int

const (
	dmBefore dmPhase = iota
	dmDown
	dmAfter
	dmSwitch
	dmPhases
)

func (p dmPhase) String() string { return [...]string{"before", "down", "after", "switch"}[p] }

// dmCounts are the outcomes of one kind of request in one phase.
type dmCounts struct{ ok, busy, other atomic.Int64 }

// dmBody is blob content derived from its name, so that neither the writer
// nor the check holds it.
func dmBody(seed int64, size int) []byte {
	b := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// TestDistributedMinIO runs two gateways on Postgres and a four-node
// distributed MinIO behind a round-robin proxy, writes (Put Blob, and Put
// Block + Put Block List) and reads while one MinIO node is SIGKILLed and
// later restarted, and then reads every acknowledged write back,
// hash-checked. A 503 during the switch is allowed and counted; a 2xx
// whose blob later reads back wrong or not at all is not.
func TestDistributedMinIO(t *testing.T) {
	if testing.Short() {
		t.Skip("robustness run: skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "blobgw")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/blobgw").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cluster := miniotest.Distributed(t, 4)
	pg := pgtest.PrivateServer(t)
	dsn := pg.NewDatabase(t)
	s3cfg := cluster.NewBucket(t)
	common := []string{"--metadata", dsn, "--backend", "s3", "--s3-endpoint", s3cfg.Endpoint, "--s3-bucket", s3cfg.Bucket,
		"--s3-region", s3cfg.Region, "--s3-access-key", s3cfg.AccessKey, "--s3-secret-key", s3cfg.SecretKey,
		"--s3-path-style", "--s3-prefix", "gw/"}

	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	var clients []*azblob.Client
	for i := range 2 {
		port, err := testproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		rdir := filepath.Join(dir, "gw"+strconv.Itoa(i))
		os.MkdirAll(rdir, 0o755)
		r := &replica{t: t, bin: bin, addr: "127.0.0.1:" + strconv.Itoa(port), dir: rdir, args: common}
		if err := r.start(); err != nil {
			t.Fatalf("gateway %d: %v", i, err)
		}
		t.Cleanup(func() {
			r.stop()
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(r.dir, "serve.1.log"))
				t.Logf("gateway %d log tail:\n%s", i, testproc.Tail(b))
			}
		})
		// No SDK retries: every 503 is seen and counted.
		c, err := azblob.NewClientWithSharedKeyCredential("http://"+r.addr+"/"+config.DevAccountName+"/", cred,
			&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	ctx := context.Background()
	if _, err := clients[0].CreateContainer(ctx, dmContainer, nil); err != nil {
		t.Fatal(err)
	}

	var phase atomic.Int32
	var writes, reads [dmPhases]dmCounts
	var mu sync.Mutex
	acked := map[string][32]byte{} // blob -> SHA-256 of what a 2xx stored
	var ackedNames []string
	var bad []string // a 2xx read of an acknowledged blob with other bytes
	// count files an outcome under the phase the request ran in: the
	// phase at its start, or dmSwitch if that changed meanwhile.
	count := func(c *[dmPhases]dmCounts, p dmPhase, err error) {
		if dmPhase(phase.Load()) != p {
			p = dmSwitch
		}
		var re *azcore.ResponseError
		switch {
		case err == nil:
			c[p].ok.Add(1)
		case errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable:
			c[p].busy.Add(1)
		default:
			c[p].other.Add(1)
			t.Logf("%s: %v", p, err)
		}
	}
	opCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				p := dmPhase(phase.Load())
				name := fmt.Sprintf("w%d/%05d", w, seq)
				seed := int64(w)<<32 | int64(seq)
				size := 100<<10 + rng.Intn(300<<10)
				body := dmBody(seed, size)
				bc := clients[(w+seq)%2].ServiceClient().NewContainerClient(dmContainer).NewBlockBlobClient(name)
				octx, cancel := opCtx()
				var err error
				if seq%2 == 0 {
					_, err = bc.Upload(octx, streaming.NopCloser(bytes.NewReader(body)), nil)
				} else {
					// Three staged blocks and a Put Block List.
					var ids []string
					for k, part := range [][]byte{body[:size/3], body[size/3 : 2*size/3], body[2*size/3:]} {
						id := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("block-%03d", k)))
						ids = append(ids, id)
						if _, err = bc.StageBlock(octx, id, streaming.NopCloser(bytes.NewReader(part)), nil); err != nil {
							break
						}
					}
					if err == nil {
						_, err = bc.CommitBlockList(octx, ids, nil)
					}
				}
				cancel()
				count(&writes, p, err)
				if err == nil {
					mu.Lock()
					acked[name] = sha256.Sum256(body)
					ackedNames = append(ackedNames, name)
					mu.Unlock()
				}
			}
		}()
	}
	readOne := func(c *azblob.Client, name string) ([32]byte, error) {
		octx, cancel := opCtx()
		defer cancel()
		resp, err := c.ServiceClient().NewContainerClient(dmContainer).NewBlobClient(name).DownloadStream(octx, nil)
		if err != nil {
			return [32]byte{}, err
		}
		defer resp.Body.Close()
		h := sha256.New()
		if _, err := io.Copy(h, resp.Body); err != nil {
			return [32]byte{}, err
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		return sum, nil
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				if len(ackedNames) == 0 {
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				name := ackedNames[rng.Intn(len(ackedNames))]
				want := acked[name]
				mu.Unlock()
				p := dmPhase(phase.Load())
				sum, err := readOne(clients[r], name)
				count(&reads, p, err)
				if err == nil && sum != want {
					mu.Lock()
					bad = append(bad, name)
					mu.Unlock()
				}
			}
		}()
	}

	const victim = 1
	time.Sleep(5 * time.Second)
	servedBefore := cluster.Served()
	phase.Store(int32(dmDown))
	cluster.Kill(victim)
	time.Sleep(8 * time.Second)
	t0 := time.Now()
	restartErr := cluster.Restart(victim)
	t.Logf("node %d restarted in %v", victim, time.Since(t0).Round(time.Millisecond))
	servedRestart := cluster.Served()[victim]
	phase.Store(int32(dmAfter))
	if restartErr == nil {
		time.Sleep(4 * time.Second)
	}
	close(stop)
	wg.Wait()
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	served := cluster.Served()

	for p := range dmPhases {
		t.Logf("%s: writes %d ok, %d 503, %d other; reads %d ok, %d 503, %d other", p,
			writes[p].ok.Load(), writes[p].busy.Load(), writes[p].other.Load(),
			reads[p].ok.Load(), reads[p].busy.Load(), reads[p].other.Load())
	}
	t.Logf("requests per MinIO node: %v (node %d killed and restarted)", served, victim)

	for p := range dmSwitch {
		if writes[p].ok.Load() == 0 || reads[p].ok.Load() == 0 {
			t.Errorf("%s: %d writes and %d reads succeeded, want some of each", p, writes[p].ok.Load(), reads[p].ok.Load())
		}
		if n := writes[p].other.Load() + reads[p].other.Load(); n > 0 {
			// A request in flight when a node dies may hang until
			// its deadline or break: that is only allowed across the
			// switch.
			t.Errorf("%s: %d requests failed other than with 503", p, n)
		}
	}
	for i, n := range servedBefore {
		if n == 0 {
			t.Errorf("node %d got no requests before the kill: the proxy does not spread them (%v)", i, servedBefore)
		}
	}
	if served[victim] == servedRestart {
		t.Errorf("node %d got no requests after its restart", victim)
	}
	if len(bad) > 0 {
		t.Errorf("%d reads of acknowledged blobs returned other bytes, e.g. %s", len(bad), bad[0])
	}

	// Nothing lost: every acknowledged write reads back, through both
	// gateways.
	t0 = time.Now()
	lost := 0
	for i, name := range ackedNames {
		sum, err := readOne(clients[i%2], name)
		if err != nil || sum != acked[name] {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %s: read back err=%v, hash match %v", name, err, err == nil && sum == acked[name])
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, len(ackedNames))
	}
	t.Logf("%d acknowledged writes read back in %v", len(ackedNames), time.Since(t0).Round(time.Millisecond))
}
