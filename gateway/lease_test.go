package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"
)

func blockClient(c *azblob.Client, cont, name string) *blockblob.Client {
	return c.ServiceClient().NewContainerClient(cont).NewBlockBlobClient(name)
}

func blobLease(t *testing.T, bc *blockblob.Client, id string) *lease.BlobClient {
	t.Helper()
	lc, err := lease.NewBlobClient(bc, &lease.BlobClientOptions{LeaseID: to.Ptr(id)})
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

func withLease(id string) *blob.AccessConditions {
	return &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(id)}}
}

func TestBlobLeaseLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "leases")
		up, err := b.client.UploadBuffer(ctx, "leases", "x", []byte("v1"), nil)
		if err != nil {
			t.Fatal(err)
		}
		bc := blockClient(b.client, "leases", "x")
		idA, idB := uuid.NewString(), uuid.NewString()
		la := blobLease(t, bc, idA)
		acq, err := la.AcquireLease(ctx, 15, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *acq.LeaseID != idA || *acq.ETag != *up.ETag {
			t.Fatalf("acquire: id %v etag %v (want unchanged %v)", *acq.LeaseID, *acq.ETag, *up.ETag)
		}
		p, err := bc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.LeaseState != lease.StateTypeLeased || *p.LeaseStatus != lease.StatusTypeLocked || *p.LeaseDuration != lease.DurationTypeFixed {
			t.Fatalf("leased blob props: %v %v %v", *p.LeaseState, *p.LeaseStatus, *p.LeaseDuration)
		}
		// Another acquire with a different id: 409.
		_, err = blobLease(t, bc, idB).AcquireLease(ctx, 15, nil)
		wantErr(t, err, 409, "LeaseAlreadyPresent")
		// Writes: without id, wrong id, right id.
		_, err = bc.Upload(ctx, nopSeeker("v2"), nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: withLease(idB)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		_, err = bc.Delete(ctx, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if _, err := bc.Upload(ctx, nopSeeker("v2"), &blockblob.UploadOptions{AccessConditions: withLease(idA)}); err != nil {
			t.Fatal(err)
		}
		p, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: withLease(idA)})
		if err != nil || *p.LeaseState != lease.StateTypeLeased {
			t.Fatalf("lease must survive an overwrite with its id: %v %v", err, p.LeaseState)
		}
		// A read with a wrong id is refused; without id it proceeds.
		_, err = bc.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: withLease(idB)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		etag := *p.ETag
		// Renew, change, and lease ops never move the ETag.
		rn, err := la.RenewLease(ctx, nil)
		if err != nil || *rn.LeaseID != idA || *rn.ETag != etag {
			t.Fatalf("renew: %v %v", err, rn)
		}
		ch, err := la.ChangeLease(ctx, idB, nil)
		if err != nil || *ch.LeaseID != idB || *ch.ETag != etag {
			t.Fatalf("change: %v %v", err, ch)
		}
		lb := blobLease(t, bc, idB)
		// The SDK's client follows its own change; a fresh one holds idA.
		la = blobLease(t, bc, idA)
		_, err = la.RenewLease(ctx, nil)
		wantErr(t, err, 409, "LeaseIdMismatchWithLeaseOperation")
		rl, err := lb.ReleaseLease(ctx, nil)
		if err != nil || *rl.ETag != etag {
			t.Fatalf("release: %v", err)
		}
		if p, err = bc.GetProperties(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if *p.LeaseState != lease.StateTypeAvailable || *p.LeaseStatus != lease.StatusTypeUnlocked {
			t.Fatalf("after release: %v", *p.LeaseState)
		}
		_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: withLease(idB)})
		wantErr(t, err, 412, "LeaseNotPresentWithBlobOperation")

		// Lease Blob: breaking an infinite lease with no x-ms-lease-break-period
		// breaks it at once (202, x-ms-lease-time 0).
		if _, err := la.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		if p, err = bc.GetProperties(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if *p.LeaseDuration != lease.DurationTypeInfinite {
			t.Fatalf("duration %v", *p.LeaseDuration)
		}
		br, err := la.BreakLease(ctx, nil)
		if err != nil || *br.LeaseTime != 0 {
			t.Fatalf("break: %v %v", err, br.LeaseTime)
		}
		if p, err = bc.GetProperties(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if *p.LeaseState != lease.StateTypeBroken {
			t.Fatalf("after break: %v", *p.LeaseState)
		}
		// A write with the old id on a broken lease: LeaseLost; without id it
		// proceeds and clears the lease.
		_, err = bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: withLease(idA)})
		wantErr(t, err, 412, "LeaseLost")
		if _, err := bc.SetMetadata(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
		if p, err = bc.GetProperties(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if *p.LeaseState != lease.StateTypeAvailable {
			t.Fatalf("a write without id must clear a broken lease: %v", *p.LeaseState)
		}

		// Lease Blob: a 60 s lease broken with x-ms-lease-break-period 10 is
		// breaking: a new acquire is refused until the period ends.
		if _, err := la.AcquireLease(ctx, 60, nil); err != nil {
			t.Fatal(err)
		}
		br, err = la.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(10))})
		if err != nil || *br.LeaseTime != 10 {
			t.Fatalf("break 10: %v %v", err, br.LeaseTime)
		}
		_, err = lb.AcquireLease(ctx, 15, nil)
		wantErr(t, err, 409, "LeaseAlreadyPresent")
		_, err = la.AcquireLease(ctx, 15, nil)
		wantErr(t, err, 409, "LeaseIsBreakingAndCannotBeAcquired")
		_, err = bc.SetMetadata(ctx, nil, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		if _, err := bc.SetMetadata(ctx, nil, &blob.SetMetadataOptions{AccessConditions: withLease(idA)}); err != nil {
			t.Fatal(err)
		}
		// Invalid input.
		_, err = blobLease(t, bc, uuid.NewString()).AcquireLease(ctx, 10, nil)
		wantErr(t, err, 400, "InvalidHeaderValue")
		_, err = blobLease(t, blockClient(b.client, "leases", "nosuch"), idA).AcquireLease(ctx, 15, nil)
		wantErr(t, err, 404, "BlobNotFound")
	})
}

