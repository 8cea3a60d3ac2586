package main

// Data migration: `blobgw import azure` copies containers and blobs from any
// Azure Blob endpoint into a gateway; `blobgw export s3` writes a gateway's
// blobs out as plain S3 objects. Both are clients of HTTP endpoints, stream
// every object, verify each copy, print progress, and are idempotent: a
// rerun skips what an earlier (possibly interrupted) run finished.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/blobgw/blobgw/internal/config"
	"github.com/urfave/cli/v2"
)

// importETagKey is the destination metadata key that records the source
// ETag a blob was copied from; with size and MD5 it marks a finished copy.
const importETagKey = "blobgwimportetag"

// exportETagKey is the S3 user metadata key recording the gateway ETag.
const exportETagKey = "blobgw-etag"

const migrateBlockSize = 4 << 20

// appendBlockSize is the most an imported append blob gets per Append
// Block. The gateway (and Azure from version 2022-11-02) takes up to 100
// MiB, but 4 MiB is what every version takes (Append Block), so any
// destination accepts it, and it is the buffer a worker holds for a block
// blob as well. 50,000 such blocks cover Azure's largest append blob.
const appendBlockSize = 4 << 20

func defaultGatewayURL() string {
	return "http://127.0.0.1:10000/" + config.DevAccountName + "/"
}

// azureClientFlags are the flags naming one Azure Blob endpoint.
func azureClientFlags(prefix, role, defURL string, defAccount bool) []cli.Flag {
	acct, key := "", ""
	if defAccount {
		acct, key = config.DevAccountName, config.DevAccountKey
	}
	return []cli.Flag{
		&cli.StringFlag{Name: prefix + "-url", Value: defURL, Usage: role + ": service or container URL (a SAS query string authorises it)"},
		&cli.StringFlag{Name: prefix + "-connection-string", Usage: role + ": connection string (instead of the URL)"},
		&cli.StringFlag{Name: prefix + "-account", Value: acct, Usage: role + ": account name for Shared Key"},
		&cli.StringFlag{Name: prefix + "-key", Value: key, DefaultText: defKeyText(defAccount), Usage: role + ": account key for Shared Key"},
	}
}

func defKeyText(defAccount bool) string {
	if defAccount {
		return "the dev account's published key"
	}
	return ""
}

// rawHTTP is the HTTP client of every Azure endpoint the migration commands
// talk to. Go's transport asks for gzip on its own and then hands back the
// body decompressed; a blob stored with Content-Encoding: gzip (a common way
// to serve pre-compressed files) would be copied inflated under a header
// that says it is compressed, and fail the size check. With compression
// disabled the bytes arrive exactly as stored.
var rawHTTP = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	// --parallel blobs, each with up to two block uploads in flight.
	tr.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: tr}
}()

// azureClientOptions are the client options of the migration commands.
func azureClientOptions() policy.ClientOptions {
	return policy.ClientOptions{Transport: rawHTTP}
}

// azureClient builds a service client for the endpoint named by the flags
// with prefix, and returns the container a container URL names ("" for a
// service URL).
func azureClient(c *cli.Context, prefix string) (*service.Client, string, error) {
	opts := &service.ClientOptions{ClientOptions: azureClientOptions()}
	if cs := c.String(prefix + "-connection-string"); cs != "" {
		cl, err := service.NewClientFromConnectionString(cs, opts)
		return cl, "", err
	}
	raw := c.String(prefix + "-url")
	if raw == "" {
		return nil, "", fmt.Errorf("--%s-url or --%s-connection-string is required", prefix, prefix)
	}
	parts, err := azblob.ParseURL(raw)
	if err != nil {
		return nil, "", fmt.Errorf("--%s-url: %w", prefix, err)
	}
	cont := parts.ContainerName
	parts.ContainerName, parts.BlobName = "", ""
	svcURL := parts.String()
	if !strings.HasSuffix(strings.SplitN(svcURL, "?", 2)[0], "/") {
		if i := strings.IndexByte(svcURL, '?'); i >= 0 {
			svcURL = svcURL[:i] + "/" + svcURL[i:]
		} else {
			svcURL += "/"
		}
	}
	sasGiven := parts.SAS.Signature() != ""
	acct, key := c.String(prefix+"-account"), c.String(prefix+"-key")
	if !sasGiven && acct != "" && key != "" {
		cred, err := service.NewSharedKeyCredential(acct, key)
		if err != nil {
			return nil, "", fmt.Errorf("--%s-key: %w", prefix, err)
		}
		cl, err := service.NewClientWithSharedKeyCredential(svcURL, cred, opts)
		return cl, cont, err
	}
	cl, err := service.NewClientWithNoCredential(svcURL, opts)
	return cl, cont, err
}

