package robustness

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/testproc"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

var (
	crashKills = flag.Int("crash.kills", 3, "TestCrash: SIGKILLs of the gateway per backend (the long form: 20)")
	crashSize  = flag.String("crash.size", "32MiB", "TestCrash: size of each upload, e.g. 200MiB for the long form")
)

// parseSize reads "32MiB", "200MiB", "1GiB", "4096" (bytes).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// genChunk is the unit of generated content: every chunk is the seed's
// random chunk with the seed and the chunk's index written over its first
// 16 bytes, so that content never repeats across positions or seeds and a
// blob mixing two uploads hashes as neither.
const genChunk = 64 << 10

// content is generated blob content: seed and size say everything, so
// neither the writer nor the check holds the bytes.
type content struct {
	seed int64
	size int64
}

// genReader streams a content from off; onRead, when set, sees the
// absolute offset reached after each Read (before the bytes are returned,
// so that a kill it makes lands before they are sent).
type genReader struct {
	c      content
	base   []byte
	off    int64
	onRead func(off int64)
}

func (c content) reader(onRead func(int64)) *genReader {
	base := make([]byte, genChunk)
	rand.New(rand.NewSource(c.seed)).Read(base)
	return &genReader{c: c, base: base, onRead: onRead}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.c.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && g.off < g.c.size {
		chunk, in := g.off/genChunk, g.off%genChunk
		m := min(int64(len(p)-n), genChunk-in, g.c.size-g.off)
		src := g.base[in : in+m]
		copy(p[n:], src)
		// The header bytes of this chunk that fall into p.
		var hdr [16]byte
		binary.BigEndian.PutUint64(hdr[:8], uint64(g.c.seed))
		binary.BigEndian.PutUint64(hdr[8:], uint64(chunk))
		for i := in; i < 16 && i < in+m; i++ {
			p[n+int(i-in)] = hdr[i]
		}
		n += int(m)
		g.off += m
	}
	if g.onRead != nil {
		g.onRead(g.off)
	}
	return n, nil
}

func (g *genReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += g.off
	case io.SeekEnd:
		offset += g.c.size
	}
	if offset < 0 {
		return 0, errors.New("negative offset")
	}
	g.off = offset
	return offset, nil
}

func (g *genReader) Close() error { return nil }

// section is [off, off+n) of a genReader as a ReadSeekCloser (one staged
// block), reporting the parent's offsets to onRead.
func (c content) section(off, n int64, onRead func(int64)) io.ReadSeekCloser {
	g := c.reader(nil)
	g.Seek(off, io.SeekStart)
	lim := &genSection{g: g, start: off, end: off + n}
	g.onRead = onRead
	return lim
}

type genSection struct {
	g          *genReader
	start, end int64
}

func (s *genSection) Read(p []byte) (int, error) {
	if s.g.off >= s.end {
		return 0, io.EOF
	}
	if rest := s.end - s.g.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	return s.g.Read(p)
}

func (s *genSection) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		offset += s.start
	case io.SeekCurrent:
		offset += s.g.off
	case io.SeekEnd:
		offset += s.end
	}
	n, err := s.g.Seek(offset, io.SeekStart)
	return n - s.start, err
}

func (s *genSection) Close() error { return nil }

var (
	hashMu    sync.Mutex
	hashCache = map[content]string{}
)

// sum is the content's SHA-256, hex.
func (c content) sum() string {
	hashMu.Lock()
	defer hashMu.Unlock()
	if h, ok := hashCache[c]; ok {
		return h
	}
	h := sha256.New()
	io.Copy(h, c.reader(nil))
	s := fmt.Sprintf("%x", h.Sum(nil))
	hashCache[c] = s
	return s
}

// TestGenReader: the generator yields size bytes, the same at any read
// size and through sections, and different seeds differ.
func TestGenReader(t *testing.T) {
	c := content{seed: 7, size: 3*genChunk + 1234}
	whole, _ := io.ReadAll(c.reader(nil))
	if int64(len(whole)) != c.size {
		t.Fatalf("%d bytes, want %d", len(whole), c.size)
	}
	var pieces []byte
	for off := int64(0); off < c.size; off += 50_000 {
		b, _ := io.ReadAll(c.section(off, min(50_000, c.size-off), nil))
		pieces = append(pieces, b...)
	}
	if string(pieces) != string(whole) {
		t.Fatal("sections differ from the whole")
	}
	if (content{seed: 8, size: c.size}).sum() == c.sum() {
		t.Fatal("seeds 7 and 8 hash alike")
	}
	if (content{seed: 7, size: c.size - 1}).sum() == c.sum() {
		t.Fatal("a shorter content hashes alike")
	}
}

