// Package s3 is the backends.Backend that keeps blob bytes in an S3 bucket
// (AWS S3, MinIO or another S3-compatible store), one immutable object per
// key, named Config.Prefix + key. Objects of the bucket outside that key
// space can be adopted: AdoptedKey names them for Open, Stat and Delete.
//
// The package must never overwrite an object (every write is conditional on
// If-None-Match: *, so a second Put of a key fails with backends.ErrExists
// and of two concurrent Puts exactly one wins), never expose a partial
// object (a failed Put, a short or long body, a failing reader or a
// cancelled context leaves nothing visible, and multipart uploads are
// aborted), and never buffer a whole object (a Put holds at most
// Config.Concurrency parts of Config.PartSize bytes; reads stream).
//
// Failures of the store itself (network errors, timeouts, 5xx, throttling)
// are retried by the SDK's retryer with backoff and then reported wrapped
// with backends.ErrUnavailable, so the gateway answers 503 and its client
// retries. Connection set-up, response headers and stalled connections are
// all bounded by timeouts: a dead endpoint fails a call, it never hangs it.
//
// Two limits of S3 remain: a Put whose body has been fully sent but whose
// response is lost may have stored the object although it returns an error
// (a buffered or multipart write retried after a lost answer is checked
// against the object's ETag and succeeds, or fails with ErrUnavailable),
// and a multipart upload whose abort fails after a failed Put lingers,
// invisible, until a bucket lifecycle rule (AbortIncompleteMultipartUpload)
// removes it. Configure that rule on production buckets.
package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/blobgw/blobgw/backends"
)

const (
	// DefaultPartSize is the part size of multipart uploads when
	// Config.PartSize is zero.
	DefaultPartSize = 16 << 20
	// MinPartSize is the smallest part S3 accepts (except the last one).
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize = 5 << 30
	// DefaultConcurrency is Config.Concurrency when zero.
	DefaultConcurrency = 4
	// DefaultMaxRetries is Config.MaxRetries when zero.
	DefaultMaxRetries = 3

	maxParts        = 10000      // parts of one multipart upload
	maxDeleteBatch  = 1000       // keys of one DeleteObjects request
	maxObjectSize   = 5 << 40    // S3's object size limit, 5 TiB
	maxPrefixLength = 1024 - 512 // S3 keys are at most 1024 bytes

	dialTimeout           = 5 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 30 * time.Second // after the request is sent
	readTimeout           = 2 * time.Minute  // a connection silent this long is dead
	idleConnTimeout       = 50 * time.Second
	maxBackoff            = 5 * time.Second
	cleanupTimeout        = 30 * time.Second // aborting a failed multipart upload
)

// Config configures a Store.
type Config struct {
	// Endpoint is the URL of an S3-compatible server, such as
	// "http://127.0.0.1:9000" for MinIO. Empty means AWS S3 (the endpoint
	// is derived from Region).
	Endpoint string
	// Region is the signing region. Empty means the SDK's default chain
	// (AWS_REGION, shared config), and "us-east-1" if that has none.
	Region string
	// Bucket holds the objects. It must exist (see EnsureBucket).
	Bucket string
	// Prefix is prepended to every key, so that several stores can share
	// a bucket; List strips it again. Use a delimiter, e.g. "blobs/".
	Prefix string
	// AccessKey and SecretKey are static credentials. When both are empty
	// the SDK's default chain is used (environment, shared files, IAM role).
	AccessKey, SecretKey string
	// PathStyle addresses the bucket as a path (endpoint/bucket/key)
	// rather than as a host name; MinIO needs it.
	PathStyle bool
	// PartSize is the size of a multipart-upload part and of the buffers
	// a Put holds: default 16 MiB, at least 5 MiB. A Put of a known size
	// up to PartSize is streamed as a single PutObject without buffering;
	// other Puts read the body in parts of PartSize bytes (larger when a
	// known size needs more than 10,000 parts).
	PartSize int64
	// Concurrency is how many parts one Put holds in memory at once, being
	// read from the body or uploaded (default 4). A Put's memory is at most
	// PartSize × Concurrency.
	Concurrency int
	// MaxRetries is how often a failed request is retried, with jittered
	// exponential backoff, before the call fails: default 3; negative
	// means no retries.
	MaxRetries int
}

// Store is a backends.Backend on one S3 bucket. It is safe for concurrent
// use.
type Store struct {
	client      *awss3.Client
	bucket      string
	prefix      string
	partSize    int64
	concurrency int
	// streamOpts are the per-call options of a PutObject that streams the
	// caller's reader. On plain HTTP such a payload can be neither hashed
	// for the signature (that would read it twice) nor checksummed in a
	// trailer (the SDK allows trailers only on HTTPS), so it is sent as
	// UNSIGNED-PAYLOAD without a checksum; on HTTPS the SDK sends it with a
	// trailing checksum.
	streamOpts []func(*awss3.Options)

	bufPool sync.Pool // *[]byte of len partSize
}

