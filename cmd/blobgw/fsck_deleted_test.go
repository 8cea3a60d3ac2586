package main

import (
	"context"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/config"
	"github.com/blobgw/blobgw/leasedb"
)

// A soft-deleted container's rows are references: fsck reports its
// objects neither unreferenced nor (while present) missing, gc keeps them
// until the retention passes, and then gc purges the container and
// deletes its bytes.
func TestFsckSoftDeletedContainer(t *testing.T) {
	ctx := context.Background()
	e := newFsckEnv(t, "sqlite+disk")
	e.env["BLOBGW_GC_GRACE"] = "0s"
	for _, c := range []string{"long", "brief"} {
		if _, err := e.az.CreateContainer(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.az.UploadBuffer(ctx, c, "a", []byte("bytes of "+c), nil); err != nil {
			t.Fatal(err)
		}
	}
	lost := e.blobKey(t, "long", "a")
	db := &leasedb.DB{Store: e.store}
	if err := db.DeleteContainerRetained(ctx, config.DevAccountName, "long", "", leasedb.Conditions{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	const brief = 2 * time.Second
	if err := db.DeleteContainerRetained(ctx, config.DevAccountName, "brief", "", leasedb.Conditions{}, brief); err != nil {
		t.Fatal(err)
	}
	e.run(t, "gc", "--now").ok(t)
	rep, code := e.fsckJSON(t)
	if code != 0 || rep.Missing != 0 || rep.Unreferenced != 0 || rep.Objects != 2 {
		t.Fatalf("fsck with soft-deleted containers: exit %d, %+v (want 2 objects, none unreferenced)", code, rep)
	}

	time.Sleep(brief + 500*time.Millisecond)
	e.run(t, "gc", "--now").ok(t)
	e.run(t, "gc", "--now").ok(t)
	rep, code = e.fsckJSON(t)
	if code != 0 || rep.Missing != 0 || rep.Unreferenced != 0 || rep.Objects != 1 {
		t.Fatalf("fsck after the brief one expired: exit %d, %+v (want 1 object)", code, rep)
	}

	// Bytes lost under a soft-deleted container are reported like any.
	if err := e.be.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	e.run(t, "fsck").fails(t, 1, "missing: "+config.DevAccountName+"/", "/long/a: bytes of "+lost)
}