// crashBlock is the staged upload's block size.
const crashBlock = 4 << 20

// TestCrash SIGKILLs a `blobgw serve` at random moments of a single-shot
// Put Blob and of a staged upload (Put Block ×N, Put Block List) running
// together, restarts it and reads both blobs back, hash-checked: each
// holds its old content or the new one whole, the new one if the upload
// was acknowledged. After the last restart, the grace period and a
// collection pass, `blobgw fsck --json` finds nothing missing and nothing
// unreferenced. Per backend: disk with SQLite, S3 (MinIO) with Postgres.
// -crash.kills 20 -crash.size 200MiB is the long form.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	size, err := parseSize(*crashSize)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "blobgw")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/blobgw").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Run("disk", func(t *testing.T) {
		crashRun(t, bin, size, nil)
	})
	t.Run("s3", func(t *testing.T) {
		pg := pgtest.PrivateServer(t)
		dsn := pg.NewDatabase(t)
		s3cfg := miniotest.NewBucket(t)
		crashRun(t, bin, size, []string{"--metadata", dsn, "--backend", "s3", "--s3-endpoint", s3cfg.Endpoint,
			"--s3-bucket", s3cfg.Bucket, "--s3-region", s3cfg.Region, "--s3-access-key", s3cfg.AccessKey,
			"--s3-secret-key", s3cfg.SecretKey, "--s3-path-style"})
	})
}

// crashIntentTTL bounds an upload of size on this (shared, slow) machine
// with a wide margin: a killed upload's objects are collectable after it.
func crashIntentTTL(size int64) time.Duration {
	return 15*time.Second + time.Duration(size/(2<<20))*time.Second
}