var (
	_ backends.Backend      = (*Store)(nil)
	_ backends.BatchDeleter = (*Store)(nil)
	_ backends.AdoptedKeys  = (*Store)(nil)
)

// New returns a Store for cfg. It validates cfg and builds the client but
// does not contact the server.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket configured")
	}
	if len(cfg.Prefix) > maxPrefixLength {
		return nil, fmt.Errorf("s3: prefix is %d bytes, at most %d allowed", len(cfg.Prefix), maxPrefixLength)
	}
	switch {
	case cfg.PartSize == 0:
		cfg.PartSize = DefaultPartSize
	case cfg.PartSize < MinPartSize || cfg.PartSize > MaxPartSize:
		return nil, fmt.Errorf("s3: part size %d outside [%d, %d]", cfg.PartSize, MinPartSize, MaxPartSize)
	}
	switch {
	case cfg.Concurrency == 0:
		cfg.Concurrency = DefaultConcurrency
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("s3: negative concurrency %d", cfg.Concurrency)
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("s3: access key and secret key must be given together")
	}
	insecure := false
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("s3: endpoint: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3: endpoint %q is not an http:// or https:// URL", cfg.Endpoint)
		}
		insecure = u.Scheme == "http"
	}

	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = dialTimeout
		}).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = tlsHandshakeTimeout
			t.ResponseHeaderTimeout = responseHeaderTimeout
			t.IdleConnTimeout = idleConnTimeout
			// The gateway runs many requests at once, all to one host.
			t.MaxIdleConns = max(t.MaxIdleConns, 256)
			t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, 128)
		}).
		WithReadTimeout(readTimeout)
	attempts := cfg.MaxRetries + 1
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = maxBackoff
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Ranged reads carry no checksum; do not log about each one.
		o.DisableLogOutputChecksumValidationSkipped = true
	})

	s := &Store{
		client:      client,
		bucket:      cfg.Bucket,
		prefix:      cfg.Prefix,
		partSize:    cfg.PartSize,
		concurrency: cfg.Concurrency,
	}
	if insecure {
		s.streamOpts = []func(*awss3.Options){func(o *awss3.Options) {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		}}
	}
	return s, nil
}

// Client returns the underlying S3 client.
func (s *Store) Client() *awss3.Client { return s.client }

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the prefix prepended to keys.
func (s *Store) Prefix() string { return s.prefix }

// EnsureBucket creates the bucket unless it exists already.
func (s *Store) EnsureBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return s.wrap(ctx, "head bucket", s.bucket, err)
	}
	in := &awss3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	if r := s.client.Options().Region; r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err = s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return s.wrap(ctx, "create bucket", s.bucket, err)
	}
	return nil
}

// objectKey is the object name of key: the raw object name for an adopted
// key (see AdoptedKey), Prefix + key for every other key.
func (s *Store) objectKey(key string) *string {
	if name, ok := AdoptedName(key); ok {
		return aws.String(name)
	}
	return aws.String(s.prefix + key)
}

// ---------------------------------------------------------------------------
// Adopted objects.

const (
	adoptedPrefix  = "x/"
	adoptedSegment = 200
	// MaxAdoptedName is the longest object name (in bytes) AdoptedKey
	// accepts: its key then stays within backends.ValidKey's 512 bytes.
	MaxAdoptedName = 255
)

// AdoptedKey returns the key under which a Store reaches objectName, an
// object of its bucket outside its own key space (blobgw import s3): "x/"
// followed by the unpadded base64url encoding of the name, split into
// '/'-separated segments of at most 200 characters, so that the key is a
// valid backends.ValidKey for any non-empty name of up to MaxAdoptedName
// bytes. The mapping is reversible (AdoptedName) and the object name is
// used as is, without the Store's Prefix.
//
// Open, Stat, Delete and DeleteMany work on adopted keys; Put refuses them
// (the gateway never writes into another key space), and List, which lists
// only the Store's own prefix, does not report them.
func AdoptedKey(objectName string) string {
	enc := base64.RawURLEncoding.EncodeToString([]byte(objectName))
	var b strings.Builder
	b.Grow(len(adoptedPrefix) + len(enc) + len(enc)/adoptedSegment + 1)
	b.WriteString(adoptedPrefix[:len(adoptedPrefix)-1])
	for len(enc) > 0 {
		n := min(len(enc), adoptedSegment)
		b.WriteByte('/')
		b.WriteString(enc[:n])
		enc = enc[n:]
	}
	return b.String()
}

// AdoptedName reports whether key is an adopted key, exactly as AdoptedKey
// makes them, and returns the object name it stands for. Any other key,
// even one starting with "x/" (say "x/y", which is not a canonical
// encoding), is an ordinary key under the Store's prefix.
func AdoptedName(key string) (string, bool) {
	return adoptedName(key)
}

