package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// terminate stops a process a test started: SIGTERM, then SIGKILL when it
// has not exited (closed exited) within grace, and waits for it to exit
// either way.
func terminate(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		p.Kill()
		<-exited
	}
}

// sharedKeyClient is an azblob client of the account at serviceURL (the
// account's URL: ".../account/") signing with key, that never retries: a
// test sees each answer the gateway gives.
func sharedKeyClient(t testing.TB, serviceURL, account, key string) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(serviceURL, cred,
		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
