package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/blobgw/blobgw/internal/accounts"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/dbopen"
	"github.com/blobgw/blobgw/leasedb/pgtest"
)

// tryAccount lists containers of account on the gateway at host with key
// (one request, no retries): nil when the key is accepted.
func tryAccount(t *testing.T, host, account, key string) error {
	t.Helper()
	c := sharedKeyClient(t, "http://"+host+"/"+account+"/", account, key)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.NewListContainersPager(nil).NextPage(ctx)
	return err
}

// refused reports whether err is the gateway refusing the credentials (403).
func refused(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == 403
}

// printedKey finds "keyN: VALUE" in a command's output.
func printedKey(t *testing.T, out string, n string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^key` + n + `: (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no key%s in output:\n%s", n, out)
	}
	return m[1]
}

// eventually polls cond every 200 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 15 s: %s", what)
		}
	}
}

// TestAccountKeysReplicas: two `blobgw serve` processes on one Postgres;
// `blobgw account add`, `rotate-key` and `remove` run against the store
// are honoured by both replicas within a few seconds, without a restart:
// the rotated-out key fails afterwards, the new one works, and the other
// key of the account works throughout.
func TestAccountKeysReplicas(t *testing.T) {
	bin := buildBlobgw(t, filepath.Join(t.TempDir(), "blobgw"))
	dsn := pgtest.Start(t)
	dir := t.TempDir()
	var hosts []string
	for i := range 2 {
		c := startServe(t, bin, filepath.Join(dir, "data"+string(rune('0'+i))), "--metadata", dsn)
		u, err := url.Parse(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
	}
	env := map[string]string{"BLOBGW_METADATA": dsn, "BLOBGW_DATA_DIR": filepath.Join(dir, "cli")}
	run := func(args ...string) string {
		t.Helper()
		return runCLI(t, env, append([]string{"account"}, args...)...).ok(t)
	}
	// The dev account was seeded into the empty store by the first start.
	for _, h := range hosts {
		if err := tryAccount(t, h, config.DevAccountName, config.DevAccountKey); err != nil {
			t.Fatalf("dev account on %s: %v", h, err)
		}
	}

	out := run("add", "alpha")
	k1, k2 := printedKey(t, out, "1"), printedKey(t, out, "2")
	if err := tryAccount(t, hosts[1], "alpha", k1); err == nil {
		t.Log("alpha was served at once (refresh raced the add)")
	}
	for _, h := range hosts {
		eventually(t, "alpha added on "+h, func() bool {
			return tryAccount(t, h, "alpha", k1) == nil && tryAccount(t, h, "alpha", k2) == nil
		})
	}
	// list never shows a key.
	runCLI(t, env, "account", "list", "--json").without(k1, k2).ok(t, `"alpha"`)

	// Rotate key2: the old key2 stops working, the new one works, key1
	// works at every step.
	out = run("rotate-key", "alpha", "--key", "2")
	n2 := printedKey(t, out, "2")
	if n2 == k2 {
		t.Fatal("rotation printed the old key")
	}
	eventually(t, "key2 rotation on replica 2", func() bool {
		if err := tryAccount(t, hosts[1], "alpha", k1); err != nil {
			t.Fatalf("key1 failed during the key2 rotation: %v", err)
		}
		return refused(tryAccount(t, hosts[1], "alpha", k2)) && tryAccount(t, hosts[1], "alpha", n2) == nil
	})
	// Then key1, as the documented rotation does; key2 (new) works throughout.
	out = run("rotate-key", "alpha", "--key", "1")
	n1 := printedKey(t, out, "1")
	eventually(t, "key1 rotation on replica 2", func() bool {
		if err := tryAccount(t, hosts[1], "alpha", n2); err != nil {
			t.Fatalf("key2 failed during the key1 rotation: %v", err)
		}
		return refused(tryAccount(t, hosts[1], "alpha", k1)) && tryAccount(t, hosts[1], "alpha", n1) == nil
	})
	if err := tryAccount(t, hosts[0], "alpha", n1); err != nil {
		// Replica 1 refreshes on its own schedule; give it the same time.
		eventually(t, "key1 rotation on replica 1", func() bool { return tryAccount(t, hosts[0], "alpha", n1) == nil })
	}

	// Remove: refused while alpha has a container, then forced.
	cred, _ := azblob.NewSharedKeyCredential("alpha", n1)
	ac, err := azblob.NewClientWithSharedKeyCredential("http://"+hosts[0]+"/alpha/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.CreateContainer(context.Background(), "kept", nil); err != nil {
		t.Fatal(err)
	}
	runCLI(t, env, "account", "remove", "alpha").fails(t, 1, "--force")
	if err := tryAccount(t, hosts[1], "alpha", n1); err != nil {
		t.Fatalf("refused remove changed alpha: %v", err)
	}
	run("remove", "alpha", "--force")
	eventually(t, "alpha removed on replica 2", func() bool { return tryAccount(t, hosts[1], "alpha", n1) != nil })
	if err := tryAccount(t, hosts[1], config.DevAccountName, config.DevAccountKey); err != nil {
		t.Fatalf("dev account after removing alpha: %v", err)
	}
	runCLI(t, env, "account", "rotate-key", "alpha", "--key", "1").fails(t, 1, "no account alpha")
	runCLI(t, env, "account", "rotate-key", config.DevAccountName).fails(t, 2)
}

// TestAccountKeysSeed: serve's start seeds the store from the
// configuration: an absent account is added, a present one is never
// overwritten, and the built-in development account only seeds a store
// holding no account.
func TestAccountKeysSeed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := filepath.Join(t.TempDir(), "meta.db")
	store, err := dbopen.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(accts ...string) *accounts.Table {
		t.Helper()
		cfg := config.Default()
		if len(accts) > 0 {
			var err error
			if cfg.Accounts, err = config.ParseAccounts(accts); err != nil {
				t.Fatal(err)
			}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		tab, err := startAccounts(ctx, cfg, store, log)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	keyOf := func(tab *accounts.Table, name string) []string {
		a, ok := tab.Lookup(name)
		if !ok {
			return nil
		}
		var out []string
		for _, k := range a.Keys {
			out = append(out, base64.StdEncoding.EncodeToString(k))
		}
		return out
	}
	ka, _ := accounts.NewKey()
	kb, _ := accounts.NewKey()
	kc, _ := accounts.NewKey()
	tab := start("alpha:" + ka)
	if got := keyOf(tab, "alpha"); len(got) != 1 || got[0] != ka {
		t.Fatalf("alpha seeded as %v", got)
	}
	if keyOf(tab, config.DevAccountName) != nil {
		t.Fatal("dev account seeded although accounts were configured")
	}
	// The store wins over the configuration; a new configured account joins.
	tab = start("alpha:"+kb, "bravo:"+kb+","+kc)
	if got := keyOf(tab, "alpha"); len(got) != 1 || got[0] != ka {
		t.Fatalf("config overwrote alpha's stored key: %v", got)
	}
	if got := keyOf(tab, "bravo"); len(got) != 2 || got[0] != kb || got[1] != kc {
		t.Fatalf("bravo seeded as %v", got)
	}
	// No account configured: the dev default does not join a non-empty store.
	tab = start()
	if keyOf(tab, config.DevAccountName) != nil {
		t.Fatal("dev default seeded a non-empty store")
	}
	// ... but seeds an empty one.
	store2, err := dbopen.Open(ctx, filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	cfg := config.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tab2, err := startAccounts(ctx, cfg, store2, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := keyOf(tab2, config.DevAccountName); len(got) != 1 || got[0] != config.DevAccountKey {
		t.Fatalf("empty store: dev account %v", got)
	}
	// Every account removed (blobgw account remove): the next start does
	// not seed the development account's published key again, and says
	// that no account exists.
	if err := (&leasedb.DB{Store: store2}).RemoveAccountKeys(ctx, config.DevAccountName, true); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	tab2, err = startAccounts(ctx, cfg, store2, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := tab2.Names(); len(got) != 0 {
		t.Fatalf("emptied store seeded again: %v", got)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "no storage account exists") {
		t.Fatalf("start on an emptied store logged %q, want a warning that no account exists", logged.String())
	}
}

// TestAccountKeysEncrypted: with BLOBGW_KEY_ENCRYPTION_KEY the keys are
// sealed in the store (no key text in the row), served and managed as
// usual; serve with a wrong or missing encryption key refuses to start
// with a clear error, and so do the account commands.
func TestAccountKeysEncrypted(t *testing.T) {
	bin := buildBlobgw(t, filepath.Join(t.TempDir(), "blobgw"))
	dir := t.TempDir()
	dsn := filepath.Join(dir, "meta.db")
	kek := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	wrong := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	env := map[string]string{"BLOBGW_METADATA": dsn, "BLOBGW_DATA_DIR": dir, accounts.EncryptionKeyEnv: kek}
	k1 := printedKey(t, runCLI(t, env, "account", "add", "alpha").ok(t), "1")

	store, err := dbopen.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := (&leasedb.DB{Store: store}).ListAccountKeys(context.Background())
	store.Close()
	if err != nil || len(rows) != 1 {
		t.Fatalf("%v %v", rows, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(k1)
	if !accounts.Sealed(rows[0].Key1) || !accounts.Sealed(rows[0].Key2) || strings.Contains(rows[0].Key1, k1) ||
		strings.Contains(rows[0].Key1, base64.RawStdEncoding.EncodeToString(raw[:30])) {
		t.Fatalf("stored keys are not sealed: %q", rows[0].Key1)
	}
	out := runCLI(t, env, "account", "list", "--json").ok(t)
	var listed []struct {
		Name   string `json:"name"`
		Sealed bool   `json:"sealed"`
	}
	if json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || !listed[0].Sealed {
		t.Fatalf("list:\n%s", out)
	}

	// The right key serves alpha.
	t.Setenv(accounts.EncryptionKeyEnv, kek) // startServe passes the environment on
	c := startServe(t, bin, filepath.Join(dir, "d1"), "--metadata", dsn)
	u, _ := url.Parse(c.URL())
	if err := tryAccount(t, u.Host, "alpha", k1); err != nil {
		t.Fatalf("sealed alpha: %v", err)
	}
	// A wrong key and no key refuse the start, naming the variable.
	for _, tc := range []struct{ env, want string }{
		{accounts.EncryptionKeyEnv + "=" + wrong, "does not open"},
		{accounts.EncryptionKeyEnv + "=", "are encrypted"},
		{accounts.EncryptionKeyEnv + "=c2hvcnQ=", "base64 of 32 bytes"},
	} {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "d2"), "--metadata", dsn)
		cmd.Env = append(os.Environ(), "BLOBGW_CONFIG=", tc.env)
		done := make(chan struct{})
		var outb []byte
		var runErr error
		go func() { outb, runErr = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s: serve did not refuse to start", tc.env)
		}
		code := -1 // not an exit: the process did not run
		var ee *exec.ExitError
		if runErr == nil {
			code = 0
		} else if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		cliRun{args: cmd.Args[1:], code: code, out: string(outb)}.about(fmt.Sprintf("%s (%v)", tc.env, runErr)).without(k1).
			fails(t, 2, tc.want, accounts.EncryptionKeyEnv)
	}
	env[accounts.EncryptionKeyEnv] = wrong
	runCLI(t, env, "account", "rotate-key", "alpha", "--key", "1").fails(t, 2, "does not open")
}

// TestAccountAddRefusesBadName: account add applies Azure's account name
// rule (config.ValidAccountName) before it stores anything: exit 2.
func TestAccountAddRefusesBadName(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"BLOBGW_METADATA": filepath.Join(dir, "meta.db"), "BLOBGW_DATA_DIR": dir}
	for _, name := range []string{"ab", "Alpha", "al_pha", strings.Repeat("a", 25)} {
		runCLI(t, env, "account", "add", name).fails(t, 2, "is not a valid account name")
	}
	runCLI(t, env, "account", "list", "--json").without("alpha", "Alpha").ok(t)
}

// TestAccountKeysUsage: the account key commands count their arguments
// as the lease commands do (leaseAction): a wrong count is exit 2 with the
// usage line, before any store is opened, and one without arguments says
// so.
func TestAccountKeysUsage(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"BLOBGW_METADATA": filepath.Join(dir, "meta.db"), "BLOBGW_DATA_DIR": dir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "extra"}, "usage: blobgw account list (no arguments)"},
		{[]string{"add"}, "usage: blobgw account add ACCOUNT"},
		{[]string{"add", "a", "b"}, "usage: blobgw account add ACCOUNT"},
		{[]string{"remove"}, "usage: blobgw account remove ACCOUNT"},
	} {
		runCLI(t, env, append([]string{"account"}, tc.args...)...).fails(t, 2, tc.want)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.db")); !os.IsNotExist(err) {
		t.Errorf("a refused command opened the store (%v)", err)
	}
}