func TestContainerLease(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "leased")
		cc := b.client.ServiceClient().NewContainerClient("leased")
		before, err := cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		idA := uuid.NewString()
		lc, err := lease.NewContainerClient(cc, &lease.ContainerClientOptions{LeaseID: to.Ptr(idA)})
		if err != nil {
			t.Fatal(err)
		}
		acq, err := lc.AcquireLease(ctx, -1, nil)
		if err != nil || *acq.LeaseID != idA || *acq.ETag != *before.ETag {
			t.Fatalf("acquire: %v", err)
		}
		p, err := cc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		if *p.LeaseState != lease.StateTypeLeased || *p.LeaseDuration != lease.DurationTypeInfinite {
			t.Fatalf("container lease state %v", *p.LeaseState)
		}
		// C18: delete without id / with a wrong id refused; metadata without id allowed.
		_, err = cc.Delete(ctx, nil)
		wantErr(t, err, 412, "LeaseIdMissing")
		_, err = cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: to.Ptr(uuid.NewString())}}})
		wantErr(t, err, 412, "LeaseIdMismatchWithContainerOperation")
		if _, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"a": to.Ptr("b")}}); err != nil {
			t.Fatal(err)
		}
		// Blob operations inside are unaffected by the container lease.
		if _, err := b.client.UploadBuffer(ctx, "leased", "f", []byte("f"), nil); err != nil {
			t.Fatal(err)
		}
		pager := b.client.NewListContainersPager(&azblob.ListContainersOptions{Prefix: to.Ptr("leased")})
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.ContainerItems) != 1 || *page.ContainerItems[0].Properties.LeaseState != lease.StateTypeLeased {
			t.Fatalf("list containers lease state: %v", err)
		}
		if _, err := cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: to.Ptr(idA)}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLeaseAcquireRace: 32 goroutines over three gateways race to acquire