func crashRun(t *testing.T, bin string, size int64, args []string) {
	rdir := t.TempDir()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ttl := crashIntentTTL(size)
	args = append(args, "--gc-grace", "1s", "--gc-interval", "1s", "--intent-ttl", ttl.String())
	r := &replica{t: t, bin: bin, addr: "127.0.0.1:" + strconv.Itoa(port), dir: rdir, args: args}
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			for n := 1; n <= r.n; n++ {
				b, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("serve.%d.log", n)))
				t.Logf("serve (start %d) log tail:\n%s", n, testproc.Tail(b))
			}
		}
	})
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential("http://"+r.addr+"/"+config.DevAccountName+"/", cred,
		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const cname = "crash"
	if _, err := client.CreateContainer(ctx, cname, nil); err != nil {
		t.Fatal(err)
	}
	cc := client.ServiceClient().NewContainerClient(cname)
	single, staged := cc.NewBlockBlobClient("single"), cc.NewBlockBlobClient("staged")
	// The old contents: smaller, so that a truncated new one is no match.
	cur := map[string]content{"single": {seed: 1, size: size / 3}, "staged": {seed: 2, size: size / 3}}
	if _, err := single.Upload(ctx, cur["single"].reader(nil), nil); err != nil {
		t.Fatal(err)
	}
	if err := stagedUpload(ctx, staged, cur["staged"], "init", nil); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var newWins, oldWins, acked int
	for i := range *crashKills {
		next := map[string]content{
			"single": {seed: int64(100 + 2*i), size: size},
			"staged": {seed: int64(101 + 2*i), size: size},
		}
		// The kill point: a random offset of one upload's body (the
		// driver, alternating), or past it by a random delay (during the
		// commit, or after the reply); the other upload is wherever it is.
		driver := []string{"single", "staged"}[i%2]
		at := int64(rng.Float64() * 1.3 * float64(size))
		var once sync.Once
		var killedAt string
		kill := func(why string) {
			once.Do(func() {
				killedAt = why
				r.kill()
			})
		}
		// Up to 400 ms: past the commit and the reply at times.
		delay := time.Duration(rng.Intn(400)) * time.Millisecond
		watch := func(name string) func(int64) {
			if name != driver {
				return nil
			}
			return func(off int64) {
				switch {
				case at < size && off >= at:
					kill(fmt.Sprintf("%s body at %d of %d", name, off, size))
				case at >= size && off >= size:
					// The whole body is sent: the kill lands during the
					// commit or after the reply.
					go func() {
						time.Sleep(delay)
						kill(fmt.Sprintf("%s %v after its last body byte", name, delay))
					}()
				}
			}
		}
		var wg sync.WaitGroup
		errs := map[string]error{}
		var mu sync.Mutex
		done := func(name string, err error) {
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := single.Upload(ctx, next["single"].reader(watch("single")), nil)
			done("single", err)
		}()
		go func() {
			defer wg.Done()
			done("staged", stagedUpload(ctx, staged, next["staged"], fmt.Sprintf("k%03d", i), watch("staged")))
		}()
		wg.Wait()
		kill("after both returned")
		if err := r.start(); err != nil {
			t.Fatalf("kill %d: restart: %v", i, err)
		}
		for _, name := range []string{"single", "staged"} {
			got, n, err := readSum(ctx, cc.NewBlobClient(name))
			if err != nil {
				t.Fatalf("kill %d (%s): read %s: %v", i, killedAt, name, err)
			}
			switch {
			case got == next[name].sum() && n == next[name].size:
				newWins++
				cur[name] = next[name]
			case got == cur[name].sum() && n == cur[name].size && errs[name] == nil:
				t.Errorf("kill %d (%s): %s upload was acknowledged, but the blob holds the old content", i, killedAt, name)
			case got == cur[name].sum() && n == cur[name].size:
				oldWins++
			default:
				t.Fatalf("kill %d (%s): %s holds %d bytes hashing %s: neither the old content (%d bytes) nor the new (%d bytes); upload error: %v",
					i, killedAt, name, n, got, cur[name].size, next[name].size, errs[name])
			}
			if errs[name] == nil {
				acked++
			}
		}
		t.Logf("kill %d: %s; single: %v; staged: %v", i, killedAt, errText(errs["single"]), errText(errs["staged"]))
	}
	t.Logf("%d kills, %d uploads of %d bytes: %d blobs read back new, %d old, %d acknowledged", *crashKills, 2**crashKills, size, newWins, oldWins, acked)

	// The killed gateways' upload intents expire after the TTL, replaced
	// bytes after the grace period; the live one's collector deletes them.
	// Then, stopped, one more pass and fsck.
	time.Sleep(ttl + 3*time.Second)
	r.stop()
	common := append([]string{"--data-dir", filepath.Join(rdir, "data")}, args...)
	gc := exec.Command(bin, append([]string{"gc"}, common...)...)
	gc.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	if out, err := gc.CombinedOutput(); err != nil {
		t.Fatalf("blobgw gc: %v\n%s", err, out)
	}
	fsck := exec.Command(bin, append([]string{"fsck", "--json"}, common...)...)
	fsck.Env = append(os.Environ(), "BLOBGW_CONFIG=")
	out, err := fsck.Output()
	if err != nil {
		t.Fatalf("blobgw fsck: %v\n%s", err, out)
	}
	var rep struct {
		Objects          int64                       `json:"objects"`
		ReferencedKeys   int64                       `json:"referenced_keys"`
		Missing          int64                       `json:"missing"`
		Unreferenced     int64                       `json:"unreferenced"`
		MissingKeys      []struct{ Key, Ref string } `json:"missing_keys"`
		UnreferencedKeys []string                    `json:"unreferenced_keys"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("fsck --json: %v\n%s", err, out)
	}
	var temps int
	if ents, err := os.ReadDir(filepath.Join(rdir, "data", "blobs", "tmp")); err == nil {
		temps = len(ents)
	}
	t.Logf("fsck: %d objects, %d referenced keys, %d missing, %d unreferenced; %d temporary files of killed uploads (removed by serve's start-up and collector sweeps once stale)",
		rep.Objects, rep.ReferencedKeys, rep.Missing, rep.Unreferenced, temps)
	if rep.Missing != 0 || rep.Unreferenced != 0 {
		t.Errorf("fsck: missing %v, unreferenced %v", rep.MissingKeys, rep.UnreferencedKeys)
	}
}

func errText(err error) string {
	if err == nil {
		return "acknowledged"
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// stagedUpload writes c as Put Block of crashBlock each (ids tagged, all
// the same length) and Put Block List.
func stagedUpload(ctx context.Context, bb *blockblob.Client, c content, tag string, onRead func(int64)) error {
	var ids []string
	for off, n := int64(0), 0; off < c.size; off, n = off+crashBlock, n+1 {
		id := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%s-%06d", tag, n)))
		if _, err := bb.StageBlock(ctx, id, c.section(off, min(crashBlock, c.size-off), onRead), nil); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	_, err := bb.CommitBlockList(ctx, ids, nil)
	return err
}

// readSum downloads the blob and returns its SHA-256 (hex) and length.
func readSum(ctx context.Context, bc *blob.Client) (string, int64, error) {
	resp, err := bc.DownloadStream(ctx, nil)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return "", n, err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n, nil
}