// IsAdopted reports whether key is an adopted key (AdoptedKey's form).
func (s *Store) IsAdopted(key string) bool {
	_, ok := adoptedName(key)
	return ok
}

func adoptedName(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, adoptedPrefix)
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.ReplaceAll(rest, "/", ""))
	if err != nil || len(raw) == 0 || AdoptedKey(string(raw)) != key {
		return "", false
	}
	return string(raw), true
}

// ---------------------------------------------------------------------------
// Put.

// Put stores r under key; see backends.Backend. A known size up to PartSize
// is streamed in one PutObject; anything else is read in parts of PartSize:
// a body that fits in one part goes in one PutObject, a longer one in a
// multipart upload of up to Concurrency parts at a time.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if !backends.ValidKey(key) {
		return fmt.Errorf("s3: put %q: invalid key", key)
	}
	if _, ok := AdoptedName(key); ok {
		return fmt.Errorf("s3: put %s: an adopted key cannot be written", key)
	}
	if size < -1 || size > maxObjectSize {
		return fmt.Errorf("s3: put %s: invalid size %d", key, size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3: put %s: %w", key, err)
	}
	switch {
	case size == 0:
		return s.putEmpty(ctx, key, r)
	case size > 0 && size <= s.partSize:
		return s.putStream(ctx, key, r, size)
	default:
		return s.putParts(ctx, key, r, size)
	}
}

// errLength reports a body whose length differs from the announced size.
type errLength struct {
	key        string
	size, read int64
	long       bool
}

func (e *errLength) Error() string {
	if e.long {
		return fmt.Sprintf("s3: put %s: body is longer than its size %d", e.key, e.size)
	}
	return fmt.Sprintf("s3: put %s: body ended after %d of %d bytes", e.key, e.read, e.size)
}

// maxEmptyReads bounds the (0, nil) reads tolerated in a row from a body.
const maxEmptyReads = 100

// putEmpty stores an empty object after checking that r is empty.
func (s *Store) putEmpty(ctx context.Context, key string, r io.Reader) error {
	switch err := probeEOF(r); {
	case err == errMore:
		return &errLength{key: key, long: true}
	case err != nil:
		return fmt.Errorf("s3: put %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3: put %s: %w", key, err)
	}
	return s.putObject(ctx, key, nil)
}

// putObject stores a buffered body (nil for an empty object) with one
// conditional PutObject. The body is seekable, so the SDK signs and
// checksums it and may retry.
func (s *Store) putObject(ctx context.Context, key string, body []byte) error {
	objKey := s.objectKey(key)
	var sent int
	_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               objKey,
		Body:              bytes.NewReader(body),
		ContentLength:     aws.Int64(int64(len(body))),
		IfNoneMatch:       aws.String("*"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
	}, countAttempts(&sent))
	err = s.afterRetry(ctx, objKey, sent, err, func() (string, bool) {
		sum := md5.Sum(body) // a single PutObject's ETag, but with SSE-KMS
		return hex.EncodeToString(sum[:]), true
	})
	if err != nil {
		return s.putErr(ctx, key, "", err)
	}
	return nil
}

// putStream streams r, which must yield exactly size bytes, in one
// conditional PutObject without buffering it.
func (s *Store) putStream(ctx context.Context, key string, r io.Reader, size int64) error {
	body := &exactReader{ctx: ctx, r: r, key: key, size: size}
	_, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           s.objectKey(key),
		Body:          body,
		ContentLength: aws.Int64(size),
		IfNoneMatch:   aws.String("*"),
	}, s.streamOpts...)
	if err == nil {
		return nil
	}
	// The body's own failure (the caller's reader, a wrong length, the
	// context) explains the request's; report it rather than what the
	// transport made of it.
	if body.err != nil && body.err != io.EOF {
		var le *errLength
		if errors.As(body.err, &le) {
			return body.err
		}
		return fmt.Errorf("s3: put %s: %w", key, body.err)
	}
	if errors.Is(err, errNotRewindable) && ctx.Err() == nil {
		// The retryer wanted to retry an attempt that had consumed
		// some of the body: its failure was transient.
		return fmt.Errorf("s3: put %s: %w: the request failed after sending part of the body, which cannot be resent: %v", key, backends.ErrUnavailable, err)
	}
	return s.putErr(ctx, key, "", err)
}

// exactReader passes on exactly size bytes of r and fails when r yields
// fewer or more, when r fails, or when ctx is done. It withholds the last
// bytes until it has made sure nothing follows them, so the server never
// receives a complete body from a Put that fails.
//
// Until its first Read it is also an io.Seeker, so that the SDK retries a
// request that failed before taking any of the body (a refused
// connection); afterwards it cannot be rewound and the request fails.
type exactReader struct {
	ctx  context.Context
	r    io.Reader
	key  string
	size int64
	read int64
	pos  int64 // a logical offset set by Seek before the first Read
	err  error // sticky; io.EOF after a complete body
}

