package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blobgw/blobgw/leasedb"
	"github.com/blobgw/blobgw/leasedb/pgtest"
	"github.com/blobgw/blobgw/leasedb/postgres"
	"github.com/blobgw/blobgw/leasedb/postgres/postgrestest"
	"github.com/blobgw/blobgw/svcerr"
)

// etagForm is the form of every ETag a write stores (formatETag).
var etagForm = regexp.MustCompile(`^"0x[0-9A-F]+"$`)

// oneTripPut is the small inline Put Blob the one-round-trip tests send.
func oneTripPut(account, container, name string, leaseID string, cond leasedb.Conditions) leasedb.PutBlobRequest {
	return leasedb.PutBlobRequest{Ref: leasedb.BlobRef{Account: account, Container: container, Name: name}, Type: "BlockBlob",
		Extents: []leasedb.Extent{{Size: 4, Data: []byte("new!")}},
		BlobContent: leasedb.BlobContent{Props: leasedb.Props{ContentType: "text/new", ContentMD5: []byte{1, 2, 3}},
			Metadata: map[string]string{"m": "new"}, Tags: map[string]string{"t": "new"}},
		LeaseID: leaseID, Cond: cond}
}

// TestPutBlobOneTrip: a small inline Put Blob on Postgres takes one round
// trip (BEGIN, the statement that locks, checks and writes, the staged
// blocks' check and COMMIT in one batch) exactly in the cases it covers,
// and in those where checkPutBlob refuses the request on the row the
// statement locked (a present, plain, inline row: an If-Match that
// fails, a lease id missing), and every other case falls back to the
// few-statement path; either way
// it leaves what the generic Tx sequence leaves for the same request over
// the same state (run in an account of its own): the outcome, the row
// (its ETag in the stored form, Last-Modified the write's, the creation
// time and the lease kept), the blob_tags index rows, the staged blocks,
// the snapshots, the versions and the collection queue.
func TestPutBlobOneTrip(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := postgrestest.OpenCounting(t, dsn)
	conn := pgtest.Connect(t, dsn)
	fast, generic := &leasedb.DB{Store: s}, &leasedb.DB{Store: genericStore{s}}
	const leaseID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	for _, acct := range []string{"a", "g", "va", "vg"} {
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: acct, Name: "c", ETag: `"0x1"`, LastModified: now})
		})
	}
	for _, acct := range []string{"va", "vg"} {
		if err := generic.SetVersioning(ctx, acct, true); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(acct, name string) leasedb.BlobRef {
		return leasedb.BlobRef{Account: acct, Container: "c", Name: name}
	}
	// The states a case starts from, made the same way in both accounts.
	inline := func(acct, name string) string {
		b, _, err := generic.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(acct, name), Type: "BlockBlob",
			Extents: []leasedb.Extent{{Size: 3, Data: []byte("old")}}, BlobContent: leasedb.BlobContent{Tags: map[string]string{"t": "old", "u": "old"}}})
		if err != nil {
			t.Fatal(err)
		}
		return b.ETag
	}
	absent := func(string, string) string { return "" }
	leased := func(acct, name string) string {
		inline(acct, name)
		h, _, err := generic.LeaseBlob(ctx, ref(acct, name), leasedb.LeaseRequest{Action: leasedb.LeaseAcquire, Duration: -1, ProposedID: leaseID}, leasedb.Conditions{}, leaseID)
		if err != nil {
			t.Fatal(err)
		}
		return h.ETag
	}
	broken := func(acct, name string) string {
		etag := leased(acct, name)
		if _, _, err := generic.LeaseBlob(ctx, ref(acct, name), leasedb.LeaseRequest{Action: leasedb.LeaseBreak, BreakPeriod: 0}, leasedb.Conditions{}, ""); err != nil {
			t.Fatal(err)
		}
		return etag
	}
	snapshot := func(acct, name string) string {
		etag := inline(acct, name)
		if _, err := generic.CreateSnapshot(ctx, ref(acct, name), "", leasedb.Conditions{}, nil); err != nil {
			t.Fatal(err)
		}
		return etag
	}
	staged := func(acct, name string) string {
		etag := inline(acct, name)
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
			_, err := tx.StageBlock(ctx, acct, "c", name, leasedb.Block{ID: "YmxvY2s=", Key: acct + "/staged-" + name, Size: 3})
			return err
		})
		return etag
	}
	keyed := func(acct, name string) string {
		key := acct + "/keyed-" + name
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error { return tx.AddIntent(ctx, key, now.Add(time.Hour)) })
		b, _, err := generic.PutBlob(ctx, leasedb.PutBlobRequest{Ref: ref(acct, name), Type: "BlockBlob", Extents: []leasedb.Extent{{Key: key, Size: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		return b.ETag
	}
	past, future := time.Date(2000, 1, 2, 3, 4, 5, 0, time.UTC), time.Now().Add(24*time.Hour).Truncate(time.Second)
	none := func(string) leasedb.Conditions { return leasedb.Conditions{} }
	ifMatch := func(etag string) leasedb.Conditions {
		return leasedb.Conditions{IfMatch: []string{leasedb.UnquoteETag(etag)}}
	}
	for _, c := range []struct {
		name      string
		versioned bool
		container string
		state     func(acct, name string) string
		leaseID   string
		cond      func(etag string) leasedb.Conditions
		createOK  bool // CreateOnly
		oneTrip   bool
		// answered: refused in the one round trip too, by checkPutBlob
		// on the row the statement locked (leasedb.OneTripHeld).
		answered bool
	}{
		{name: "create", state: absent, cond: none, oneTrip: true},
		{name: "create-if-none-match-star", state: absent, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfNoneMatch: []string{"*"}} }, oneTrip: true},
		{name: "create-only", state: absent, cond: none, createOK: true, oneTrip: true},
		{name: "create-dates-ignored", state: absent, cond: func(string) leasedb.Conditions {
			return leasedb.Conditions{IfModifiedSince: future, HadIMS: true, IfUnmodifiedSince: past, HadIUS: true}
		}, oneTrip: true},
		{name: "create-if-match", state: absent, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfMatch: []string{"0x1"}} }},
		{name: "create-if-match-star", state: absent, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfMatch: []string{"*"}} }},
		{name: "create-lease-id", state: absent, leaseID: leaseID, cond: none},
		{name: "overwrite", state: inline, cond: none, oneTrip: true},
		{name: "if-match", state: inline, cond: ifMatch, oneTrip: true},
		{name: "if-match-star", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfMatch: []string{"*"}} }, oneTrip: true},
		{name: "if-match-wrong", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfMatch: []string{"0x1"}} }, answered: true},
		{name: "if-none-match-star", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfNoneMatch: []string{"*"}} }, answered: true},
		{name: "if-none-match-other", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfNoneMatch: []string{"0x1"}} }, oneTrip: true},
		{name: "if-none-match-same", state: inline, cond: func(etag string) leasedb.Conditions {
			return leasedb.Conditions{IfNoneMatch: []string{leasedb.UnquoteETag(etag)}}
		}, answered: true},
		{name: "if-modified-since-past", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfModifiedSince: past, HadIMS: true} }, oneTrip: true},
		{name: "if-modified-since-future", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfModifiedSince: future, HadIMS: true} }, answered: true},
		{name: "if-unmodified-since-future", state: inline, cond: func(etag string) leasedb.Conditions {
			return leasedb.Conditions{IfMatch: []string{leasedb.UnquoteETag(etag)}, IfUnmodifiedSince: future, HadIUS: true}
		}, oneTrip: true},
		{name: "if-unmodified-since-past", state: inline, cond: func(string) leasedb.Conditions { return leasedb.Conditions{IfUnmodifiedSince: past, HadIUS: true} }, answered: true},
		// An If-Unmodified-Since of 0001-01-01 (the zero time.Time, an HTTP
		// date the gateway parses) fails over any blob: 412, not a write.
		{name: "if-unmodified-since-year-1", state: inline, cond: func(string) leasedb.Conditions {
			return leasedb.Conditions{IfUnmodifiedSince: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), HadIUS: true}
		}},
		// An If-Modified-Since of 0001-01-01 passes over any blob (the
		// few-statement path answers it: the zero time is no parameter).
		{name: "if-modified-since-year-1", state: inline, cond: func(string) leasedb.Conditions {
			return leasedb.Conditions{IfModifiedSince: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), HadIMS: true}
		}},
		{name: "create-only-exists", state: inline, cond: none, createOK: true, answered: true},
		{name: "leased-no-id", state: leased, cond: none, answered: true},
		{name: "leased-wrong-id", state: leased, leaseID: "1f8fad5b-d9cb-469f-a165-70867728950e", cond: none, answered: true},
		{name: "leased-right-id", state: leased, leaseID: leaseID, cond: ifMatch, oneTrip: true},
		{name: "unleased-with-id", state: inline, leaseID: leaseID, cond: none, answered: true},
		{name: "broken-lease", state: broken, cond: none},
		{name: "snapshot", state: snapshot, cond: ifMatch, oneTrip: true},
		{name: "staged-blocks", state: staged, cond: ifMatch},
		{name: "keyed-row", state: keyed, cond: ifMatch},
		{name: "versioning", versioned: true, state: inline, cond: ifMatch},
		{name: "container-missing", container: "nope", state: absent, cond: none},
	} {
		t.Run(c.name, func(t *testing.T) {
			accts := [2]string{"a", "g"}
			if c.versioned {
				accts = [2]string{"va", "vg"}
			}
			cont := "c"
			if c.container != "" {
				cont = c.container
			}
			var got [2]string
			for i, db := range []*leasedb.DB{fast, generic} {
				acct := accts[i]
				etag := c.state(acct, c.name)
				var old *leasedb.Blob
				if c.container == "" {
					old = readBlobIn(t, s, acct, c.name)
				}
				req := oneTripPut(acct, cont, c.name, c.leaseID, c.cond(etag))
				req.CreateOnly = c.createOK
				var ctr postgres.Counter
				before := dbClock(t, s)
				b, _, err := db.PutBlob(postgres.CountInto(ctx, &ctr), req)
				after := dbClock(t, s)
				if i == 0 {
					if rt := ctr.Counts().RoundTrips; (rt == 1) != (c.oneTrip || c.answered) {
						t.Errorf("Put Blob took %d round trips; one-round-trip case: %v, answered from the locked row: %v\n%s", rt, c.oneTrip, c.answered, strings.Join(ctr.Counts().SQL, "\n"))
					}
				}
				got[i] = stepState(t, ctx, s, conn, acct, c.name, old, b, err, before, after)
			}
			if got[0] != got[1] {
				t.Errorf("the store's path and the generic path differ:\nstore:   %s\ngeneric: %s", got[0], got[1])
			}
		})
	}
}

