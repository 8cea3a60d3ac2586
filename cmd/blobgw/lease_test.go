package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/blobgw/blobgw/gateway"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/internal/gwtest"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/google/uuid"
)

func TestMain(m *testing.M) { gwtest.Main(m) }

// leaseEnv is one gateway on a fresh metadata store, driven by the Azure
// SDK, and the environment that points the CLI at the same store.
type leaseEnv struct {
	env    map[string]string
	db     *leasedb.DB // the gateway's, for writing rows directly
	client *azblob.Client
}

// forEachLeaseStore runs fn against SQLite and Postgres.
func forEachLeaseStore(t *testing.T, fn func(t *testing.T, e *leaseEnv)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { fn(t, newLeaseEnv(t, kind)) })
	}
}

func newLeaseEnv(t *testing.T, kind string) *leaseEnv {
	t.Helper()
	dataDir := t.TempDir()
	var dsn string
	if kind == "postgres" {
		dsn = pgtest.Start(t)
	} else {
		dsn = filepath.Join(t.TempDir(), "meta.db")
	}
	store := gwtest.OpenStore(t, dsn)
	db := &leasedb.DB{Store: store}
	gw := gateway.New(db, gwtest.DiskBackend(t, dataDir), gwtest.DevAccounts(t), gwtest.Discard(), gateway.Options{})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	client := sharedKeyClient(t, srv.URL+"/"+config.DevAccountName+"/", config.DevAccountName, config.DevAccountKey)
	return &leaseEnv{
		env:    map[string]string{"BLOBGW_METADATA": dsn, "BLOBGW_DATA_DIR": dataDir},
		db:     db,
		client: client,
	}
}

// lease runs `blobgw lease args...` against the env's store.
func (e *leaseEnv) lease(t *testing.T, args ...string) cliRun {
	t.Helper()
	return runCLI(t, e.env, append([]string{"lease"}, args...)...)
}

// mustLease runs a lease command that must succeed and returns its output.
func (e *leaseEnv) mustLease(t *testing.T, args ...string) string {
	t.Helper()
	return e.lease(t, args...).ok(t)
}

// listedLease is one element of `lease list --json`, decoded with the
// documented field names.
type listedLease struct {
	Account         string     `json:"account"`
	Container       string     `json:"container"`
	Blob            string     `json:"blob"`
	Kind            string     `json:"kind"`
	State           string     `json:"state"`
	Status          string     `json:"status"`
	Duration        string     `json:"duration"`
	DurationSeconds int        `json:"duration_seconds"`
	LeaseID         string     `json:"lease_id"`
	Acquired        *time.Time `json:"acquired"`
	Expires         *time.Time `json:"expires"`
	BreakAt         *time.Time `json:"break_at"`
}

var listedFields = []string{"account", "acquired", "blob", "break_at", "container", "duration", "duration_seconds", "expires", "kind", "lease_id", "state", "status"}

func (e *leaseEnv) list(t *testing.T, args ...string) []listedLease {
	t.Helper()
	out := e.mustLease(t, append([]string{"list", "--json"}, args...)...)
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("list --json output is not a JSON array: %v\n%s", err, out)
	}
	for _, obj := range raw {
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, listedFields) {
			t.Fatalf("list --json fields %v, want %v", keys, listedFields)
		}
	}
	var rows []listedLease
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (e *leaseEnv) show(t *testing.T, args ...string) listedLease {
	t.Helper()
	out := e.mustLease(t, append([]string{"show", "--json"}, args...)...)
	var l listedLease
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	return l
}

// find returns the listed lease of container/blob ("" for the container).
func find(t *testing.T, rows []listedLease, container, blob string) listedLease {
	t.Helper()
	for _, r := range rows {
		if r.Container == container && r.Blob == blob {
			return r
		}
	}
	t.Fatalf("%s/%s not listed in %+v", container, blob, rows)
	return listedLease{}
}

func names(rows []listedLease) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Container+"/"+r.Blob)
	}
	return out
}

