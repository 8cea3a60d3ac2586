package main

// `blobgw import s3` adopts objects that already sit in the gateway's own
// S3 bucket as blobs, without copying a byte: each blob row references the
// existing object through s3.AdoptedKey. Adopted objects are then owned by
// the gateway: overwriting or deleting the blob queues the original object
// for collection like any replaced upload. An object backs one blob only:
// adopting it under a second name (another --container, say) is refused
// while the first blob (or a snapshot of it) still references it.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/blobgw/blobgw/backends/s3"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/svcerr"
	"github.com/urfave/cli/v2"
)

func importS3Command() *cli.Command {
	flags := append(configFlags(),
		&cli.StringFlag{Name: "bucket", Required: true, Usage: "bucket holding the objects: must be the configured s3 backend bucket"},
		&cli.StringFlag{Name: "prefix", Usage: "adopt only objects whose names start with this; it is cut off to form the blob name"},
		&cli.StringFlag{Name: "container", Required: true, Usage: "container the blobs go into (created when missing)"},
		&cli.StringFlag{Name: "blob-account", Usage: "account the container belongs to (default: the first configured account)"},
		&cli.IntFlag{Name: "parallel", Value: 8, Usage: "objects adopted at a time"},
	)
	return &cli.Command{
		Name: "s3",
		Usage: "adopt objects of the configured S3 bucket as blobs without copying bytes (blob name = object name minus --prefix); " +
			"the gateway then owns them: overwriting or deleting a blob deletes its object; reruns skip adopted objects; " +
			"an object already adopted as another blob is refused (one object backs one blob)",
		Flags:  flags,
		Action: importS3,
	}
}

// gatewayKeyRE matches the keys the gateway writes (gateway.newKey): with an
// empty s3 prefix they share the bucket's name space with other objects.
var gatewayKeyRE = regexp.MustCompile(`^b/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}$`)

var containerNameRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9])*$`)

func importS3(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if cfg.Backend != "s3" {
		return cli.Exit(fmt.Sprintf("import s3: the configured backend is %q; adopting objects needs backend: s3 on the bucket that holds them", cfg.Backend), 2)
	}
	bucket, prefix, cont := c.String("bucket"), c.String("prefix"), c.String("container")
	if bucket != cfg.S3.Bucket {
		return cli.Exit(fmt.Sprintf("import s3: --bucket %s is not the configured s3 bucket %q: the gateway can serve adopted objects only from its own bucket", bucket, cfg.S3.Bucket), 2)
	}
	if len(cont) < 3 || len(cont) > 63 || !containerNameRE.MatchString(cont) {
		return cli.Exit(fmt.Sprintf("import s3: --container %q is not a valid container name (3-63 of a-z, 0-9 and single hyphens)", cont), 2)
	}
	account := cfg.Accounts[0].Name
	if a := c.String("blob-account"); a != "" {
		found := false
		for _, ac := range cfg.Accounts {
			found = found || ac.Name == a
		}
		if !found {
			return cli.Exit(fmt.Sprintf("import s3: --blob-account %s is not a configured account", a), 2)
		}
		account = a
	}
	ctx, store, backend, done, err := openInterruptible(c, cfg)
	if err != nil {
		return err
	}
	defer done()
	st, ok := backend.(*s3.Store)
	if !ok {
		return cli.Exit("import s3: the backend is not an s3 store", 1)
	}
	db := &leasedb.DB{Store: store, Grace: cfg.GCGrace}
	w := c.App.ErrWriter

	// The listing feeds the workers as it goes; the container is created
	// before the first object is handed over.
	own := 0
	jobs := func(ctx context.Context, emit func(migJob) error) error {
		created := false
		p := awss3.NewListObjectsV2Paginator(st.Client(), &awss3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("list %s: %w", bucket, err)
			}
			for _, o := range page.Contents {
				obj := aws.ToString(o.Key)
				if (st.Prefix() != "" && strings.HasPrefix(obj, st.Prefix())) || (st.Prefix() == "" && gatewayKeyRE.MatchString(obj)) {
					own++ // the gateway's own bytes
					continue
				}
				name := strings.TrimPrefix(obj, prefix)
				if name == "" {
					continue // the prefix itself (a "directory" marker)
				}
				if !created {
					if _, err := db.CreateContainer(ctx, account, cont, nil, ""); err != nil && !svcerr.HasCode(err, svcerr.ContainerAlreadyExists) {
						return fmt.Errorf("create container %s: %w", cont, err)
					}
					created = true
				}
				if err := emit(migJob{container: cont, name: name, size: aws.ToInt64(o.Size), etag: aws.ToString(o.ETag)}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	defer func() {
		if own > 0 {
			fmt.Fprintf(w, "import s3: skipped %d objects of the gateway's own (under prefix %q)\n", own, st.Prefix())
		}
	}()
	return runJobsAs(ctx, w, "import s3", "adopted", c.Int("parallel"), jobs, func(ctx context.Context, j migJob, pr *progress) (bool, error) {
		skipped, size, err := adoptOne(ctx, db, st, bucket, prefix+j.name, leasedb.BlobRef{Account: account, Container: j.container, Name: j.name}, j.size)
		if err == nil && !skipped {
			pr.bytes.Add(size)
		}
		return skipped, err
	})
}

// adoptOne adopts object obj as blob ref; listed is the size the listing
// reported. It returns the adopted size.
func adoptOne(ctx context.Context, db *leasedb.DB, st *s3.Store, bucket, obj string, ref leasedb.BlobRef, listed int64) (skipped bool, size int64, err error) {
	if len(obj) > s3.MaxAdoptedName {
		return false, 0, fmt.Errorf("object name is %d bytes; at most %d can be adopted", len(obj), s3.MaxAdoptedName)
	}
	// The gateway's rules for a name in a request's path: one it refuses
	// (not UTF-8, a control character, too long) would be a blob no
	// request can name or List Blobs write; one with a backslash, which
	// every request's path reads as "/", a blob no request reaches.
	if !utf8.ValidString(ref.Name) || leasedb.Unlistable(ref.Name) || strings.ContainsRune(ref.Name, '\\') || !leasedb.BlobNameFits(ref.Name) {
		return false, 0, errors.New("object name is not a valid blob name")
	}
	key := s3.AdoptedKey(obj)
	// Cheap rerun check before any request to S3; AdoptBlob decides again
	// under the lock.
	if b, _, err := db.GetBlob(ctx, ref, "", leasedb.Conditions{}); err == nil &&
		len(b.Extents) == 1 && b.Extents[0].Key == key && b.Size == listed {
		return true, listed, nil
	}
	head, err := st.Client().HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(obj)})
	if err != nil {
		return false, 0, fmt.Errorf("head: %w", err)
	}
	md5 := md5FromETag(aws.ToString(head.ETag))
	if strings.HasPrefix(string(head.ServerSideEncryption), "aws:kms") || head.SSECustomerAlgorithm != nil {
		md5 = nil // the ETag of an SSE-KMS or SSE-C object is no MD5
	}
	req := leasedb.AdoptRequest{
		Key:  key,
		Size: aws.ToInt64(head.ContentLength),
		Props: leasedb.Props{
			ContentType: aws.ToString(head.ContentType), ContentEncoding: aws.ToString(head.ContentEncoding),
			ContentLanguage: aws.ToString(head.ContentLanguage), ContentDisposition: aws.ToString(head.ContentDisposition),
			CacheControl: aws.ToString(head.CacheControl), ContentMD5: md5,
		},
	}
	if len(head.Metadata) > 0 {
		req.Metadata = make(map[string]string, len(head.Metadata))
		for k, v := range head.Metadata {
			req.Metadata[strings.ToLower(k)] = v
		}
	}
	adopted, err := db.AdoptBlob(ctx, ref, req)
	if errors.Is(err, leasedb.ErrAdoptShared) {
		return false, 0, fmt.Errorf("%w: one object backs one blob (deleting either would delete the object); copy the blob to give it a second name", err)
	}
	if err != nil {
		return false, 0, err
	}
	return !adopted, req.Size, nil
}

// md5FromETag returns the MD5 an S3 ETag is when it is a plain 32-hex digest
// (a single-part upload without SSE-KMS); nil for multipart ETags ("...-N").
func md5FromETag(etag string) []byte {
	etag = strings.Trim(etag, `"`)
	if len(etag) != 32 {
		return nil
	}
	sum, err := hex.DecodeString(etag)
	if err != nil {
		return nil
	}
	return sum
}