// dbClock is the database's clock.
func dbClock(t *testing.T, s leasedb.Store) time.Time {
	t.Helper()
	var now time.Time
	updateNow(t, s, func(_ leasedb.Tx, n time.Time) error { now = n; return nil })
	return now
}

// stepState is what a Put Blob of acct/c/name left, with what depends on
// the account, the ETag's number and the clock taken out once checked:
// the outcome; the row (its ETag of the stored form and the one
// returned, its Last-Modified the returned one and within the write,
// its creation time the old row's or Last-Modified); its blob_tags
// rows, staged blocks and snapshots; the collection queue's entries of
// the account.
func stepState(t *testing.T, ctx context.Context, s *postgres.Store, conn *pgx.Conn, acct, name string, old, out *leasedb.Blob, err error, before, after time.Time) string {
	t.Helper()
	outcome := "ok"
	if err != nil {
		se, ok := svcerr.As(err)
		if !ok {
			t.Fatalf("Put Blob: %v", err)
		}
		outcome = string(se.Code)
	}
	row := "none"
	if b := readBlobIn(t, s, acct, name); b != nil {
		if !etagForm.MatchString(b.ETag) {
			t.Errorf("row ETag %q is not of the stored form", b.ETag)
		}
		if err == nil && (out.ETag != b.ETag || !out.LastModified.Equal(b.LastModified) || !out.Created.Equal(b.Created) || out.Lease != b.Lease) {
			t.Errorf("Put Blob returned ETag %s, Last-Modified %v, created %v, lease %+v; the row has %s, %v, %v, %+v",
				out.ETag, out.LastModified, out.Created, out.Lease, b.ETag, b.LastModified, b.Created, b.Lease)
		}
		if err == nil && (b.LastModified.Before(before) || b.LastModified.After(after)) {
			t.Errorf("Last-Modified %v is not within the write (%v to %v)", b.LastModified, before, after)
		}
		created := "new"
		switch {
		case old != nil && b.Created.Equal(old.Created):
			created = "kept"
		case !b.Created.Equal(b.LastModified):
			created = "other"
		}
		l := b.Lease
		since := !l.Since.IsZero()
		l.Since = time.Time{}
		if b.VersionID != "" {
			b.VersionID = "(a version id)"
		}
		b.Account, b.ETag, b.Created, b.LastModified, b.Lease = "", "", time.Time{}, time.Time{}, l
		row = fmt.Sprintf("%+v created %s leased since %v", *b, created, since)
		for i := range b.Extents {
			row += fmt.Sprintf(" extent %+v", b.Extents[i])
		}
	}
	q := func(sql string) string {
		var v string
		if err := conn.QueryRow(ctx, sql, acct, name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(v, acct+"/", "")
	}
	tags := q(`SELECT COALESCE(string_agg(key || '=' || value, ',' ORDER BY key), '') FROM blob_tags WHERE account = $1 AND container = 'c' AND name = $2`)
	blocks := q(`SELECT COALESCE(string_agg(key, ',' ORDER BY key), '') FROM blocks WHERE account = $1 AND container = 'c' AND blob = $2`)
	snaps := q(`SELECT count(*)::text || ' ' || $2 FROM snapshots WHERE account = $1 AND container = 'c' AND name = $2`)
	versions := q(`SELECT count(*)::text || ' ' || $2 FROM versions WHERE account = $1 AND container = 'c' AND name = $2`)
	queue, err2 := s.CollectionKeys(ctx)
	if err2 != nil {
		t.Fatal(err2)
	}
	var queued []string
	for _, k := range queue {
		if rest, ok := strings.CutPrefix(k, acct+"/"); ok && strings.HasSuffix(rest, "-"+name) {
			queued = append(queued, rest)
		}
	}
	slices.Sort(queued)
	return fmt.Sprintf("%s; row %s; tags %s; staged %s; snapshots %s; versions %s; queued %v", outcome, row, tags, blocks, snaps, versions, queued)
}

// TestPutBlobOneTripAwaitsLocks: the one-round-trip Put Blob's statement
// takes its snapshot before it waits for the container's and the name's
// locks; what the holder of a lock did meanwhile is not missed. A row
// created meanwhile fails If-None-Match: * (409) and is replaced by a
// Put Blob without conditions; a block staged meanwhile is dropped by the
// Put Blob and its object queued; a container deleted meanwhile (its lock
// held exclusive, as Delete Container holds it) is ContainerNotFound.
func TestPutBlobOneTripAwaitsLocks(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := postgrestest.OpenCounting(t, dsn)
	watcher := pgtest.Connect(t, dsn)
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	put := func(name string, cond leasedb.Conditions) func() error {
		return func() error {
			_, _, err := db.PutBlob(ctx, oneTripPut("a", "c", name, "", cond))
			return err
		}
	}
	holderRow := func(name string, now time.Time) *leasedb.Blob {
		return &leasedb.Blob{Account: "a", Container: "c", Name: name, Type: "BlockBlob", ETag: `"0x2"`,
			Created: now, LastModified: now, Size: 3, Extents: []leasedb.Extent{{Size: 3, Data: []byte("hld")}}}
	}
	data := func(name string) string {
		b := readBlob(t, s, name)
		if b == nil || len(b.Extents) != 1 {
			t.Fatalf("the row of %s is %+v", name, b)
		}
		return string(b.Extents[0].Data)
	}
	t.Run("if-none-match finds the row created meanwhile", func(t *testing.T) {
		err := raceNameLock(t, s, watcher, "created", func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, holderRow("created", now)) },
			put("created", leasedb.Conditions{IfNoneMatch: []string{"*"}}))
		if !svcerr.HasCode(err, svcerr.BlobAlreadyExists) {
			t.Fatalf("Put Blob with If-None-Match: * over a row created while it waited: %v, want BlobAlreadyExists", err)
		}
		if got := data("created"); got != "hld" {
			t.Fatalf("the row holds %q, want the holder's", got)
		}
	})
	t.Run("an overwrite replaces the row created meanwhile", func(t *testing.T) {
		if err := raceNameLock(t, s, watcher, "created2", func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, holderRow("created2", now)) },
			put("created2", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if got := data("created2"); got != "new!" {
			t.Fatalf("the row holds %q, want the put's", got)
		}
	})
	t.Run("a block staged meanwhile is dropped", func(t *testing.T) {
		if _, _, err := db.PutBlob(ctx, oneTripPut("a", "c", "staged", "", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if err := raceNameLock(t, s, watcher, "staged", func(tx leasedb.Tx, now time.Time) error {
			_, err := tx.StageBlock(ctx, "a", "c", "staged", leasedb.Block{ID: "YmxvY2s=", Key: "staged-key", Size: 3})
			return err
		}, put("staged", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		if bs := stagedBlocks(t, s, "staged"); len(bs) != 0 {
			t.Fatalf("staged blocks left: %+v", bs)
		}
		keys, err := s.CollectionKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(keys, "staged-key") {
			t.Fatal("the dropped block's object was not queued for collection")
		}
	})
	// A refusal answered from the locked row (leasedb.OneTripHeld) is
	// the rule on the row's newest version, the one the holder wrote
	// while the put waited, in the one round trip.
	refusedOnce := func(t *testing.T, name string, change func(tx leasedb.Tx, now time.Time) error, cond leasedb.Conditions, want svcerr.Code) {
		t.Helper()
		if _, _, err := db.PutBlob(ctx, oneTripPut("a", "c", name, "", leasedb.Conditions{})); err != nil {
			t.Fatal(err)
		}
		old := readBlob(t, s, name)
		if len(cond.IfMatch) == 1 && cond.IfMatch[0] == "" {
			cond.IfMatch = []string{leasedb.UnquoteETag(old.ETag)} // the ETag before the holder's write
		}
		var ctr postgres.Counter
		err := raceNameLock(t, s, watcher, name, change, func() error {
			_, _, err := db.PutBlob(postgres.CountInto(ctx, &ctr), oneTripPut("a", "c", name, "", cond))
			return err
		})
		if !svcerr.HasCode(err, want) {
			t.Fatalf("Put Blob over the row written while it waited: %v, want %s", err, want)
		}
		if rt := ctr.Counts().RoundTrips; rt != 1 {
			t.Errorf("the refusal took %d round trips, want 1\n%s", rt, strings.Join(ctr.Counts().SQL, "\n"))
		}
		if got := data(name); got != "hld" {
			t.Fatalf("the row holds %q, want the holder's", got)
		}
	}
	t.Run("if-match meets the row rewritten meanwhile", func(t *testing.T) {
		refusedOnce(t, "rewritten", func(tx leasedb.Tx, now time.Time) error { return tx.PutBlob(ctx, holderRow("rewritten", now)) },
			leasedb.Conditions{IfMatch: []string{""}}, svcerr.ConditionNotMet)
	})
	t.Run("a lease acquired meanwhile", func(t *testing.T) {
		refusedOnce(t, "leased", func(tx leasedb.Tx, now time.Time) error {
			b := holderRow("leased", now)
			b.Lease = leasedb.Lease{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", State: "leased", Duration: -1, Since: now}
			return tx.PutBlob(ctx, b)
		}, leasedb.Conditions{}, svcerr.LeaseIdMissing)
	})
	t.Run("a container deleted meanwhile", func(t *testing.T) {
		updateNow(t, s, func(tx leasedb.Tx, now time.Time) error {
			return tx.InsertContainer(ctx, &leasedb.Container{Account: "a", Name: "gone", ETag: `"0x1"`, LastModified: now})
		})
		holder := pgtest.Connect(t, dsn)
		if _, err := holder.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", postgres.ContainerLockKey("a", "gone")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := db.PutBlob(ctx, oneTripPut("a", "gone", "b", "", leasedb.Conditions{}))
			done <- err
		}()
		if waited, err := awaitLockWait(t, watcher, done); !waited {
			t.Fatalf("Put Blob did not wait for the container's lock: %v", err)
		}
		if _, err := holder.Exec(ctx, "DELETE FROM containers WHERE account = 'a' AND name = 'gone'"); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !svcerr.HasCode(err, svcerr.ContainerNotFound) {
			t.Fatalf("Put Blob into a container deleted while it waited: %v, want ContainerNotFound", err)
		}
	})
}

// TestPutBlobOneTripDeadline: a one-round-trip Put Blob waiting for the
// name's lock gives up before its context's deadline (the gateway's
// commit context has one): the server's lock wait is bounded a little
// short of it (lock_timeout), so the statement fails and the COMMIT sent
// with it commits nothing, and the answer says so (unavailable, not an
// unknown outcome). Once the holder is done the row is as before (a
// backend that went on waiting would have committed the write then), and
// the store takes the next Put Blob.
func TestPutBlobOneTripDeadline(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s := open(t, dsn+"&pool_max_conns=3")
	addContainer(t, s)
	db := &leasedb.DB{Store: s}
	if _, _, err := db.PutBlob(ctx, oneTripPut("a", "c", "b", "", leasedb.Conditions{})); err != nil {
		t.Fatal(err)
	}
	before := readBlob(t, s, "b")
	release := holdReplaceLock(t, s, leasedb.BlobRef{Account: "a", Container: "c", Name: "b"})
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := db.PutBlob(dctx, oneTripPut("a", "c", "b", "", leasedb.Conditions{IfMatch: []string{leasedb.UnquoteETag(before.ETag)}}))
	if !errors.Is(err, leasedb.ErrUnavailable) || errors.Is(err, leasedb.ErrCommitUnknown) || time.Since(start) > time.Second {
		t.Fatalf("Put Blob past its deadline: %v after %v, want unavailable, certainly not committed, before the deadline", err, time.Since(start))
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a backend still waiting would have the lock and commit by now
	if after := readBlob(t, s, "b"); after.ETag != before.ETag {
		t.Fatalf("the row's ETag is %s, want %s: the closed connection's write committed", after.ETag, before.ETag)
	}
	if _, _, err := db.PutBlob(ctx, oneTripPut("a", "c", "b", "", leasedb.Conditions{IfMatch: []string{leasedb.UnquoteETag(before.ETag)}})); err != nil {
		t.Fatal(err)
	}
}