// errNotRewindable is returned by Seek once the body has been read.
var errNotRewindable = errors.New("s3: streamed body cannot be rewound once read")

func (e *exactReader) Seek(offset int64, whence int) (int64, error) {
	if e.read > 0 || e.err != nil {
		return 0, errNotRewindable
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += e.pos
	case io.SeekEnd:
		offset += e.size
	default:
		return 0, fmt.Errorf("s3: seek: invalid whence %d", whence)
	}
	if offset < 0 {
		return 0, errors.New("s3: seek: negative position")
	}
	e.pos = offset
	return offset, nil
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.pos != 0 {
		e.err = errors.New("s3: streamed body read after a seek away from its start")
		return 0, e.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if rem := e.size - e.read; int64(len(p)) > rem {
		p = p[:rem]
	}
	var n int
	var err error
	for i := 0; n == 0 && err == nil; i++ {
		if i > maxEmptyReads {
			err = io.ErrNoProgress
			break
		}
		n, err = e.r.Read(p)
	}
	e.read += int64(n)
	if cerr := e.ctx.Err(); cerr != nil {
		e.err = cerr
		return 0, e.err
	}
	switch {
	case err == io.EOF && e.read < e.size:
		e.err = &errLength{key: e.key, size: e.size, read: e.read}
		return 0, e.err
	case err != nil && err != io.EOF:
		e.err = err
		return 0, e.err
	case e.read < e.size:
		return n, nil
	}
	// These are the last bytes: release them only if the body ends here.
	if err != io.EOF {
		if err := probeEOF(e.r); err != nil {
			if err == errMore {
				err = &errLength{key: e.key, size: e.size, long: true}
			}
			e.err = err
			return 0, e.err
		}
	}
	e.err = io.EOF
	return n, io.EOF
}

var errMore = errors.New("s3: body continues")

// probeEOF reads one byte from r: nil at EOF, errMore if there was one, or
// r's error. It is used only where more bytes mean failure.
func probeEOF(r io.Reader) error {
	var one [1]byte
	for i := 0; ; i++ {
		n, err := r.Read(one[:])
		switch {
		case n > 0:
			return errMore
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case i >= maxEmptyReads:
			return io.ErrNoProgress
		}
	}
}

// bodyReader cuts a body into parts, checking the announced size and the
// context as it goes.
type bodyReader struct {
	ctx    context.Context
	r      io.Reader
	key    string
	size   int64 // -1: unknown
	read   int64
	eof    bool
	peeked bool // peek holds the first byte of the next part
	peek   byte
}

// fill reads the next part into p (for a known size, at most the bytes
// remaining) and reports whether more bytes follow it.
func (b *bodyReader) fill(p []byte) (n int, more bool, err error) {
	if b.size >= 0 {
		if rem := b.size - b.read; int64(len(p)) > rem {
			p = p[:rem]
		}
	}
	if b.peeked && len(p) > 0 {
		p[0] = b.peek
		b.peeked = false
		n = 1
	}
	empty := 0
	for n < len(p) && !b.eof {
		m, err := b.r.Read(p[n:])
		n += m
		if cerr := b.ctx.Err(); cerr != nil {
			return n, false, cerr
		}
		switch {
		case err == io.EOF:
			b.eof = true
		case err != nil:
			return n, false, err
		case m == 0:
			if empty++; empty > maxEmptyReads {
				return n, false, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
	b.read += int64(n)
	if b.size >= 0 && b.read < b.size {
		if b.eof {
			return n, false, &errLength{key: b.key, size: b.size, read: b.read}
		}
		return n, true, nil
	}
	if b.eof {
		return n, false, nil
	}
	// p is full (or the known size reached): does the body go on?
	var one [1]byte
	for i := 0; ; i++ {
		m, err := b.r.Read(one[:])
		if cerr := b.ctx.Err(); cerr != nil {
			return n, false, cerr
		}
		switch {
		case m > 0 && b.size >= 0:
			return n, false, &errLength{key: b.key, size: b.size, long: true}
		case m > 0:
			b.peek, b.peeked = one[0], true
			return n, true, nil
		case err == io.EOF:
			b.eof = true
			return n, false, nil
		case err != nil:
			return n, false, err
		case i >= maxEmptyReads:
			return n, false, io.ErrNoProgress
		}
	}
}

// partBuffers hands out the part buffers of one Put: at most max of them,
// taken from the Store's pool when their size is the Store's part size.
type partBuffers struct {
	s         *Store
	size      int64
	max       int
	allocated int         // only the reading goroutine allocates
	free      chan []byte // buffers returned by finished uploads
	all       [][]byte    // everything allocated, to return to the pool
}

func (s *Store) newPartBuffers(size int64) *partBuffers {
	return &partBuffers{s: s, size: size, max: s.concurrency, free: make(chan []byte, s.concurrency)}
}

// get returns a free buffer, waiting for one while max are in use, or
// ctx's cause once ctx is done, even while a buffer is free: a failed
// part cancels ctx before it gives its buffer back, and the reading loop
// must stop there rather than read the rest of the client's body into
// the buffers the canceled uploads keep returning.
func (pb *partBuffers) get(ctx context.Context) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	select {
	case b := <-pb.free:
		return b, nil
	default:
	}
	if pb.allocated < pb.max {
		pb.allocated++
		var b []byte
		if pb.size == pb.s.partSize {
			if p, ok := pb.s.bufPool.Get().(*[]byte); ok {
				b = *p
			}
		}
		if b == nil {
			b = make([]byte, pb.size)
		}
		pb.all = append(pb.all, b)
		return b, nil
	}
	select {
	case b := <-pb.free:
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// put returns a buffer obtained from get.
func (pb *partBuffers) put(b []byte) { pb.free <- b[:cap(b)] }

// release returns all buffers to the Store's pool; nothing may use them
// any more.
func (pb *partBuffers) release() {
	if pb.size != pb.s.partSize {
		return
	}
	for _, b := range pb.all {
		pb.s.bufPool.Put(&b)
	}
	pb.all = nil
}

// putParts reads r in parts: one part is stored with PutObject, more with a
// multipart upload.
func (s *Store) putParts(ctx context.Context, key string, r io.Reader, size int64) error {
	partSize := s.partSize
	if size > 0 {
		// A known size may need larger parts to stay within 10,000;
		// round them up to a MiB.
		if need := (size + maxParts - 1) / maxParts; need > partSize {
			partSize = (need + 1<<20 - 1) &^ (1<<20 - 1)
		}
		if partSize > MaxPartSize {
			return fmt.Errorf("s3: put %s: size %d needs parts larger than %d bytes", key, size, int64(MaxPartSize))
		}
	}
	body := &bodyReader{ctx: ctx, r: r, key: key, size: size}
	bufs := s.newPartBuffers(partSize)
	defer bufs.release()
	buf, err := bufs.get(ctx)
	if err != nil {
		return fmt.Errorf("s3: put %s: %w", key, err)
	}
	n, more, err := body.fill(buf)
	if err != nil {
		return wrapBodyErr(key, err)
	}
	if !more {
		return s.putObject(ctx, key, buf[:n])
	}
	return s.multipart(ctx, key, body, bufs, buf[:n])
}

func wrapBodyErr(key string, err error) error {
	var le *errLength
	if errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("s3: put %s: %w", key, err)
}

// multipart uploads first and the rest of body as a multipart upload, and
// completes it only if every part was read and stored; otherwise it aborts
// the upload.
func (s *Store) multipart(ctx context.Context, key string, body *bodyReader, bufs *partBuffers, first []byte) error {
	objKey := s.objectKey(key)
	// The upload is created whatever becomes of ctx: cancelled while the
	// server answers, the upload would exist with an id nobody learnt,
	// left for ever (no listing or collector looks for uploads). A
	// short, bounded request; ctx is checked right after.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	created, err := s.client.CreateMultipartUpload(cctx, &awss3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               objKey,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
	})
	ccancel()
	if err != nil {
		return s.putErr(ctx, key, "create multipart upload", err)
	}
	uploadID := created.UploadId
	if err := ctx.Err(); err != nil {
		return s.abort(ctx, key, uploadID, fmt.Errorf("s3: put %s: %w", key, err))
	}

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		parts    []types.CompletedPart
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	upload := func(num int32, part []byte) {
		defer wg.Done()
		// UploadPart returns only once the SDK has detached the request
		// body, so the buffer may be refilled even if the transport
		// is still closing the connection.
		defer bufs.put(part)
		out, err := s.client.UploadPart(pctx, &awss3.UploadPartInput{
			Bucket:            aws.String(s.bucket),
			Key:               objKey,
			UploadId:          uploadID,
			PartNumber:        aws.Int32(num),
			Body:              bytes.NewReader(part),
			ContentLength:     aws.Int64(int64(len(part))),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		})
		if err != nil {
			fail(s.putErr(ctx, key, fmt.Sprintf("upload part %d", num), err))
			return
		}
		mu.Lock()
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32C: out.ChecksumCRC32C})
		mu.Unlock()
	}

	part, num, more := first, int32(1), true
	for {
		wg.Add(1)
		go upload(num, part)
		if !more {
			break
		}
		if num == maxParts {
			fail(fmt.Errorf("s3: put %s: body longer than %d parts of %d bytes", key, maxParts, bufs.size))
			break
		}
		buf, err := bufs.get(pctx)
		if err != nil {
			fail(fmt.Errorf("s3: put %s: %w", key, err))
			break
		}
		var n int
		n, more, err = body.fill(buf)
		if err != nil {
			bufs.put(buf)
			fail(wrapBodyErr(key, err))
			break
		}
		part, num = buf[:n], num+1
	}
	wg.Wait()

	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("s3: put %s: %w", key, ctx.Err())
	}
	if firstErr != nil {
		return s.abort(ctx, key, uploadID, firstErr)
	}
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	in := &awss3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             objKey,
		UploadId:        uploadID,
		IfNoneMatch:     aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	for attempt := 0; ; attempt++ {
		var sent int // requests the SDK sent: more than one is a retry
		_, err = s.client.CompleteMultipartUpload(ctx, in, countAttempts(&sent))
		err = s.afterRetry(ctx, objKey, sent, err, func() (string, bool) { return multipartETag(parts) })
		// 409 ConditionalRequestConflict: a concurrent conditional
		// write to the key is in flight; S3 asks to retry.
		if err == nil || !hasCode(err, "ConditionalRequestConflict") || attempt == 4 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	if err != nil {
		return s.abort(ctx, key, uploadID, s.putErr(ctx, key, "complete multipart upload", err))
	}
	return nil
}

// countAttempts is a per-call option counting into *n the requests the
// SDK sends for one call, retries included.
func countAttempts(n *int) func(*awss3.Options) {
	return func(o *awss3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("blobgwCountAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					*n++
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}

// afterRetry judges err, the failure of a conditional write (If-None-Match:
// *) the SDK sent sent times. A retry after an attempt whose answer was
// lost (a 5xx, a cut connection) that had stored the object is refused,
// PreconditionFailed (the object exists) or NoSuchUpload (the upload was
// completed): the write succeeded if the object's ETag is etag's; when
// that cannot be told, the Put failed for the store's sake, not the
// caller's (ErrUnavailable, never ErrExists). Any other err is returned
// as it is.
func (s *Store) afterRetry(ctx context.Context, objKey *string, sent int, err error, etag func() (string, bool)) error {
	if err == nil || sent < 2 || !(isPreconditionFailed(err) || hasCode(err, "NoSuchUpload")) {
		return err
	}
	if want, ok := etag(); ok {
		out, herr := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: objKey})
		if herr == nil && strings.Trim(aws.ToString(out.ETag), `"`) == want {
			return nil
		}
	}
	return fmt.Errorf("%w: a retried write was refused, an earlier attempt may have made it: %v", backends.ErrUnavailable, err)
}

// multipartETag is S3's ETag of an object completed from parts: the MD5
// of their MD5s, "-" and their count. False when a part's ETag is not an
// MD5 (SSE-KMS).
func multipartETag(parts []types.CompletedPart) (string, bool) {
	h := md5.New()
	for _, p := range parts {
		sum, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(sum) != md5.Size {
			return "", false
		}
		h.Write(sum)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

// abort aborts a multipart upload after cause made the Put fail, even if ctx
// is done, and returns cause (noting a failed abort).
func (s *Store) abort(ctx context.Context, key string, uploadID *string, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := s.client.AbortMultipartUpload(actx, &awss3.AbortMultipartUploadInput{
		Bucket:   aws.String(s.bucket),
		Key:      s.objectKey(key),
		UploadId: uploadID,
	})
	var nsu *types.NoSuchUpload
	if err != nil && !errors.As(err, &nsu) {
		return fmt.Errorf("%w (aborting multipart upload %s also failed: %v)", cause, aws.ToString(uploadID), err)
	}
	return cause
}

// putErr wraps an error of a Put request: ErrExists for a failed
// If-None-Match, the context's error when it is done.
func (s *Store) putErr(ctx context.Context, key, step string, err error) error {
	op := "put"
	if step != "" {
		op = "put (" + step + ")"
	}
	if isPreconditionFailed(err) && ctx.Err() == nil {
		return fmt.Errorf("s3: %s %s: %w", op, key, backends.ErrExists)
	}
	return s.wrap(ctx, op, key, err)
}

// ---------------------------------------------------------------------------
// Reads.

// Open returns a reader of length bytes of key from offset (length -1: to
// the end) with a ranged GetObject. A range reaching past the end of the
// object is an error.
func (s *Store) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if !backends.ValidKey(key) {
		return nil, fmt.Errorf("s3: open %q: invalid key", key)
	}
	if offset < 0 || length < -1 {
		return nil, fmt.Errorf("s3: open %s: invalid range offset %d length %d", key, offset, length)
	}
	if length == 0 {
		if err := s.checkOffset(ctx, key, offset); err != nil {
			return nil, err
		}
		return http.NoBody, nil
	}
	in := &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3: open %s: %w", key, backends.ErrNotFound)
		}
		if !isInvalidRange(err) {
			return nil, s.wrap(ctx, "open", key, err)
		}
		// The range starts at or past the end: at the end, it is an
		// empty read to the end; past it, or with a length, an error.
		if err := s.checkOffset(ctx, key, offset); err != nil {
			return nil, err
		}
		if length == -1 {
			return http.NoBody, nil
		}
		return nil, fmt.Errorf("s3: open %s: range offset %d length %d beyond the object", key, offset, length)
	}
	if in.Range != nil && !strings.HasPrefix(aws.ToString(out.ContentRange), "bytes "+strconv.FormatInt(offset, 10)+"-") {
		// A 200 with the whole object: HTTP lets a server (or a proxy)
		// ignore Range, and its first bytes are not those at offset.
		out.Body.Close()
		return nil, fmt.Errorf("s3: open %s: range offset %d length %d: the answer is not that range (Content-Range %q)", key, offset, length, aws.ToString(out.ContentRange))
	}
	n := aws.ToInt64(out.ContentLength)
	if length > 0 && n != length {
		out.Body.Close()
		return nil, fmt.Errorf("s3: open %s: range offset %d length %d beyond the object (%d bytes available)", key, offset, length, n)
	}
	return &objectReader{body: out.Body, key: key, remaining: n}, nil
}

