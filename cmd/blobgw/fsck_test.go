package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/backends/disk"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/backends/s3/miniotest"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// fsckEnv is a gateway over a real store and backend, the backend itself
// (for damaging it behind the gateway's back) and the CLI environment.
type fsckEnv struct {
	store leasedb.Store
	be    backends.Backend
	az    *azblob.Client
	env   map[string]string
}

func newFsckEnv(t *testing.T, kind string, opts ...gateway.Options) *fsckEnv {
	t.Helper()
	var opt gateway.Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	ctx := context.Background()
	e := &fsckEnv{env: map[string]string{"BLOBGW_DATA_DIR": t.TempDir()}}
	dsn := filepath.Join(t.TempDir(), "meta.db")
	if kind == "postgres+s3" {
		dsn = pgtest.Start(t)
		cfg := miniotest.NewBucket(t)
		cfg.Prefix = "gw/"
		st, err := s3.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.be = st
		for k, v := range map[string]string{"BLOBGW_BACKEND": "s3",
			"BLOBGW_S3_ENDPOINT": cfg.Endpoint, "BLOBGW_S3_REGION": cfg.Region, "BLOBGW_S3_BUCKET": cfg.Bucket,
			"BLOBGW_S3_PREFIX": cfg.Prefix, "BLOBGW_S3_ACCESS_KEY": cfg.AccessKey, "BLOBGW_S3_SECRET_KEY": cfg.SecretKey,
			"BLOBGW_S3_PATH_STYLE": "true"} {
			e.env[k] = v
		}
	} else {
		be, err := disk.New(filepath.Join(e.env["BLOBGW_DATA_DIR"], "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		e.be = be
	}
	e.env["BLOBGW_METADATA"] = dsn
	var err error
	if e.store, err = dbopen.Open(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	srv := httptest.NewServer(gwtest.Gateway(t, e.store, e.be, opt))
	t.Cleanup(srv.Close)
	cred, err := azblob.NewSharedKeyCredential(config.DevAccountName, config.DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	if e.az, err = azblob.NewClientWithSharedKeyCredential(srv.URL+"/"+config.DevAccountName+"/", cred, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs `blobgw args...` with the env's environment.
func (e *fsckEnv) run(t *testing.T, args ...string) cliRun {
	t.Helper()
	return runCLI(t, e.env, args...)
}

func (e *fsckEnv) fsckJSON(t *testing.T, args ...string) (fsckReport, int) {
	t.Helper()
	r := e.run(t, append([]string{"fsck", "--json"}, args...)...)
	out, code := r.out, r.code
	// The document is the output's only JSON object; progress lines and
	// the exit message surround it.
	i, j := strings.Index(out, "{"), strings.LastIndex(out, "}")
	var rep fsckReport
	if i < 0 || j < i {
		t.Fatalf("fsck --json: no document in %q", out)
	}
	if err := json.Unmarshal([]byte(out[i:j+1]), &rep); err != nil {
		t.Fatalf("fsck --json: %v in %q", err, out)
	}
	return rep, code
}

// blobKey is the first backend key of a blob row.
func (e *fsckEnv) blobKey(t *testing.T, cont, name string) string {
	t.Helper()
	var key string
	err := e.store.View(context.Background(), func(tx leasedb.Tx) error {
		b, err := tx.Blob(context.Background(), config.DevAccountName, cont, name, leasedb.LockNone)
		if err != nil || b == nil || len(b.Extents) == 0 {
			return fmt.Errorf("blob %s/%s: %v %v", cont, name, b, err)
		}
		key = b.Extents[0].Key
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func gatewayStyleKey(r *rand.Rand) string {
	x := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	return "b/" + x[:2] + "/" + x[2:4] + "/" + x
}

func TestFsck(t *testing.T) {
	for _, kind := range []string{"sqlite+disk", "postgres+s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			e := newFsckEnv(t, kind)
			r := rand.New(rand.NewSource(1))
			if _, err := e.az.CreateContainer(ctx, "fsc", nil); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a", "b"} {
				if _, err := e.az.UploadBuffer(ctx, "fsc", n, []byte("bytes of "+n), nil); err != nil {
					t.Fatal(err)
				}
			}
			// A staged block (uncommitted blob u) and a snapshot of b.
			bb := e.az.ServiceClient().NewContainerClient("fsc").NewBlockBlobClient("u")
			if _, err := bb.StageBlock(ctx, "YmxrMQ==", nopSeeker("staged"), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := e.az.ServiceClient().NewContainerClient("fsc").NewBlobClient("b").CreateSnapshot(ctx, nil); err != nil {
				t.Fatal(err)
			}
			// An upload in flight: its intent is recorded, its bytes written.
			inflight := gatewayStyleKey(r)
			if err := e.store.Update(ctx, func(tx leasedb.Tx) error {
				now, err := tx.Now(ctx)
				if err != nil {
					return err
				}
				return tx.AddIntent(ctx, inflight, now.Add(time.Hour))
			}); err != nil {
				t.Fatal(err)
			}
			if err := e.be.Put(ctx, inflight, strings.NewReader("in flight"), 9); err != nil {
				t.Fatal(err)
			}

			// Clean: nothing reported, in text and JSON.
			e.run(t, "fsck").ok(t, "0 missing, 0 unreferenced")
			rep, code := e.fsckJSON(t)
			if code != 0 || rep.Missing != 0 || rep.Unreferenced != 0 || rep.Objects != 4 {
				t.Fatalf("fsck --json on a clean store: exit %d, %+v", code, rep)
			}

			// An orphan written straight to the backend.
			orphan := gatewayStyleKey(r)
			if err := e.be.Put(ctx, orphan, strings.NewReader("orphan"), 6); err != nil {
				t.Fatal(err)
			}
			e.run(t, "fsck").ok(t, "unreferenced: "+orphan+" (6 bytes)", "1 unreferenced (6 bytes)")
			rep, code = e.fsckJSON(t)
			if code != 0 || rep.Unreferenced != 1 || !slices.Equal(rep.UnreferencedKeys, []string{orphan}) || rep.UnreferencedBytes != 6 || rep.Queued != 0 {
				t.Fatalf("fsck --json with an orphan: exit %d, %+v", code, rep)
			}
			if keys, _ := e.store.CollectionKeys(ctx); slices.Contains(keys, orphan) {
				t.Fatal("fsck without --repair queued the orphan")
			}
			// --repair queues it; gc after the grace (0 here) deletes it.
			e.env["BLOBGW_GC_GRACE"] = "0s"
			rep, code = e.fsckJSON(t, "--repair")
			if code != 0 || rep.Queued != 1 {
				t.Fatalf("fsck --repair: exit %d, %+v", code, rep)
			}
			if keys, _ := e.store.CollectionKeys(ctx); !slices.Contains(keys, orphan) {
				t.Fatalf("fsck --repair did not queue the orphan: queue %q", keys)
			}
			if _, err := e.be.Stat(ctx, orphan); err != nil {
				t.Fatalf("fsck --repair touched the orphan itself: %v", err)
			}
			e.run(t, "gc", "--now").ok(t)
			if _, err := e.be.Stat(ctx, orphan); !errors.Is(err, backends.ErrNotFound) {
				t.Fatalf("orphan after repair and gc: %v, want gone", err)
			}
			if _, err := e.be.Stat(ctx, inflight); err != nil {
				t.Fatalf("gc deleted the in-flight upload's bytes: %v", err)
			}
			if rep, code = e.fsckJSON(t); code != 0 || rep.Unreferenced != 0 || rep.Missing != 0 {
				t.Fatalf("fsck after repair: exit %d, %+v", code, rep)
			}

			// A row whose bytes are gone: reported, exit status 1.
			lost := e.blobKey(t, "fsc", "a")
			if err := e.be.Delete(ctx, lost); err != nil {
				t.Fatal(err)
			}
			e.run(t, "fsck").fails(t, 1, "missing: "+config.DevAccountName+"/fsc/a: bytes of "+lost, "1 missing")
			rep, code = e.fsckJSON(t)
			if code != 1 || rep.Missing != 1 || len(rep.MissingKeys) != 1 || rep.MissingKeys[0] != (fsckMissing{Key: lost, Ref: config.DevAccountName + "/fsc/a"}) {
				t.Fatalf("fsck --json with lost bytes: exit %d, %+v", code, rep)
			}
		})
	}
}

// TestFsckQueuedReferenced: a key a blob row references that the
// collection queue also holds for deletion (the collector deletes due
// entries without looking for references) is a finding: a line in text,
// a count and the key in --json, exit status 1. An upload intent for a
// referenced key is not.
func TestFsckQueuedReferenced(t *testing.T) {
	for _, kind := range []string{"sqlite+disk", "postgres+s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			e := newFsckEnv(t, kind)
			if _, err := e.az.CreateContainer(ctx, "fsq", nil); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a", "b"} {
				if _, err := e.az.UploadBuffer(ctx, "fsq", n, []byte("bytes of "+n), nil); err != nil {
					t.Fatal(err)
				}
			}
			if rep, code := e.fsckJSON(t); code != 0 || rep.QueuedReferenced != 0 {
				t.Fatalf("fsck --json on a clean store: exit %d, %+v", code, rep)
			}
			queued, intent := e.blobKey(t, "fsq", "a"), e.blobKey(t, "fsq", "b")
			if err := e.store.Update(ctx, func(tx leasedb.Tx) error {
				now, err := tx.Now(ctx)
				if err != nil {
					return err
				}
				if err := tx.AddIntent(ctx, intent, now.Add(time.Hour)); err != nil {
					return err
				}
				return tx.AddGC(ctx, []string{queued}, now.Add(time.Hour))
			}); err != nil {
				t.Fatal(err)
			}
			ref := config.DevAccountName + "/fsq/a"
			e.run(t, "fsck").without(intent).fails(t, 1, "queued for deletion but referenced: "+ref+": bytes of "+queued,
				"1 referenced but queued for deletion")
			rep, code := e.fsckJSON(t)
			if code != 1 || rep.QueuedReferenced != 1 || len(rep.QueuedReferencedKeys) != 1 ||
				rep.QueuedReferencedKeys[0] != (fsckMissing{Key: queued, Ref: ref}) || rep.Missing != 0 || rep.Unreferenced != 0 {
				t.Fatalf("fsck --json with a referenced key queued: exit %d, %+v", code, rep)
			}
		})
	}
}

// nopSeeker is a body for StageBlock.
func nopSeeker(s string) interface {
	io.ReadSeeker
	io.Closer
} {
	return struct {
		io.ReadSeeker
		io.Closer
	}{bytes.NewReader([]byte(s)), io.NopCloser(nil)}
}

// TestKeySorterSpills: past one chunk the listing is sorted through spill
// files and merged back in byte order, sizes kept.
func TestKeySorterSpills(t *testing.T) {
	for _, n := range []int{0, 1, 3, 7, 100} {
		s := &keySorter{chunk: 3}
		r := rand.New(rand.NewSource(int64(n)))
		var want []string
		for i := range n {
			k := gatewayStyleKey(r)
			want = append(want, k)
			if err := s.add(backends.ObjectInfo{Key: k, Size: int64(len(k) + i)}); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want)
		it, err := s.iter()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			o, ok, err := it.next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if o.Size < int64(len(o.Key)) {
				t.Errorf("%s: size %d lost", o.Key, o.Size)
			}
			got = append(got, o.Key)
		}
		s.close()
		if !slices.Equal(got, want) {
			t.Errorf("n=%d: got %d keys %q, want %q", n, len(got), got, want)
		}
		if n > 3 && len(s.runs) < 2 {
			t.Errorf("n=%d: %d spill files, want several", n, len(s.runs))
		}
	}
}