// interruptible cancels on Ctrl-C or SIGTERM as well as with the parent.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func importCommand() *cli.Command {
	flags := append(azureClientFlags("source", "source", "", false), azureClientFlags("dest", "destination gateway", defaultGatewayURL(), true)...)
	flags = append(flags,
		&cli.StringFlag{Name: "container", Usage: "copy only this container (default: every container)"},
		&cli.IntFlag{Name: "parallel", Value: 4, Usage: "blobs copied at a time"},
	)
	return &cli.Command{
		Name:  "import",
		Usage: "copy data into the gateway",
		Subcommands: []*cli.Command{{
			Name:   "azure",
			Usage:  "copy containers and blobs from an Azure Blob endpoint (Azure, Azurite, another blobgw) into the gateway; reruns skip finished blobs",
			Flags:  flags,
			Action: importAzure,
		}, importS3Command()},
	}
}

func exportCommand() *cli.Command {
	flags := append(azureClientFlags("source", "source gateway", defaultGatewayURL(), true),
		&cli.StringFlag{Name: "container", Usage: "export only this container (default: every container)"},
		&cli.StringFlag{Name: "endpoint", Usage: "S3 endpoint URL (empty: AWS)"},
		&cli.StringFlag{Name: "region", Value: "us-east-1", Usage: "S3 region"},
		&cli.StringFlag{Name: "bucket", Usage: "S3 bucket", Required: true},
		&cli.StringFlag{Name: "prefix", Usage: "key prefix put before container/blob"},
		&cli.StringFlag{Name: "access-key", Usage: "S3 access key (empty: the AWS default chain)"},
		&cli.StringFlag{Name: "secret-key", Usage: "S3 secret key"},
		&cli.BoolFlag{Name: "path-style", Usage: "path-style addressing (MinIO)"},
		&cli.IntFlag{Name: "parallel", Value: 4, Usage: "objects copied at a time"},
	)
	return &cli.Command{
		Name:  "export",
		Usage: "copy the gateway's data out",
		Subcommands: []*cli.Command{{
			Name:   "s3",
			Usage:  "write blobs as plain S3 objects named <prefix>container/blob; reruns skip finished objects",
			Flags:  flags,
			Action: exportS3,
		}},
	}
}

// migJob is one blob to copy.
type migJob struct {
	container string
	name      string
	size      int64
	etag      string
	md5       []byte
	props     *container.BlobProperties
	metadata  map[string]*string
	// tags are the blob index tags the listing returned; tagsKnown is
	// false when the source would not list them (then neither the copy
	// nor a rerun touches the destination's tags).
	tags      map[string]string
	tagsKnown bool
}

// jobSource lists the objects of a run page by page, handing each to emit
// (which blocks while the workers are that far behind: see lookahead).
type jobSource func(ctx context.Context, emit func(migJob) error) error

// lookahead is how many listed objects may wait for a worker: listing runs
// ahead of copying by at most this many (a few MB), so a run over millions
// of blobs holds a bounded list, and the totals of a smaller run are known
// almost at once.
const lookahead = 10000

// listOpts says what a listing asks for beyond properties and metadata.
type listOpts struct {
	// tags lists blob index tags too (include=tags).
	tags bool
	// noTags is called (once a run) when the source does not hand out
	// the tags: the listing goes on without them.
	noTags func(reason string)
	// noProps, when set, is told the container whose properties
	// (metadata, public access level) the source would not hand out.
	noProps func(container string, err error)
}

// listJobs returns the source of the blobs of the containers to copy,
// calling onContainer first for each container.
func listJobs(svc *service.Client, only string, o listOpts, onContainer func(name string, md map[string]*string, access *container.PublicAccessType) error) jobSource {
	return func(ctx context.Context, emit func(migJob) error) error {
		return listJobsTo(ctx, svc, only, o, onContainer, emit)
	}
}

func listJobsTo(ctx context.Context, svc *service.Client, only string, o listOpts, onContainer func(name string, md map[string]*string, access *container.PublicAccessType) error, emit func(migJob) error) error {
	type cont struct {
		name   string
		md     map[string]*string
		access *container.PublicAccessType // x-ms-blob-public-access; nil: private
	}
	var conts []cont
	if only != "" {
		var md map[string]*string
		var access *container.PublicAccessType
		if p, err := svc.NewContainerClient(only).GetProperties(ctx, nil); err == nil {
			md, access = p.Metadata, p.BlobPublicAccess
		} else if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return fmt.Errorf("container %s: not found", only)
		} else if o.noProps != nil {
			o.noProps(only, err)
		}
		conts = append(conts, cont{only, md, access})
	} else {
		pager := svc.NewListContainersPager(&service.ListContainersOptions{Include: service.ListContainersInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("list containers: %w", err)
			}
			for _, it := range page.ContainerItems {
				var access *container.PublicAccessType
				if it.Properties != nil {
					access = it.Properties.PublicAccess
				}
				conts = append(conts, cont{*it.Name, it.Metadata, access})
			}
		}
	}
	tl := &tagListing{on: o.tags, noTags: o.noTags}
	for _, ct := range conts {
		if onContainer != nil {
			if err := onContainer(ct.name, ct.md, ct.access); err != nil {
				return err
			}
		}
		if err := listContainerJobs(ctx, svc.NewContainerClient(ct.name), ct.name, tl, emit); err != nil {
			return err
		}
	}
	return nil
}