// newBlob creates container (if needed) and uploads a blob in it.
func (e *leaseEnv) newBlob(t *testing.T, cont, name string) *blockblob.Client {
	t.Helper()
	ctx := context.Background()
	if _, err := e.client.CreateContainer(ctx, cont, nil); err != nil && !strings.Contains(err.Error(), "ContainerAlreadyExists") {
		t.Fatal(err)
	}
	if _, err := e.client.UploadBuffer(ctx, cont, name, []byte("v1"), nil); err != nil {
		t.Fatal(err)
	}
	return e.client.ServiceClient().NewContainerClient(cont).NewBlockBlobClient(name)
}

// holdBlobLease acquires a lease on bc through the gateway.
func holdBlobLease(t *testing.T, bc *blockblob.Client, duration int32) (*lease.BlobClient, string) {
	t.Helper()
	id := uuid.NewString()
	lc, err := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr(id)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(context.Background(), duration, nil); err != nil {
		t.Fatal(err)
	}
	return lc, id
}

func (e *leaseEnv) holdContainerLease(t *testing.T, cont string, duration int32) (*lease.ContainerClient, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.client.CreateContainer(ctx, cont, nil); err != nil && !strings.Contains(err.Error(), "ContainerAlreadyExists") {
		t.Fatal(err)
	}
	id := uuid.NewString()
	lc, err := lease.NewContainerClient(e.client.ServiceClient().NewContainerClient(cont), &lease.ContainerClientOptions{LeaseID: to.Ptr(id)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, duration, nil); err != nil {
		t.Fatal(err)
	}
	return lc, id
}

func withLeaseID(id string) *blob.AccessConditions {
	return &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(id)}}
}

// write is the holder's write through the SDK: Set Blob Metadata with its
// lease id ("" for none).
func write(bc *blockblob.Client, id string) error {
	var ac *blob.AccessConditions
	if id != "" {
		ac = withLeaseID(id)
	}
	_, err := bc.SetMetadata(context.Background(), map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: ac})
	return err
}

// wantSDKErr asserts an SDK error's status and x-ms-error-code.
func wantSDKErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want %d %s, got %v", status, code, err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("want %d %s, got %d %s", status, code, re.StatusCode, re.ErrorCode)
	}
}

func near(t *testing.T, what string, got *time.Time, want time.Time, slack time.Duration) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: null, want about %v", what, want)
	}
	if d := got.Sub(want); d < -slack || d > slack {
		t.Fatalf("%s = %v, want within %v of %v", what, got, slack, want)
	}
}

// (1) A lease held through the gateway is listed with the right state.
func TestLeaseListShowsGatewayLeases(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		bc := e.newBlob(t, "cont1", "b1")
		e.newBlob(t, "cont1", "free")
		_, idA := holdBlobLease(t, bc, -1)
		_, idC := e.holdContainerLease(t, "cont2", 30)
		acquired := time.Now()

		rows := e.list(t)
		if len(rows) != 2 {
			t.Fatalf("listed %v, want cont1/b1 and cont2/", names(rows))
		}
		b := find(t, rows, "cont1", "b1")
		if b.Account != config.DevAccountName || b.Kind != "blob" || b.State != "leased" || b.Status != "locked" ||
			b.Duration != "infinite" || b.DurationSeconds != -1 || b.LeaseID != idA || b.Expires != nil || b.BreakAt != nil {
			t.Fatalf("blob lease %+v", b)
		}
		near(t, "blob acquired", b.Acquired, acquired, time.Minute)
		c := find(t, rows, "cont2", "")
		if c.Kind != "container" || c.State != "leased" || c.Duration != "fixed" || c.DurationSeconds != 30 || c.LeaseID != idC {
			t.Fatalf("container lease %+v", c)
		}
		near(t, "container expires", c.Expires, acquired.Add(30*time.Second), time.Minute)

		table := e.lease(t, "list").ok(t, "ACCOUNT", "CONTAINER", "BLOB", "STATE", "DURATION", "LEASE ID", "ACQUIRED", "EXPIRES/BREAKS AT", idA, idC, "infinite", "30s", "leased")
		if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 3 {
			t.Fatalf("table has %d lines, want a header and 2 rows:\n%s", len(lines), table)
		}

		e.lease(t, "show", "cont1", "b1").ok(t, "state:", "leased", "locked", "infinite", idA)
		if s := e.show(t, "cont2"); s.State != "leased" || s.LeaseID != idC || s.Kind != "container" {
			t.Fatalf("show container %+v", s)
		}
		if s := e.show(t, "cont1", "free"); s.State != "available" || s.Status != "unlocked" || s.LeaseID != "" || s.Acquired != nil {
			t.Fatalf("show unleased blob %+v", s)
		}
	})
}