// checkOffset succeeds if key exists and offset is at most its size.
func (s *Store) checkOffset(ctx context.Context, key string, offset int64) error {
	info, err := s.stat(ctx, "open", key)
	if err != nil {
		return err
	}
	if offset > info.Size {
		return fmt.Errorf("s3: open %s: offset %d beyond object size %d", key, offset, info.Size)
	}
	return nil
}

// objectReader reads a GetObject body, turning an early end into
// io.ErrUnexpectedEOF and transport failures into ErrUnavailable.
type objectReader struct {
	body      io.ReadCloser
	key       string
	remaining int64
}

func (r *objectReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.remaining -= int64(n)
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF && r.remaining > 0:
		err = io.ErrUnexpectedEOF
	case err == io.EOF:
		return n, io.EOF
	}
	if isUnavailable(err) {
		return n, fmt.Errorf("s3: read %s: %w: %v", r.key, backends.ErrUnavailable, err)
	}
	return n, fmt.Errorf("s3: read %s: %w", r.key, err)
}

func (r *objectReader) Close() error { return r.body.Close() }

// Stat describes key with HeadObject.
func (s *Store) Stat(ctx context.Context, key string) (backends.ObjectInfo, error) {
	if !backends.ValidKey(key) {
		return backends.ObjectInfo{}, fmt.Errorf("s3: stat %q: invalid key", key)
	}
	return s.stat(ctx, "stat", key)
}