// tagListing is whether a run still asks for tags, and whether it has
// said that it gets none.
type tagListing struct {
	on     bool
	noTags func(reason string)
	told   bool
}

func (tl *tagListing) tell(reason string) {
	if !tl.told && tl.noTags != nil {
		tl.told = true
		tl.noTags(reason)
	}
}

// listContainerJobs emits the blobs of one container. Azure refuses
// include=tags (403 AuthorizationPermissionMismatch) to a SAS without the
// t permission and to a role without tag reads, where Azurite and the
// gateway list tags to anyone who may list: on a 403 the page is listed
// again without tags, and so is the rest of the run.
func listContainerJobs(ctx context.Context, cc *container.Client, name string, tl *tagListing, emit func(migJob) error) error {
	var marker *string // of the next page
	var refused error  // include=tags refused; told once the listing without works
	for {
		pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
			Marker: marker, Include: container.ListBlobsInclude{Metadata: true, Tags: tl.on}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			var re *azcore.ResponseError
			if err != nil && tl.on && errors.As(err, &re) && re.StatusCode == http.StatusForbidden {
				tl.on, refused = false, err
				break
			}
			if err != nil {
				return fmt.Errorf("list blobs in %s: %w", name, err)
			}
			if refused != nil {
				code := "403"
				if errors.As(refused, &re) && re.ErrorCode != "" {
					code += " " + re.ErrorCode
				}
				tl.tell("the source refuses to list blob index tags (" + code + "; a SAS needs the t permission); copying without tags")
				refused = nil
			}
			for _, it := range page.Segment.BlobItems {
				if it.Name == nil || it.Properties == nil {
					continue
				}
				j := migJob{container: name, name: *it.Name, props: it.Properties, metadata: it.Metadata, md5: it.Properties.ContentMD5}
				if it.Properties.ContentLength != nil {
					j.size = *it.Properties.ContentLength
				}
				if it.Properties.ETag != nil {
					j.etag = string(*it.Properties.ETag)
				}
				if tl.on {
					if j.tags, j.tagsKnown = listedTags(it); !j.tagsKnown {
						tl.tell("the source lists blobs with tags (TagCount) but not the tags themselves; those blobs are copied without tags")
					}
				}
				if err := emit(j); err != nil {
					return err
				}
			}
			marker = page.NextMarker
		}
		if refused == nil {
			return nil
		}
	}
}

// listedTags returns the tags of a listed blob (nil: none). A blob whose
// properties count tags that the listing left out has unknown tags.
func listedTags(it *container.BlobItem) (map[string]string, bool) {
	var tags map[string]string
	if it.BlobTags != nil {
		for _, t := range it.BlobTags.BlobTagSet {
			if t == nil || t.Key == nil {
				continue
			}
			if tags == nil {
				tags = map[string]string{}
			}
			tags[*t.Key] = deref(t.Value)
		}
	}
	if n := it.Properties.TagCount; n != nil && int(*n) > len(tags) {
		return nil, false
	}
	return tags, true
}

// progress counts finished objects and bytes and prints a line a second.
type progress struct {
	verb                   string
	totalObjs, totalBytes  atomic.Int64 // listed so far
	listed                 atomic.Bool  // the listing is complete: the totals are final
	objs, bytes, moved     atomic.Int64
	copied, skipped, faild atomic.Int64
	start                  time.Time
}

// line is the progress line. While the listing still runs the totals are
// lower bounds ("+") and there is no ETA.
func (p *progress) line() string {
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.moved.Load()) / el
	}
	more, eta := "", "-"
	if !p.listed.Load() {
		more = "+"
	} else if rem := p.totalBytes.Load() - p.bytes.Load(); rate > 0 && rem > 0 {
		eta = time.Duration(float64(rem) / rate * float64(time.Second)).Round(time.Second).String()
	} else if rem <= 0 {
		eta = "0s"
	}
	return fmt.Sprintf("%s: %d/%d%s objects, %s/%s%s, %.1f MB/s, ETA %s",
		p.verb, p.objs.Load(), p.totalObjs.Load(), more, fmtBytes(p.bytes.Load()), fmtBytes(p.totalBytes.Load()), more, rate/1e6, eta)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// countingReader hashes and counts what passes through it; at EOF it calls
// onEOF once with the MD5 of everything read.
type countingReader struct {
	r     io.Reader
	h     hash.Hash
	n     int64
	p     *progress
	onEOF func(sum []byte)
	done  bool
}

func newCountingReader(r io.Reader, p *progress, onEOF func([]byte)) *countingReader {
	return &countingReader{r: r, h: md5.New(), p: p, onEOF: onEOF}
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.h.Write(b[:n])
		c.n += int64(n)
		c.p.bytes.Add(int64(n))
		c.p.moved.Add(int64(n))
	}
	if err == io.EOF && !c.done {
		c.done = true
		if c.onEOF != nil {
			c.onEOF(c.h.Sum(nil))
		}
	}
	return n, err
}