// (2) A CLI break is the gateway's break: an infinite lease breaks at once
// and the holder's next write with its id is 412 LeaseLost; a fixed lease
// breaks naturally at the end of its term (breaking: writes with the id
// still proceed, renew is 409 LeaseIsBrokenAndCannotBeRenewed).
func TestLeaseBreak(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		ctx := context.Background()

		// Infinite, no period: broken now (Lease Blob: break outcomes by
		// lease state).
		bc := e.newBlob(t, "cont1", "inf")
		holder, id := holdBlobLease(t, bc, -1)
		e.lease(t, "break", "cont1", "inf").ok(t, "devstoreaccount1/cont1/inf: leased (infinite, id "+id+") -> broken (id "+id+")")
		wantSDKErr(t, write(bc, id), 412, "LeaseLost")
		_, err := holder.RenewLease(ctx, nil)
		wantSDKErr(t, err, 409, "LeaseIsBrokenAndCannotBeRenewed")
		if s := e.show(t, "cont1", "inf"); s.State != "broken" || s.Status != "unlocked" || s.LeaseID != id {
			t.Fatalf("after break: %+v", s)
		}
		// Breaking a broken lease changes nothing.
		e.lease(t, "break", "cont1", "inf").ok(t, "unchanged")

		// Fixed, no period: breaking until the current term ends.
		bc = e.newBlob(t, "cont1", "fixed")
		holder, id = holdBlobLease(t, bc, 60)
		before := e.show(t, "cont1", "fixed")
		e.lease(t, "break", "cont1", "fixed").ok(t, "-> breaking (broken at ")
		s := e.show(t, "cont1", "fixed")
		if s.State != "breaking" || s.Status != "locked" || s.LeaseID != id || s.BreakAt == nil || !s.BreakAt.Equal(*before.Expires) {
			t.Fatalf("after natural break of a fixed lease: %+v (expires was %v)", s, before.Expires)
		}
		if err := write(bc, id); err != nil {
			t.Fatalf("a write with the id proceeds while breaking: %v", err)
		}
		wantSDKErr(t, write(bc, ""), 412, "LeaseIdMissing")
		_, err = holder.RenewLease(ctx, nil)
		wantSDKErr(t, err, 409, "LeaseIsBrokenAndCannotBeRenewed")
		// --period 0 (flag before the arguments this time): broken now.
		e.lease(t, "break", "--period", "0", "cont1", "fixed").ok(t, "breaking (broken at ", "-> broken (id "+id+")")
		wantSDKErr(t, write(bc, id), 412, "LeaseLost")

		// A container lease, with a period: breaking for that long.
		holderC, idC := e.holdContainerLease(t, "cont2", -1)
		start := time.Now()
		e.mustLease(t, "break", "cont2", "--period", "10")
		s = e.show(t, "cont2")
		if s.State != "breaking" || s.LeaseID != idC {
			t.Fatalf("container after break --period 10: %+v", s)
		}
		near(t, "container break_at", s.BreakAt, start.Add(10*time.Second), 5*time.Second)
		_, err = holderC.RenewLease(ctx, nil)
		wantSDKErr(t, err, 409, "LeaseIsBrokenAndCannotBeRenewed")

		// No lease: the state machine's refusal, as one line.
		e.newBlob(t, "cont1", "free")
		e.lease(t, "break", "cont1", "free").oneLine().fails(t, 1, "devstoreaccount1/cont1/free has no lease")
	})
}