// with distinct proposed ids: exactly one 201, the rest 409
// LeaseAlreadyPresent.
func TestLeaseAcquireRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "race")
		if _, err := b.client.UploadBuffer(ctx, "race", "x", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		clients := []*azblob.Client{b.clientFor(t, 0), b.clientFor(t, 1), b.clientFor(t, 2)}
		const n = 32
		errs := make([]error, n)
		ids := make([]string, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			ids[i] = uuid.NewString()
			lc := blobLease(t, blockClient(clients[i%3], "race", "x"), ids[i])
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				_, errs[i] = lc.AcquireLease(ctx, 30, nil)
			}(i)
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("two acquires won: %d and %d", winner, i)
				}
				winner = i
				continue
			}
			if statusOf(err) != 409 || codeOf(err) != "LeaseAlreadyPresent" {
				t.Fatalf("acquire %d: %v", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no acquire won")
		}
		// The lease recorded is the winner's: a write with its id works.
		if _, err := blockClient(b.client, "race", "x").Upload(ctx, nopSeeker("w"), &blockblob.UploadOptions{AccessConditions: withLease(ids[winner])}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLeaseHolderExclusive: the holder writes while 8 others without the id
// try to write: every one of theirs is 412 LeaseIdMissing and the holder's
// content is what remains.
func TestLeaseHolderExclusive(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind, setupOpts{replicas: 3})
		ctx := context.Background()
		createContainers(t, b.client, "excl")
		if _, err := b.client.UploadBuffer(ctx, "excl", "x", []byte("start"), nil); err != nil {
			t.Fatal(err)
		}
		id := uuid.NewString()
		if _, err := blobLease(t, blockClient(b.client, "excl", "x"), id).AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		const others, rounds = 8, 10
		var wg sync.WaitGroup
		errc := make(chan error, others*rounds+rounds)
		for o := 0; o < others; o++ {
			wg.Add(1)
			go func(o int) {
				defer wg.Done()
				bc := blockClient(b.clientFor(t, o%3), "excl", "x")
				for r := 0; r < rounds; r++ {
					_, err := bc.Upload(ctx, nopSeeker(fmt.Sprintf("intruder %d/%d", o, r)), nil)
					if statusOf(err) != 412 || codeOf(err) != "LeaseIdMissing" {
						errc <- fmt.Errorf("intruder %d write %d: %v", o, r, err)
					}
				}
			}(o)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc := blockClient(b.client, "excl", "x")
			for r := 0; r < rounds; r++ {
				if _, err := bc.Upload(ctx, nopSeeker(fmt.Sprintf("holder %d", r)), &blockblob.UploadOptions{AccessConditions: withLease(id)}); err != nil {
					errc <- fmt.Errorf("holder write %d: %v", r, err)
				}
			}
		}()
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if got := string(download(t, b.client, "excl", "x")); got != fmt.Sprintf("holder %d", rounds-1) {
			t.Fatalf("content %q is not the holder's last write", got)
		}
	})
}

// TestLeaseRealExpiry uses real time once: a 15 s lease lapses, a new id
// acquires, the old holder is refused (C5, C7).
func TestLeaseRealExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 16 s")
	}
	forEachStore(t, func(t *testing.T, kind string) {
		t.Parallel()
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "expiry")
		for _, n := range []string{"a", "b"} {
			if _, err := b.client.UploadBuffer(ctx, "expiry", n, []byte(n), nil); err != nil {
				t.Fatal(err)
			}
		}
		idA, idB := uuid.NewString(), uuid.NewString()
		la := blobLease(t, blockClient(b.client, "expiry", "a"), idA)
		la2 := blobLease(t, blockClient(b.client, "expiry", "b"), idA)
		if _, err := la.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := la2.AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(16 * time.Second)
		p, err := blockClient(b.client, "expiry", "a").GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("Get Properties: %v", err)
		}
		if *p.LeaseState != lease.StateTypeExpired || *p.LeaseStatus != lease.StatusTypeUnlocked {
			t.Fatalf("after 16 s: %v %v", *p.LeaseState, *p.LeaseStatus)
		}
		// C5: a new id acquires; the old holder's write is refused.
		if _, err := blobLease(t, blockClient(b.client, "expiry", "a"), idB).AcquireLease(ctx, 15, nil); err != nil {
			t.Fatal(err)
		}
		_, err = blockClient(b.client, "expiry", "a").Upload(ctx, nopSeeker("old holder"), &blockblob.UploadOptions{AccessConditions: withLease(idA)})
		wantErr(t, err, 412, "LeaseIdMismatchWithBlobOperation")
		// C7: a write without id clears the expired lease; renew A then fails.
		if _, err := blockClient(b.client, "expiry", "b").Upload(ctx, nopSeeker("anyone"), nil); err != nil {
			t.Fatal(err)
		}
		_, err = la2.RenewLease(ctx, nil)
		wantErr(t, err, 409, "LeaseIdMismatchWithLeaseOperation")
	})
}