// runJobs copies jobs with parallel workers, printing progress to w, and
// returns an exit error when any failed or the run was interrupted.
func runJobs(ctx context.Context, w io.Writer, verb string, parallel int, jobs jobSource, copyOne func(context.Context, migJob, *progress) (skipped bool, err error)) error {
	return runJobsAs(ctx, w, verb, "copied", parallel, jobs, copyOne)
}

// runJobsAs is runJobs with the word the summary uses for finished objects
// ("copied", "adopted"). A copyOne that moves no bytes through a
// countingReader adds the sizes of the objects it finished to p.bytes.
func runJobsAs(ctx context.Context, w io.Writer, verb, done string, parallel int, jobs jobSource, copyOne func(context.Context, migJob, *progress) (skipped bool, err error)) error {
	if parallel < 1 {
		parallel = 1
	}
	p := &progress{verb: verb, start: time.Now()}
	var mu sync.Mutex // w
	stopTick := make(chan struct{})
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopTick:
				return
			case <-t.C:
				mu.Lock()
				fmt.Fprintln(w, p.line())
				mu.Unlock()
			}
		}
	}()
	ch := make(chan migJob, lookahead)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				skipped, err := copyOne(ctx, j, p)
				switch {
				case err != nil && ctx.Err() != nil:
					// Interrupted: neither failed nor done.
				case err != nil:
					p.faild.Add(1)
					mu.Lock()
					fmt.Fprintf(w, "%s: %s/%s: %v\n", verb, j.container, j.name, err)
					mu.Unlock()
				case skipped:
					p.skipped.Add(1)
					p.objs.Add(1)
					p.bytes.Add(j.size)
				default:
					p.copied.Add(1)
					p.objs.Add(1)
				}
			}
		}()
	}
	// List into the workers' queue: the listing runs ahead of the copies
	// by at most lookahead objects.
	listErr := jobs(ctx, func(j migJob) error {
		p.totalObjs.Add(1)
		p.totalBytes.Add(j.size)
		select {
		case ch <- j:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if listErr == nil {
		p.listed.Store(true)
	}
	close(ch)
	wg.Wait()
	close(stopTick)
	<-tickDone
	fmt.Fprintln(w, p.line())
	fmt.Fprintf(w, "%s: %s %d, skipped %d, failed %d in %s\n", verb, done, p.copied.Load(), p.skipped.Load(), p.faild.Load(), time.Since(p.start).Round(time.Millisecond))
	if ctx.Err() != nil {
		if !p.listed.Load() {
			return cli.Exit(fmt.Sprintf("%s: interrupted before the listing ended; run the same command again to finish", verb), 1)
		}
		left := p.totalObjs.Load() - p.objs.Load() - p.faild.Load()
		return cli.Exit(fmt.Sprintf("%s: interrupted with %d objects left; run the same command again to finish", verb, left), 1)
	}
	if listErr != nil {
		return cli.Exit(fmt.Sprintf("%s: %v (the objects listed before were processed; run the same command again to finish)", verb, listErr), 1)
	}
	if n := p.faild.Load(); n > 0 {
		return cli.Exit(fmt.Sprintf("%s: %d objects failed; run the same command again to retry them", verb, n), 1)
	}
	return nil
}

// syncWriter serializes the writes of the progress lines, the per-object
// errors and the notes of a run, which come from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func importAzure(c *cli.Context) error {
	ctx, stop := interruptible(c.Context)
	defer stop()
	src, srcCont, err := azureClient(c, "source")
	if err != nil {
		return cli.Exit("import: "+err.Error(), 2)
	}
	dst, _, err := azureClient(c, "dest")
	if err != nil {
		return cli.Exit("import: "+err.Error(), 2)
	}
	only := c.String("container")
	if only == "" {
		only = srcCont
	}
	out := &syncWriter{w: c.App.ErrWriter}
	note := func(format string, args ...any) { fmt.Fprintf(out, "import: "+format+"\n", args...) }
	lo := listOpts{tags: true, noTags: func(reason string) { note("%s", reason) }, noProps: func(name string, err error) {
		code := err.Error()
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			code = fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
		}
		note("%s: the source container's properties cannot be read (%s; a container SAS may not read them); its metadata and public access level are not copied", name, code)
	}}
	jobs := listJobs(src, only, lo, func(name string, md map[string]*string, access *container.PublicAccessType) error {
		_, err := dst.NewContainerClient(name).Create(ctx, &container.CreateOptions{Metadata: md, Access: access})
		if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("create container %s: %w", name, err)
		}
		return copyAccessPolicies(ctx, name, src.NewContainerClient(name), dst.NewContainerClient(name), note)
	})
	return runJobs(ctx, out, "import", c.Int("parallel"), jobs, func(ctx context.Context, j migJob, p *progress) (bool, error) {
		return importOne(ctx, src, dst, j, p, note)
	})
}