// (3) A forced release frees the lease: show prints available, the holder
// has lost it, anyone may write.
func TestLeaseForceRelease(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		ctx := context.Background()
		bc := e.newBlob(t, "cont1", "b1")
		holder, id := holdBlobLease(t, bc, -1)
		e.lease(t, "release", "cont1", "b1", "--force", "--yes").ok(t, "devstoreaccount1/cont1/b1: leased (infinite, id "+id+") -> available")
		e.lease(t, "show", "cont1", "b1").without(id).ok(t, "state:", "available")
		_, err := holder.RenewLease(ctx, nil)
		wantSDKErr(t, err, 409, "LeaseIdMismatchWithLeaseOperation")
		wantSDKErr(t, write(bc, id), 412, "LeaseNotPresentWithBlobOperation")
		if err := write(bc, ""); err != nil {
			t.Fatalf("write after a forced release: %v", err)
		}
		if rows := e.list(t); len(rows) != 0 {
			t.Fatalf("listed after release: %v", names(rows))
		}
		// Nothing left to release.
		e.lease(t, "release", "cont1", "b1", "--force", "--yes").ok(t, "nothing to release")
		// A broken lease is released too.
		_, id = holdBlobLease(t, bc, -1)
		e.mustLease(t, "break", "cont1", "b1")
		e.lease(t, "release", "cont1", "b1", "--force", "-y").ok(t, "broken (id "+id+") -> available")

		// A container lease, confirmed on standard input.
		holderC, idC := e.holdContainerLease(t, "cont2", 15)
		withStdin(t, "y\n")
		e.lease(t, "release", "cont2", "--force").ok(t, "release lease on devstoreaccount1/cont2, leased (fixed 15s", "devstoreaccount1/cont2: leased (fixed 15s", "-> available")
		if s := e.show(t, "cont2"); s.State != "available" {
			t.Fatalf("container after release: %+v", s)
		}
		_, err = holderC.RenewLease(ctx, nil)
		wantSDKErr(t, err, 409, "LeaseIdMismatchWithLeaseOperation")
		_ = idC
	})
}

// withStdin makes the next CLI runs read content as standard input.
func withStdin(t *testing.T, content string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(content)
	f.Seek(0, io.SeekStart)
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old; f.Close() })
}

// (6) Without --yes a release asks, and anything but yes (including end of
// input) refuses with status 1 and changes nothing.
func TestLeaseReleaseNeedsConfirmation(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		bc := e.newBlob(t, "cont1", "b1")
		_, id := holdBlobLease(t, bc, -1)
		for _, stdin := range []string{"", "n\n", "yes please\n"} {
			withStdin(t, stdin)
			e.lease(t, "release", "cont1", "b1", "--force").about(fmt.Sprintf("stdin %q", stdin)).fails(t, 1, "release lease on devstoreaccount1/cont1/b1, leased (infinite, id "+id+")? [y/N]",
				"not confirmed; nothing changed")
			if s := e.show(t, "cont1", "b1"); s.State != "leased" || s.LeaseID != id {
				t.Fatalf("stdin %q: lease changed: %+v", stdin, s)
			}
		}
		// --force is required.
		e.lease(t, "release", "cont1", "b1", "--yes").oneLine().fails(t, 2, "--force is required")
		if err := write(bc, id); err != nil {
			t.Fatalf("holder still holds the lease: %v", err)
		}
	})
}