func (s *Store) stat(ctx context.Context, op, key string) (backends.ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)})
	if err != nil {
		if isNotFound(err) {
			// A HEAD's 404 has no body, so it says NoSuchKey and
			// NoSuchBucket alike: a missing bucket is an outage
			// (unavailableCodes), never a missing object.
			// (A HeadBucket refused otherwise, say 403 to
			// credentials without s3:ListBucket, leaves the 404.)
			if _, berr := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(s.bucket)}); berr != nil {
				if isNotFound(berr) {
					return backends.ObjectInfo{}, fmt.Errorf("s3: %s %s: %w: bucket %s: NoSuchBucket", op, key, backends.ErrUnavailable, s.bucket)
				}
				if ctx.Err() != nil || isUnavailable(berr) {
					return backends.ObjectInfo{}, s.wrap(ctx, op, key, berr)
				}
			}
			return backends.ObjectInfo{}, fmt.Errorf("s3: %s %s: %w", op, key, backends.ErrNotFound)
		}
		return backends.ObjectInfo{}, s.wrap(ctx, op, key, err)
	}
	return backends.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// List calls fn for every object under prefix (after the Store's prefix),
// page by page with ListObjectsV2. Objects in the bucket whose names are
// not valid keys (not written by a Store) are skipped.
func (s *Store) List(ctx context.Context, prefix string, fn func(backends.ObjectInfo) error) error {
	// No valid key starts with a prefix like "/" or "a//", and some
	// servers (MinIO) reject such a prefix instead of listing nothing.
	if prefix != "" && !backends.ValidKey(prefix) && !backends.ValidKey(prefix+"x") {
		return nil
	}
	p := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.wrap(ctx, "list", strconv.Quote(prefix), err)
		}
		for _, o := range page.Contents {
			key, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || !backends.ValidKey(key) {
				continue
			}
			if err := fn(backends.ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Deletes.

// Delete removes key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if !backends.ValidKey(key) {
		return fmt.Errorf("s3: delete %q: invalid key", key)
	}
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.objectKey(key)})
	if err != nil && !isNotFound(err) {
		return s.wrap(ctx, "delete", key, err)
	}
	return nil
}