// copyAccessPolicies gives the destination container the source's stored
// access policies (Get / Set Container ACL), which SAS tokens name (si),
// when it has none: a container an earlier run created is finished by a
// rerun, and policies set at the gateway are left alone. A source that
// refuses Get Container ACL (it takes Shared Key: a SAS may not read it)
// is named by note, since its policies are not copied.
func copyAccessPolicies(ctx context.Context, name string, sc, dc *container.Client, note func(string, ...any)) error {
	sp, err := sc.GetAccessPolicy(ctx, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized) {
			note("%s: the source's stored access policies cannot be read (%d %s: Get Container ACL takes the account key); not copied: SAS tokens naming one (si) fail at the gateway until it is set there (Set Container ACL)", name, re.StatusCode, re.ErrorCode)
			return nil
		}
		return fmt.Errorf("source container access policies: %w", err)
	}
	if len(sp.SignedIdentifiers) == 0 {
		return nil
	}
	dp, err := dc.GetAccessPolicy(ctx, nil)
	if err != nil {
		return fmt.Errorf("destination container access policies: %w", err)
	}
	if len(dp.SignedIdentifiers) > 0 {
		return nil
	}
	if _, err := dc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{Access: dp.BlobPublicAccess, ContainerACL: sp.SignedIdentifiers}); err != nil {
		return fmt.Errorf("set container access policies: %w", err)
	}
	return nil
}

