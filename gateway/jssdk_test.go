package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobgw/blobgw/internal/config"
)

// TestJSSDKPagesBatch runs the JavaScript SDK (@azure/storage-blob, the
// npm package of the browser test) under Node with Shared Key against the
// gateway (testdata/browser/pages_batch.mjs): a page blob created, written,
// cleared, listed and downloaded, and BlobBatchClient's deleteBlobs and
// setBlobsAccessTier at service and container scope. The script reports
// what the SDK saw; the Go SDK checks what the gateway stored.
func TestJSSDKPagesBatch(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		needTool(t, "node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "@azure", "storage-blob")); err != nil {
		needTool(t, "@azure/storage-blob is not installed in %s (npm ci there)", browserDir)
	}
	b := setup(t, "sqlite")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(browserDir, "pages_batch.mjs"), b.serviceURL(0), config.DevAccountName, config.DevAccountKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "RESULT ") {
			line = l
		}
	}
	res, ok := strings.CutPrefix(line, "RESULT OK ")
	if !ok {
		t.Fatalf("the script reported %q; output:\n%s", line, out)
	}
	type batchRes struct {
		Succeeded int      `json:"succeeded"`
		Failed    int      `json:"failed"`
		Statuses  []int    `json:"statuses"`
		Codes     []string `json:"codes"`
	}
	var got struct {
		Pages struct {
			Ranges         [][2]int64 `json:"ranges"`
			BlobType       string     `json:"blobType"`
			Length         int64      `json:"length"`
			SequenceNumber int64      `json:"sequenceNumber"`
			BodyMatches    bool       `json:"bodyMatches"`
		} `json:"pages"`
		Batch struct {
			ServiceDelete   batchRes `json:"serviceDelete"`
			ServiceTier     batchRes `json:"serviceTier"`
			ContainerDelete batchRes `json:"containerDelete"`
			ContainerTier   batchRes `json:"containerTier"`
		} `json:"batch"`
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatalf("result %q: %v", res, err)
	}
	p := got.Pages
	if !slices.Equal(p.Ranges, [][2]int64{{1024, 1535}, {2048, 3071}, {6144, 6655}}) || p.BlobType != "PageBlob" ||
		p.Length != 8192 || p.SequenceNumber != 3 || !p.BodyMatches {
		t.Fatalf("page blob through the JavaScript SDK: %+v", p)
	}
	pb := pageClient(b.client, "jspages", "disk.vhd")
	if got := pageRanges(t, pb, nil); !slices.Equal(got, p.Ranges) {
		t.Fatalf("the Go SDK sees page ranges %v", got)
	}

	bt := got.Batch
	check := func(what string, r batchRes, statuses []int, codes []string) {
		t.Helper()
		ok := 0
		for _, s := range statuses {
			if s < 300 {
				ok++
			}
		}
		if !slices.Equal(r.Statuses, statuses) || !slices.Equal(r.Codes, codes) || r.Succeeded != ok || r.Failed != len(statuses)-ok {
			t.Fatalf("%s: %+v, want statuses %v codes %v", what, r, statuses, codes)
		}
	}
	check("service-scope deleteBlobs", bt.ServiceDelete, []int{202, 202, 404}, []string{"", "", "BlobNotFound"})
	check("service-scope setBlobsAccessTier", bt.ServiceTier, []int{200, 200}, []string{"", ""})
	check("container-scope deleteBlobs", bt.ContainerDelete, []int{202}, []string{""})
	check("container-scope setBlobsAccessTier", bt.ContainerTier, []int{200, 404}, []string{"", "BlobNotFound"})
	cc := b.client.ServiceClient().NewContainerClient("jsbatch")
	for _, name := range []string{"s1", "s2", "c1"} {
		if _, err := cc.NewBlobClient(name).GetProperties(context.Background(), nil); statusOf(err) != 404 {
			t.Fatalf("%s deleted by a batch is still there (status %d)", name, statusOf(err))
		}
	}
	for name, tier := range map[string]string{"t1": "Cool", "t2": "Cool", "u1": "Archive"} {
		props, err := cc.NewBlobClient(name).GetProperties(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if props.AccessTier == nil || *props.AccessTier != tier {
			t.Fatalf("%s: tier %v after a batch, want %s", name, props.AccessTier, tier)
		}
	}
}