// DeleteMany removes keys with DeleteObjects, up to 1000 per request;
// missing keys are not an error. It validates every key before deleting
// any, and on failure reports the keys that may remain.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if !backends.ValidKey(k) {
			return fmt.Errorf("s3: delete %q: invalid key", k)
		}
	}
	var failed []string
	var firstErr error
	unavailable := false
	for batch := range slices.Chunk(keys, maxDeleteBatch) {
		objs := make([]types.ObjectIdentifier, len(batch))
		keyOf := make(map[string]string, len(batch)) // object name -> key
		for i, k := range batch {
			objs[i] = types.ObjectIdentifier{Key: s.objectKey(k)}
			keyOf[*objs[i].Key] = k
		}
		out, err := s.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{
			Bucket: aws.String(s.bucket),
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return s.wrap(ctx, "delete-many", fmt.Sprintf("(%d keys, %d failed before)", len(batch), len(failed)), err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			key, ok := keyOf[aws.ToString(e.Key)]
			if !ok {
				key = strings.TrimPrefix(aws.ToString(e.Key), s.prefix)
			}
			failed = append(failed, key)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %s: %s", key, aws.ToString(e.Code), aws.ToString(e.Message))
			}
			if unavailableCodes[aws.ToString(e.Code)] {
				unavailable = true
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if unavailable {
		return fmt.Errorf("s3: delete-many: %d of %d keys not deleted: %w: %v", len(failed), len(keys), backends.ErrUnavailable, firstErr)
	}
	return fmt.Errorf("s3: delete-many: %d of %d keys not deleted: %w", len(failed), len(keys), firstErr)
}

// ---------------------------------------------------------------------------
// Errors.

// wrap adds op and key to err: the context's error if ctx is done,
// ErrUnavailable for a failure of the store itself.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("s3: %s %s: %w", op, key, cerr)
	}
	if isUnavailable(err) {
		return fmt.Errorf("s3: %s %s: %w: %v", op, key, backends.ErrUnavailable, err)
	}
	return fmt.Errorf("s3: %s %s: %w", op, key, err)
}