// importOne copies one blob, or finds it copied already. Block blobs go
// through Put Blob or Put Block List; append blobs are created empty and
// appended to; page blobs are created empty and get the source's written
// ranges (import_pages.go). note reports what the summary does not.
func importOne(ctx context.Context, src, dst *service.Client, j migJob, p *progress, note func(string, ...any)) (bool, error) {
	srcType := typeOf(j.props.BlobType)
	want := blob.BlobTypeBlockBlob
	if srcType == blob.BlobTypeAppendBlob || srcType == blob.BlobTypePageBlob {
		want = srcType
	}
	tier := carriedTier(j.props, srcType)
	dc := dst.NewContainerClient(j.container)
	db := dc.NewBlobClient(j.name)
	var have *blob.BlobType // the destination's type; nil: no blob there
	// Every write is conditional on the destination found here (If-Match
	// its ETag, If-None-Match: * when there is none), so that a blob the
	// applications write at the gateway meanwhile is never replaced.
	cond := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	if props, err := db.GetProperties(ctx, nil); err == nil {
		if importDone(props, j, want) {
			if err := touchUp(ctx, db, props, j, tier); err != nil {
				return true, err
			}
			return true, sealLike(ctx, dc.NewAppendBlobClient(j.name), props.IsSealed, j)
		}
		if why := notImported(props, j, want); why != "" {
			note("%s/%s: %s; kept as it is, not overwritten (delete it at the destination to have the source's copied)", j.container, j.name, why)
			return true, nil
		}
		t := typeOf(props.BlobType)
		have = &t
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: props.ETag}}
	} else if !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return false, fmt.Errorf("destination properties: %w", err)
	}
	if tier == blob.AccessTierArchive {
		return false, archivedError(j.props)
	}
	sb := src.NewContainerClient(j.container).NewBlobClient(j.name)
	etag := azcore.ETag(j.etag)
	body := io.Reader(http.NoBody) // a page blob is read range by range
	if want != blob.BlobTypePageBlob {
		dl, err := sb.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}})
		if err != nil {
			if bloberror.HasCode(err, bloberror.BlobArchived) {
				// Archived since the listing.
				return false, archivedError(j.props)
			}
			return false, fmt.Errorf("download: %w", err)
		}
		defer dl.Body.Close()
		body = dl.Body
	}
	if have != nil && *have != want {
		// An earlier import (append blobs used to arrive as block blobs)
		// or someone else left a blob of another type, which Put Block
		// List and Append Block refuse (409 InvalidBlobType): remove it.
		if _, err := db.Delete(ctx, &blob.DeleteOptions{AccessConditions: cond}); err != nil {
			return false, fmt.Errorf("replace the destination's %s: %w", *have, err)
		}
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	}
	md := map[string]*string{}
	for k, v := range j.metadata {
		if !strings.EqualFold(k, importETagKey) {
			md[k] = v
		}
	}
	md[importETagKey] = &j.etag
	pr := j.props
	headers := &blob.HTTPHeaders{
		BlobContentType: pr.ContentType, BlobContentEncoding: pr.ContentEncoding, BlobContentLanguage: pr.ContentLanguage,
		BlobContentDisposition: pr.ContentDisposition, BlobCacheControl: pr.CacheControl, BlobContentMD5: j.md5,
	}
	var sum []byte
	var err error
	cr := newCountingReader(body, p, func(s []byte) {
		sum = s
		if headers.BlobContentMD5 == nil {
			// The source kept no MD5 (a block-list blob): store the one
			// computed while streaming; the commit reads headers after EOF.
			headers.BlobContentMD5 = s
		}
	})
	read := func() int64 { return cr.n }
	switch want {
	case blob.BlobTypeAppendBlob:
		err = appendAll(ctx, dc.NewAppendBlobClient(j.name), cr, *headers, md, j.tags, cond)
		sum = cr.h.Sum(nil) // also when the body ended early: the size check below says so
	case blob.BlobTypePageBlob:
		var n int64
		sum, n, err = importPages(ctx, src.NewContainerClient(j.container).NewPageBlobClient(j.name), dc.NewPageBlobClient(j.name), j, *headers, md, cond, p)
		read = func() int64 { return n }
	default:
		opts := &blockblob.UploadStreamOptions{BlockSize: migrateBlockSize, Concurrency: 2, HTTPHeaders: headers, Metadata: md, Tags: j.tags, AccessConditions: cond}
		if tier != "" {
			opts.AccessTier = &tier
		}
		_, err = dc.NewBlockBlobClient(j.name).UploadStream(ctx, cr, opts)
		if err != nil {
			err = fmt.Errorf("upload: %w", err)
		}
	}
	if err != nil {
		p.bytes.Add(-read())
		return false, err
	}
	// Verify: what was read matches the source, and the destination agrees.
	if read() != j.size {
		return false, fmt.Errorf("verify: read %d bytes, source has %d", read(), j.size)
	}
	if j.md5 != nil && !bytes.Equal(sum, j.md5) {
		if srcType == blob.BlobTypeAppendBlob {
			return false, fmt.Errorf("verify: MD5 of the bytes read %x, source Content-MD5 %x (Append Block does not update an append blob's Content-MD5: a stale one set before later appends also ends here)", sum, j.md5)
		}
		return false, fmt.Errorf("verify: MD5 of the bytes read %x, source Content-MD5 %x", sum, j.md5)
	}
	if want == blob.BlobTypeAppendBlob || want == blob.BlobTypePageBlob {
		// The service keeps no MD5 of an append or page blob; set the one
		// of the bytes, last, so that the skip check (which wants an MD5)
		// never takes an interrupted copy for a finished one.
		h := *headers
		h.BlobContentMD5 = sum
		if _, err := db.SetHTTPHeaders(ctx, h, nil); err != nil {
			return false, fmt.Errorf("set Content-MD5: %w", err)
		}
		// Sealed after the MD5: a run stopped in between leaves a
		// finished copy that the rerun's skip seals (sealLike).
		if err := sealLike(ctx, dc.NewAppendBlobClient(j.name), nil, j); err != nil {
			return false, err
		}
	}
	got, err := db.GetProperties(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("verify: %w", err)
	}
	if got.ContentLength == nil || *got.ContentLength != j.size {
		return false, fmt.Errorf("verify: destination size %v, source %d", got.ContentLength, j.size)
	}
	if !bytes.Equal(got.ContentMD5, sum) {
		return false, fmt.Errorf("verify: destination Content-MD5 %x, streamed %x", got.ContentMD5, sum)
	}
	if typeOf(got.BlobType) != want {
		return false, fmt.Errorf("verify: destination is a %s, want a %s", typeOf(got.BlobType), want)
	}
	if tier != "" && !strings.EqualFold(deref(got.AccessTier), string(tier)) {
		return false, fmt.Errorf("verify: destination tier %q, source %s", deref(got.AccessTier), tier)
	}
	return false, nil
}

// appendAll creates ab as an empty append blob (replacing one that is
// there: Put Blob) and appends what r yields in blocks of appendBlockSize,
// one buffer at a time. Each block carries its MD5, which the service
// checks, and its offset as x-ms-blob-condition-appendpos, so a block the
// SDK resends after a lost answer is refused (412
// AppendPositionConditionNotMet) rather than written twice; the copy then
// fails and a rerun starts it over. Content-MD5 is left for the caller;
// cond is the condition of the Put Blob.
func appendAll(ctx context.Context, ab *appendblob.Client, r io.Reader, headers blob.HTTPHeaders, md map[string]*string, tags map[string]string, cond *blob.AccessConditions) error {
	headers.BlobContentMD5 = nil
	if _, err := ab.Create(ctx, &appendblob.CreateOptions{HTTPHeaders: &headers, Metadata: md, Tags: tags, AccessConditions: cond}); err != nil {
		return fmt.Errorf("create append blob: %w", err)
	}
	buf := make([]byte, appendBlockSize)
	var off int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			sum := md5.Sum(buf[:n])
			pos := off
			if _, err := ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(buf[:n])), &appendblob.AppendBlockOptions{
				TransactionalValidation:        blob.TransferValidationTypeMD5(sum[:]),
				AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &pos},
			}); err != nil {
				return fmt.Errorf("append block at offset %d: %w", off, err)
			}
			off += int64(n)
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil
		case err != nil:
			return fmt.Errorf("download: %w", err)
		}
	}
}