// (4) Missing containers and blobs, bad arguments: one line, non-zero exit.
func TestLeaseErrors(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		e.newBlob(t, "cont1", "b1")
		tests := []struct {
			args []string
			code int
			want string
		}{
			{[]string{"show", "nope"}, 1, "show: container devstoreaccount1/nope not found"},
			{[]string{"show", "nope", "b1"}, 1, "show: container devstoreaccount1/nope not found"},
			{[]string{"show", "cont1", "nope"}, 1, "show: blob devstoreaccount1/cont1/nope not found"},
			{[]string{"break", "nope"}, 1, "break: container devstoreaccount1/nope not found"},
			{[]string{"break", "cont1", "nope"}, 1, "break: blob devstoreaccount1/cont1/nope not found"},
			{[]string{"release", "nope", "--force", "--yes"}, 1, "release: container devstoreaccount1/nope not found"},
			{[]string{"release", "cont1", "nope", "--force", "--yes"}, 1, "release: blob devstoreaccount1/cont1/nope not found"},
			{[]string{"release", "cont1", "nope", "--force"}, 1, "release: blob devstoreaccount1/cont1/nope not found"},
			{[]string{"show", "cont1", "b1", "--account", "other"}, 1, "show: container other/cont1 not found"},
			{[]string{"show"}, 2, "usage: blobgw lease show CONTAINER [BLOB]"},
			{[]string{"break", "a", "b", "c"}, 2, "usage: blobgw lease break CONTAINER [BLOB]"},
			{[]string{"list", "extra"}, 2, "usage: blobgw lease list"},
			{[]string{"break", "cont1", "b1", "--period", "61"}, 2, "--period 61: want 0..60"},
			{[]string{"break", "cont1", "b1", "--period"}, 2, "flag needs an argument: --period"},
			{[]string{"break", "cont1", "b1", "--period", "soon"}, 2, `invalid value "soon" for flag --period`},
			{[]string{"show", "cont1", "--bogus"}, 2, "flag provided but not defined: --bogus"},
			{[]string{"list", "--state", "stuck"}, 2, `--state "stuck": want leased, breaking, broken or expired`},
			{[]string{"list", "--older-than", "-1h"}, 2, "--older-than must not be negative"},
		}
		for _, tt := range tests {
			e.lease(t, tt.args...).oneLine().fails(t, tt.code, tt.want)
		}
	})
}