// unavailableCodes are S3 error codes saying the service, not the request,
// is at fault.
var unavailableCodes = map[string]bool{
	"InternalError":                 true,
	"ServiceUnavailable":            true,
	"SlowDown":                      true,
	"RequestTimeout":                true,
	"RequestTimeoutException":       true,
	"Throttling":                    true,
	"ThrottlingException":           true,
	"ThrottledException":            true,
	"RequestThrottled":              true,
	"RequestThrottledException":     true,
	"TooManyRequestsException":      true,
	"RequestLimitExceeded":          true,
	"BandwidthLimitExceeded":        true,
	"ProvisionedThroughputExceeded": true,
	"ConditionalRequestConflict":    true, // a concurrent write; retry later
	"XMinioServerNotInitialized":    true,
	"XMinioStorageFull":             true,
	"XMinioReadQuorum":              true,
	"XMinioWriteQuorum":             true,
	// The bucket the store was opened on (EnsureBucket) is not found: a
	// distributed MinIO node that restarted and has not loaded or healed
	// the bucket yet, or a bucket removed behind the gateway. Either way
	// the store cannot serve, and nothing says the object is gone (the
	// gateway answers 503 and logs the store as unavailable).
	"NoSuchBucket": true,
}

// isUnavailable reports whether err is a failure of the store or of the way
// to it: a transport error, a timeout, a 5xx or throttling response.
func isUnavailable(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && unavailableCodes[ae.ErrorCode()] {
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		if c := re.HTTPStatusCode(); c >= 500 || c == http.StatusTooManyRequests {
			return true
		}
	}
	var (
		send  *smithyhttp.RequestSendError
		rto   *awshttp.ResponseTimeoutError
		ne    net.Error
		de    *smithy.DeserializationError
		quota *ratelimit.QuotaExceededError
	)
	return errors.As(err, &send) || errors.As(err, &rto) || errors.As(err, &ne) ||
		errors.As(err, &de) || errors.As(err, &quota) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

func hasCode(err error, codes ...string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && slices.Contains(codes, ae.ErrorCode())
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isNotFound(err error) bool {
	var (
		nsk *types.NoSuchKey
		nf  *types.NotFound
	)
	if errors.As(err, &nsk) || errors.As(err, &nf) || hasCode(err, "NoSuchKey", "NotFound") {
		return true
	}
	// A 404 without a body (HEAD) is a missing object; NoSuchBucket, a
	// misconfiguration, is not.
	return httpStatus(err) == http.StatusNotFound && !hasCode(err, "NoSuchBucket")
}

func isPreconditionFailed(err error) bool {
	return hasCode(err, "PreconditionFailed") || httpStatus(err) == http.StatusPreconditionFailed
}

func isInvalidRange(err error) bool {
	return hasCode(err, "InvalidRange") || httpStatus(err) == http.StatusRequestedRangeNotSatisfiable
}