// importDone reports whether the destination is a finished copy of j: a
// blob of the wanted type, with the size, an MD5 (the source's, if it has
// one) and the source ETag in the import marker. An append blob gets its
// MD5 only once every byte is in, so a partial one never passes.
func importDone(props blob.GetPropertiesResponse, j migJob, want blob.BlobType) bool {
	return typeOf(props.BlobType) == want &&
		props.ContentLength != nil && *props.ContentLength == j.size &&
		props.ContentMD5 != nil && (j.md5 == nil || bytes.Equal(props.ContentMD5, j.md5)) &&
		metaValue(props.Metadata, importETagKey) == j.etag
}

// notImported says why a destination blob that is no finished copy of j
// is not the import's to replace ("" when it is): it has no import marker,
// so no import wrote it (an application did, at the gateway, after the
// cutover, say); or it is an append blob the import finished (the marker
// names the source's ETag, which has not changed, and the MD5 the import
// sets only once every byte is in is there) that is now longer than the
// source: an application appended to it at the gateway (Append Block
// keeps the metadata and the blob's Content-MD5), and replacing it would
// lose those appends. A copy an interrupted run left, a blob of another
// type an import left, or a copy of an older source version carry the
// marker and are the import's to replace.
func notImported(props blob.GetPropertiesResponse, j migJob, want blob.BlobType) string {
	marker := metaValue(props.Metadata, importETagKey)
	if marker == "" {
		return "the destination blob was not written by an import (no " + importETagKey + " metadata)"
	}
	if want == blob.BlobTypeAppendBlob && typeOf(props.BlobType) == want && marker == j.etag &&
		props.ContentMD5 != nil && props.ContentLength != nil && *props.ContentLength > j.size {
		return fmt.Sprintf("the destination append blob was appended to after the import copied it (%d bytes, the unchanged source %d)", *props.ContentLength, j.size)
	}
	return ""
}

// touchUp brings a finished copy up to date with what changes on the
// source without a new ETag, and so without a new copy: the access tier
// (Set Blob Tier) and the blob index tags (Set Blob Tags keeps the ETag).
// Untagged blobs on both sides cost no request.
func touchUp(ctx context.Context, db *blob.Client, props blob.GetPropertiesResponse, j migJob, tier blob.AccessTier) error {
	if tier != "" && !strings.EqualFold(deref(props.AccessTier), string(tier)) {
		if _, err := db.SetTier(ctx, tier, nil); err != nil {
			return fmt.Errorf("set tier %s: %w", tier, err)
		}
	}
	if !j.tagsKnown {
		return nil
	}
	var n int64
	if props.TagCount != nil {
		n = *props.TagCount
	}
	if n == 0 && len(j.tags) == 0 {
		return nil
	}
	if n == int64(len(j.tags)) {
		cur, err := db.GetTags(ctx, nil)
		if err != nil {
			return fmt.Errorf("destination tags: %w", err)
		}
		same := len(cur.BlobTagSet) == len(j.tags)
		for _, t := range cur.BlobTagSet {
			if v, ok := j.tags[deref(t.Key)]; !ok || v != deref(t.Value) {
				same = false
			}
		}
		if same {
			return nil
		}
	}
	if _, err := db.SetTags(ctx, j.tags, nil); err != nil {
		return fmt.Errorf("set tags: %w", err)
	}
	return nil
}

// sealLike seals the destination append blob when the source is sealed and
// the destination (sealed: what its properties say; nil when not read) is
// not. Seal keeps the source's ETag, so a rerun finds a blob sealed after
// it was copied by this and not by a new copy.
func sealLike(ctx context.Context, ab *appendblob.Client, sealed *bool, j migJob) error {
	if typeOf(j.props.BlobType) != blob.BlobTypeAppendBlob || j.props.IsSealed == nil || !*j.props.IsSealed ||
		sealed != nil && *sealed {
		return nil
	}
	if _, err := ab.Seal(ctx, nil); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	return nil
}

// typeOf is a blob's type; a service that leaves it out means a block blob.
func typeOf(t *blob.BlobType) blob.BlobType {
	if t == nil || *t == "" {
		return blob.BlobTypeBlockBlob
	}
	return *t
}

// carriedTier is the access tier the destination gets: the source's, when
// it is a block blob with a tier set rather than inferred from the
// account default, and the tier is one of Hot, Cool, Cold, Archive (the
// premium tiers have no counterpart). "" leaves the destination's default.
func carriedTier(pr *container.BlobProperties, t blob.BlobType) blob.AccessTier {
	if t != blob.BlobTypeBlockBlob || pr.AccessTier == nil || (pr.AccessTierInferred != nil && *pr.AccessTierInferred) {
		return ""
	}
	for _, v := range []blob.AccessTier{blob.AccessTierHot, blob.AccessTierCool, blob.AccessTierCold, blob.AccessTierArchive} {
		if strings.EqualFold(string(*pr.AccessTier), string(v)) {
			return v
		}
	}
	return ""
}