// TestPutAndRelease covers blobgw's x-ms-lease-action extension on Put Blob.
func TestPutAndRelease(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		b := setup(t, kind)
		ctx := context.Background()
		createContainers(t, b.client, "par")
		put := func(body string, hdr map[string]string) *http.Response {
			h := map[string]string{"x-ms-blob-type": "BlockBlob"}
			for k, v := range hdr {
				h[k] = v
			}
			resp, _ := b.do(t, "PUT", "par/x", body, h)
			return resp
		}
		state := func() lease.StateType {
			p, err := blockClient(b.client, "par", "x").GetProperties(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			return *p.LeaseState
		}
		id := uuid.NewString()
		// acquire: write and take the lease in one commit.
		resp := put("one", map[string]string{"x-ms-lease-action": "acquire", "x-ms-proposed-lease-id": id, "x-ms-lease-duration": "-1"})
		if resp.StatusCode != 201 || resp.Header.Get("x-ms-lease-id") != id || state() != lease.StateTypeLeased {
			t.Fatalf("put+acquire: %d %q %v", resp.StatusCode, resp.Header.Get("x-ms-lease-id"), state())
		}
		// Others are locked out; acquire-release without the id too.
		wantStatus(t, put("intruder", nil), 412, "LeaseIdMissing", "intruder")
		if resp := put("intruder", map[string]string{"x-ms-lease-action": "acquire-release"}); resp.StatusCode != 412 {
			t.Fatalf("acquire-release on a leased blob without id: %d", resp.StatusCode)
		}
		// release: write with the id, then release, in one commit.
		if resp := put("two", map[string]string{"x-ms-lease-action": "release", "x-ms-lease-id": id}); resp.StatusCode != 201 || state() != lease.StateTypeAvailable {
			t.Fatalf("put+release: %d %v", resp.StatusCode, state())
		}
		if got := string(download(t, b.client, "par", "x")); got != "two" {
			t.Fatalf("content %q", got)
		}
		// acquire-release on a free blob: written, no lease left.
		if resp := put("three", map[string]string{"x-ms-lease-action": "acquire-release"}); resp.StatusCode != 201 || state() != lease.StateTypeAvailable {
			t.Fatalf("acquire-release: %d %v", resp.StatusCode, state())
		}
		// Bad input.
		wantStatus(t, put("x", map[string]string{"x-ms-lease-action": "release"}), 400, "MissingRequiredHeader", "release without id")
		wantStatus(t, put("x", map[string]string{"x-ms-lease-action": "steal"}), 400, "InvalidHeaderValue", "bad action")
		if resp := put("x", map[string]string{"x-ms-lease-action": "acquire", "x-ms-lease-duration": "5"}); resp.StatusCode != 400 {
			t.Fatalf("bad duration: %d", resp.StatusCode)
		}
		if got := string(download(t, b.client, "par", "x")); got != "three" {
			t.Fatalf("refused writes changed the content: %q", got)
		}
	})
}

// TestAppendPutAndRelease: the put-and-release extension on Append Block.
func TestAppendPutAndRelease(t *testing.T) {
	b := setup(t, "sqlite")
	ctx := context.Background()
	createContainers(t, b.client, "apr")
	ab := b.client.ServiceClient().NewContainerClient("apr").NewAppendBlobClient("log")
	if _, err := ab.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	appendRaw := func(body string, hdr map[string]string) *http.Response {
		resp, _ := b.do(t, "PUT", "apr/log?comp=appendblock", body, hdr)
		return resp
	}
	id := uuid.NewString()
	resp := appendRaw("a;", map[string]string{"x-ms-lease-action": "acquire", "x-ms-proposed-lease-id": id, "x-ms-lease-duration": "30"})
	if resp.StatusCode != 201 || resp.Header.Get("x-ms-lease-id") != id {
		t.Fatalf("append+acquire: %d %q", resp.StatusCode, resp.Header.Get("x-ms-lease-id"))
	}
	wantStatus(t, appendRaw("intruder;", nil), 412, "LeaseIdMissing", "append without id on a leased blob")
	if resp := appendRaw("b;", map[string]string{"x-ms-lease-action": "release", "x-ms-lease-id": id}); resp.StatusCode != 201 {
		t.Fatalf("append+release: %d %s", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
	p, err := ab.GetProperties(ctx, nil)
	if err != nil {
		t.Fatalf("Get Properties: %v", err)
	}
	if *p.LeaseState != lease.StateTypeAvailable {
		t.Fatalf("after append+release: %v", *p.LeaseState)
	}
	if got := string(download(t, b.client, "apr", "log")); got != "a;b;" {
		t.Fatalf("content %q", got)
	}
}
