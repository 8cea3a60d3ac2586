package main

import (
	"context"
	"path/filepath"
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
		show := func() cliRun {
			t.Helper()
			return runCLI(t, e.env, "account", "show", acct)
		}
		show().ok(t, "versioning: off")
		if v := uploadVersion(t, e.client, "b"); v != "" {
			t.Fatalf("versioning off: version id %s", v)
		}
		runCLI(t, e.env, "account", "versioning", acct, "on").ok(t, "on")
		show().ok(t, "versioning: on")
		if v := uploadVersion(t, e.client, "b"); v == "" {
			t.Fatal("versioning on: no version id")
		}
		for _, args := range [][]string{
			{"account", "versioning", acct, "maybe"},
			{"account", "versioning", "nosuchaccount", "off"},
			{"account", "versioning", acct},
			{"account", "show"},
		} {
			runCLI(t, e.env, args...).fails(t, 2)
		}
		show().ok(t, "versioning: on") // a refused command changed nothing
		runCLI(t, e.env, "account", "versioning", acct, "off").ok(t)
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
	runCLI(t, env, "account", "versioning", config.DevAccountName, "off").ok(t)
	if v := uploadVersion(t, client, "b"); v != "" {
		t.Fatalf("after account versioning off: version id %s", v)
	}
}