// The account: --account, else the single configured one; several
// configured and none named is an error. The store must exist.
func TestLeaseAccountAndStore(t *testing.T) {
	e := newLeaseEnv(t, "sqlite")
	e.newBlob(t, "cont1", "b1")
	env := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range e.env {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	two := "acct1:" + config.DevAccountKey + ";" + config.DevAccountName + ":" + config.DevAccountKey
	runCLI(t, env("BLOBGW_ACCOUNTS", two), "lease", "show", "cont1", "b1").oneLine().
		fails(t, 2, "2 accounts are configured (acct1, devstoreaccount1): name one with --account")
	runCLI(t, env("BLOBGW_ACCOUNTS", two), "lease", "show", "cont1", "b1", "--account", config.DevAccountName).ok(t, "available")
	// One configured account (with two keys, comma-separated) is the default.
	runCLI(t, env("BLOBGW_ACCOUNTS", "acct1:"+config.DevAccountKey+","+config.DevAccountKey), "lease", "show", "cont1").oneLine().
		fails(t, 1, "container acct1/cont1 not found")
	// From the config file too.
	file := filepath.Join(t.TempDir(), "blobgw.yaml")
	os.WriteFile(file, []byte("accounts:\n  - name: acct2\n    keys: ["+config.DevAccountKey+"]\n"), 0o644)
	runCLI(t, env("BLOBGW_CONFIG", file), "lease", "show", "cont1").oneLine().fails(t, 1, "container acct2/cont1 not found")
	// list covers every account unless one is named.
	bc := e.client.ServiceClient().NewContainerClient("cont1").NewBlockBlobClient("b1")
	holdBlobLease(t, bc, -1)
	if rows := e.list(t); len(rows) != 1 {
		t.Fatalf("list: %v", names(rows))
	}
	if rows := e.list(t, "--account", "acct1"); len(rows) != 0 {
		t.Fatalf("list --account acct1: %v", names(rows))
	}

	// A store that does not exist is not created.
	missing := filepath.Join(t.TempDir(), "nope.db")
	runCLI(t, map[string]string{"BLOBGW_METADATA": missing}, "lease", "list").oneLine().fails(t, 1, "metadata: no database at "+missing)
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lease list created %s", missing)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	os.WriteFile(empty, nil, 0o644)
	runCLI(t, map[string]string{"BLOBGW_METADATA": empty}, "lease", "list").oneLine().fails(t, 1, "has no blobgw schema")
}

// setLease rewrites a blob's lease row directly (for states and ages the
// SDK cannot produce quickly).
func (e *leaseEnv) setLease(t *testing.T, cont, name string, fn func(now time.Time, l *leasedb.Lease)) {
	t.Helper()
	ctx := context.Background()
	err := e.db.Store.Update(ctx, func(tx leasedb.Tx) error {
		b, err := tx.Blob(ctx, config.DevAccountName, cont, name, leasedb.LockExclusive)
		if err != nil {
			return err
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		fn(now, &b.Lease)
		return tx.PutBlob(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// (5) --state filters on the effective state, --older-than on the
// acquisition time by the database clock, --container and --account on
// names.
func TestLeaseListFilters(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		ctx := context.Background()
		holdBlobLease(t, e.newBlob(t, "cont1", "leased"), -1)
		brokenHolder, _ := holdBlobLease(t, e.newBlob(t, "cont1", "broken"), -1)
		if _, err := brokenHolder.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Fatal(err)
		}
		breakingHolder, _ := holdBlobLease(t, e.newBlob(t, "cont1", "breaking"), 60)
		if _, err := breakingHolder.BreakLease(ctx, nil); err != nil {
			t.Fatal(err)
		}
		holdBlobLease(t, e.newBlob(t, "cont1", "expired"), 15)
		e.newBlob(t, "cont1", "free")
		e.holdContainerLease(t, "cont2", -1)
		// Age the leases: "leased" was taken two hours ago; "expired" a
		// fixed lease taken 30 minutes ago whose term ended.
		e.setLease(t, "cont1", "leased", func(now time.Time, l *leasedb.Lease) { l.Since = now.Add(-2 * time.Hour) })
		e.setLease(t, "cont1", "expired", func(now time.Time, l *leasedb.Lease) {
			l.Since, l.Expires = now.Add(-30*time.Minute), now.Add(-30*time.Minute+15*time.Second)
		})

		tests := []struct {
			args []string
			want []string
		}{
			{nil, []string{"cont1/breaking", "cont1/broken", "cont1/expired", "cont1/leased", "cont2/"}},
			{[]string{"--state", "leased"}, []string{"cont1/leased", "cont2/"}},
			{[]string{"--state", "breaking"}, []string{"cont1/breaking"}},
			{[]string{"--state", "broken"}, []string{"cont1/broken"}},
			{[]string{"--state", "expired"}, []string{"cont1/expired"}},
			{[]string{"--older-than", "1h"}, []string{"cont1/leased"}},
			{[]string{"--older-than", "20m"}, []string{"cont1/expired", "cont1/leased"}},
			{[]string{"--older-than", "20m", "--state", "expired"}, []string{"cont1/expired"}},
			{[]string{"--older-than", "3h"}, []string{}},
			{[]string{"--container", "cont2"}, []string{"cont2/"}},
			{[]string{"--container", "cont1", "--state", "leased"}, []string{"cont1/leased"}},
			{[]string{"--account", config.DevAccountName, "--state", "broken"}, []string{"cont1/broken"}},
			{[]string{"--account", "acct1"}, []string{}},
		}
		for _, tt := range tests {
			got := names(e.list(t, tt.args...))
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("list %v = %v, want %v", tt.args, got, tt.want)
			}
		}
		exp := find(t, e.list(t, "--state", "expired"), "cont1", "expired")
		if exp.Status != "unlocked" || exp.Duration != "fixed" || exp.DurationSeconds != 15 {
			t.Fatalf("expired lease %+v", exp)
		}
		if out := e.mustLease(t, "list", "--older-than", "3h"); strings.TrimSpace(out) != "no leases found" {
			t.Fatalf("empty table: %q", out)
		}
		e.lease(t, "list", "--state", "breaking").ok(t, "breaks 20", "(in ") // the breaking row's break time
	})
}

// (7) A CLI break racing eight gateway renews has one outcome: every renew
// that committed before the break succeeded, every one after it failed with
// 409 LeaseIsBrokenAndCannotBeRenewed, and the lease ends broken (infinite
// lease) or breaking (fixed lease, natural break) under the holder's id.
func TestLeaseBreakRacesRenews(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		for _, tc := range []struct {
			duration int32
			state    string
		}{{-1, "broken"}, {60, "breaking"}, {-1, "broken"}, {60, "breaking"}} {
			name := "race" + uuid.NewString()[:8]
			bc := e.newBlob(t, "race", name)
			_, id := holdBlobLease(t, bc, tc.duration)

			type attempt struct {
				start, end time.Time
				err        error
			}
			const renewers = 8
			results := make([][]attempt, renewers)
			start := make(chan struct{})
			var wg, warm sync.WaitGroup
			for i := 0; i < renewers; i++ {
				wg.Add(1)
				warm.Add(1)
				go func(i int) {
					defer wg.Done()
					lc, err := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr(id)})
					if err != nil {
						results[i] = append(results[i], attempt{err: err})
						warm.Done()
						return
					}
					<-start
					// Renew until refused, then once more: a refusal
					// must be final. Bounded by time, not by a count of
					// renews: on a loaded machine the CLI's break (a
					// process started, connected and migrated) took
					// longer than 500 renews, which then ended unrefused.
					failures := 0
					until := time.Now().Add(time.Minute)
					for n := 0; failures < 2 && time.Now().Before(until); n++ {
						a := attempt{start: time.Now()}
						_, a.err = lc.RenewLease(context.Background(), nil)
						a.end = time.Now()
						results[i] = append(results[i], a)
						if a.err != nil {
							failures++
						}
						if n == 0 {
							warm.Done()
						}
					}
				}(i)
			}
			close(start)
			// Break while every renewer is renewing.
			warm.Wait()
			breakStart := time.Now()
			brk := e.lease(t, "break", "race", name)
			breakEnd := time.Now()
			wg.Wait()
			brk.ok(t, "-> "+tc.state)
			ok, refused := 0, 0
			var lastOK time.Time // start of the latest successful renew
			for i, rs := range results {
				failed := false
				for _, a := range rs {
					if a.err == nil {
						if a.start.After(lastOK) {
							lastOK = a.start
						}
						if failed {
							t.Fatalf("renewer %d: a renew succeeded after one was refused", i)
						}
						if a.start.After(breakEnd) {
							t.Fatalf("renewer %d: a renew started after the break returned succeeded", i)
						}
						ok++
						continue
					}
					wantSDKErr(t, a.err, 409, "LeaseIsBrokenAndCannotBeRenewed")
					if a.end.Before(breakStart) {
						t.Fatalf("renewer %d: refused before the break started", i)
					}
					failed, refused = true, refused+1
				}
				if !failed {
					t.Fatalf("renewer %d was never refused", i)
				}
			}
			s := e.show(t, "race", name)
			if s.State != tc.state || s.LeaseID != id {
				t.Fatalf("after the race: %+v, want %s with id %s", s, tc.state, id)
			}
			if tc.state == "breaking" && ok > 0 {
				// A natural break ends the term the break found under
				// the lock, so it saw every renew that succeeded: the
				// term of the last one ends no earlier than its start
				// plus the duration (same host clock; 10ms slack for
				// the database's truncation).
				if min := lastOK.Add(time.Duration(tc.duration)*time.Second - 10*time.Millisecond); s.BreakAt.Before(min) {
					t.Fatalf("break_at %v is before the end of a renewed term (%v): the break read a stale lease", s.BreakAt, min)
				}
			}
			if tc.state == "broken" {
				wantSDKErr(t, write(bc, id), 412, "LeaseLost")
			} else if err := write(bc, id); err != nil {
				t.Fatalf("write with the id while breaking: %v", err)
			}
			t.Logf("duration %d: %d renews succeeded, %d refused", tc.duration, ok, refused)
		}
	})
}

// The output of a command is written through the app's writer, so the
// help text is testable too.
func TestLeaseHelp(t *testing.T) {
	runCLI(t, nil, "lease", "release", "--help").ok(t, "CONTAINER [BLOB] --force", "--yes")
	// Help after the arguments too.
	runCLI(t, nil, "lease", "show", "cont1", "--help").ok(t, "CONTAINER [BLOB]")
}