// archivedError is the failure of a source blob in the Archive tier: its
// bytes are offline, and Get Blob answers 409 BlobArchived.
func archivedError(pr *container.BlobProperties) error {
	msg := "the source blob is in the Archive tier, whose bytes cannot be read (409 BlobArchived); rehydrate it (Set Blob Tier to Hot, Cool or Cold) and run the import again"
	if pr.ArchiveStatus != nil && *pr.ArchiveStatus != "" {
		msg += " (rehydration under way: " + string(*pr.ArchiveStatus) + ")"
	}
	return errors.New(msg)
}

// deref is the value of an optional string, "" when absent.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// metaValue looks a metadata key up case-insensitively.
func metaValue(md map[string]*string, key string) string {
	for k, v := range md {
		if strings.EqualFold(k, key) && v != nil {
			return *v
		}
	}
	return ""
}

func exportS3(c *cli.Context) error {
	ctx, stop := interruptible(c.Context)
	defer stop()
	src, srcCont, err := azureClient(c, "source")
	if err != nil {
		return cli.Exit("export: "+err.Error(), 2)
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(c.String("region"))}
	if ak := c.String("access-key"); ak != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, c.String("secret-key"), "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cli.Exit("export: AWS configuration: "+err.Error(), 2)
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if ep := c.String("endpoint"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
		o.UsePathStyle = c.Bool("path-style")
	})
	only := c.String("container")
	if only == "" {
		only = srcCont
	}
	out := &syncWriter{w: c.App.ErrWriter}
	jobs := listJobs(src, only, listOpts{tags: true, noTags: func(reason string) { fmt.Fprintf(out, "export: %s\n", reason) }}, nil)
	up := manager.NewUploader(client, func(u *manager.Uploader) { u.PartSize = 8 << 20; u.Concurrency = 2 })
	bucket, prefix := c.String("bucket"), c.String("prefix")
	return runJobs(ctx, out, "export", c.Int("parallel"), jobs, func(ctx context.Context, j migJob, p *progress) (bool, error) {
		return exportOne(ctx, src, client, up, bucket, prefix+j.container+"/"+j.name, j, p)
	})
}

func exportOne(ctx context.Context, src *service.Client, client *awss3.Client, up *manager.Uploader, bucket, key string, j migJob, p *progress) (bool, error) {
	head, err := client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		if head.ContentLength != nil && *head.ContentLength == j.size && head.Metadata[exportETagKey] == j.etag {
			return true, nil
		}
	} else {
		var ae smithy.APIError
		if !errors.As(err, &ae) || (ae.ErrorCode() != "NotFound" && ae.ErrorCode() != "NoSuchKey") {
			return false, fmt.Errorf("head %s: %w", key, err)
		}
	}
	sb := src.NewContainerClient(j.container).NewBlobClient(j.name)
	etag := azcore.ETag(j.etag)
	dl, err := sb.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}})
	if err != nil {
		return false, fmt.Errorf("download: %w", err)
	}
	defer dl.Body.Close()
	md := map[string]string{exportETagKey: j.etag}
	for k, v := range j.metadata {
		if v != nil && !strings.EqualFold(k, exportETagKey) {
			md[k] = *v
		}
	}
	if j.md5 != nil {
		md["blobgw-content-md5"] = base64.StdEncoding.EncodeToString(j.md5)
	}
	pr := j.props
	cr := newCountingReader(dl.Body, p, nil)
	_, err = up.Upload(ctx, &awss3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: cr, Metadata: md,
		ContentType: pr.ContentType, ContentEncoding: pr.ContentEncoding, ContentLanguage: pr.ContentLanguage,
		ContentDisposition: pr.ContentDisposition, CacheControl: pr.CacheControl, Tagging: s3Tagging(j.tags),
	})
	if err != nil {
		p.bytes.Add(-cr.n)
		return false, fmt.Errorf("upload %s: %w", key, err)
	}
	sum := cr.h.Sum(nil)
	if cr.n != j.size {
		return false, fmt.Errorf("verify: read %d bytes, source has %d", cr.n, j.size)
	}
	if j.md5 != nil && !bytes.Equal(sum, j.md5) {
		return false, fmt.Errorf("verify: MD5 of the bytes read %x, source Content-MD5 %x", sum, j.md5)
	}
	got, err := client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return false, fmt.Errorf("verify: %w", err)
	}
	if got.ContentLength == nil || *got.ContentLength != j.size {
		return false, fmt.Errorf("verify: object size %v, source %d", got.ContentLength, j.size)
	}
	return false, nil
}

// s3Tagging is the x-amz-tagging value (URL query form) carrying a blob's
// index tags as the object's tags; nil for none.
func s3Tagging(tags map[string]string) *string {
	if len(tags) == 0 {
		return nil
	}
	esc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(esc(k) + "=" + esc(tags[k]))
	}
	return aws.String(b.String())
}
