package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/blobgw/blobgw/internal/config"
)

// uploadVersion uploads to vers/name and returns the x-ms-version-id ("" when
// none).
func uploadVersion(t *testing.T, client *azblob.Client, name string) string {
	t.Helper()
	resp, err := client.UploadBuffer(context.Background(), "vers", name, []byte("data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.VersionID == nil {
		return ""
	}
	return *resp.VersionID
}

// TestAccountVersioning: `blobgw account show` prints the setting (off by
// default), `account versioning ACCOUNT on|off` changes it in the store
// and a running gateway applies it at its next write (x-ms-version-id
// returned or not); a bad value, an unconfigured account or a missing
// argument exit 2 and change nothing.
func TestAccountVersioning(t *testing.T) {
	forEachLeaseStore(t, func(t *testing.T, e *leaseEnv) {
		if _, err := e.client.CreateContainer(context.Background(), "vers", nil); err != nil {
			t.Fatal(err)
		}
		acct := config.DevAccountName
		show := func() string {
			t.Helper()
			out, code := runApp(t, e.env, "account", "show", acct)
			if code != 0 {
				t.Fatalf("account show: exit %d\n%s", code, out)
			}
			return out
		}
		if out := show(); !strings.Contains(out, "versioning: off") {
			t.Fatalf("account show before any setting:\n%s", out)
		}
		if v := uploadVersion(t, e.client, "b"); v != "" {
			t.Fatalf("versioning off: version id %s", v)
		}
		if out, code := runApp(t, e.env, "account", "versioning", acct, "on"); code != 0 || !strings.Contains(out, "on") {
			t.Fatalf("account versioning on: exit %d\n%s", code, out)
		}
		if out := show(); !strings.Contains(out, "versioning: on") {
			t.Fatalf("account show after on:\n%s", out)
		}
		if v := uploadVersion(t, e.client, "b"); v == "" {
			t.Fatal("versioning on: no version id")
		}
		for _, args := range [][]string{
			{"account", "versioning", acct, "maybe"},
			{"account", "versioning", "nosuchaccount", "off"},
			{"account", "versioning", acct},
			{"account", "show"},
		} {
			if out, code := runApp(t, e.env, args...); code != 2 {
				t.Fatalf("%s: exit %d, want 2\n%s", strings.Join(args, " "), code, out)
			}
		}
		if out := show(); !strings.Contains(out, "versioning: on") {
			t.Fatalf("a refused command changed the setting:\n%s", out)
		}
		if out, code := runApp(t, e.env, "account", "versioning", acct, "off"); code != 0 {
			t.Fatalf("account versioning off: exit %d\n%s", code, out)
		}
		if v := uploadVersion(t, e.client, "b"); v != "" {
			t.Fatalf("versioning off again: version id %s", v)
		}
	})
}

// TestServeVersioning: `serve --versioning` turns versioning on for the
// configured accounts at start; `account versioning ... off` run beside
// the serving process takes effect at its next write, without a restart.
func TestServeVersioning(t *testing.T) {
	dir := t.TempDir()
	bin := buildBlobgw(t, filepath.Join(dir, "blobgw"))
	dataDir := filepath.Join(dir, "data")
	client := startServe(t, bin, dataDir, "--versioning")
	if _, err := client.CreateContainer(context.Background(), "vers", nil); err != nil {
		t.Fatal(err)
	}
	if v := uploadVersion(t, client, "b"); v == "" {
		t.Fatal("serve --versioning: no version id")
	}
	env := map[string]string{"BLOBGW_DATA_DIR": dataDir}
	if out, code := runApp(t, env, "account", "versioning", config.DevAccountName, "off"); code != 0 {
		t.Fatalf("account versioning off: exit %d\n%s", code, out)
	}
	if v := uploadVersion(t, client, "b"); v != "" {
		t.Fatalf("after account versioning off: version id %s", v)
	}
}
