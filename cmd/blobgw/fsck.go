package main

// `blobgw fsck` compares the metadata store with the byte backend.
//
// Both sides stream, sorted by key, and are merge-joined, so memory stays
// bounded at any object count:
//   - the backend's listing of the gateway's key space (gateway.newKey:
//     "b/xx/yy/<32 hex>") goes through an external sort: fsckChunk keys at a
//     time are sorted in memory and, once there is more than one chunk,
//     spilled to temporary files (one key a line) that are merged with a
//     heap holding one line per file; Backend.List promises no order;
//   - the metadata side is Store.ReferencedKeys, which the database sorts
//     (spilling to disk itself) and streams.
//
// The bound is fsckChunk listed keys plus one buffered reader per spilled
// chunk, plus at most fsckListCap keys of each kind kept for --json.
//
// Races with live gateways: the listing is taken first, the metadata after.
// An upload records its intent before writing a byte, so every listed
// object is referenced by the time the metadata is read unless it is an
// orphan, or it was collected meanwhile (a Stat then finds it gone and it
// is not reported). A key a row references but the listing lacks is Stat-ed
// too: it may have been written after the listing, or be an adopted object
// (blobgw import s3) outside the listed key space.

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blobgw/blobgw/backends"
	"github.com/blobgw/blobgw/leasedb"
	"github.com/urfave/cli/v2"
)

const (
	// fsckChunk is how many listed keys are sorted in memory at a time.
	fsckChunk = 100_000
	// fsckListCap bounds the keys of each kind listed by --json.
	fsckListCap = 1000
	// fsckRepairBatch is how many keys one --repair transaction queues.
	fsckRepairBatch = 500
	// gatewayKeyPrefix is the leading segment of every key gateway.newKey
	// makes.
	gatewayKeyPrefix = "b/"
)

func fsckCommand() *cli.Command {
	return &cli.Command{
		Name: "fsck",
		Usage: "compare the metadata store with the backend: report rows whose bytes are missing (exit status 1) and " +
			"objects nothing references; --repair queues those for collection after gc_grace. " +
			"Safe while gateways serve: objects of uploads in flight are referenced by their intents",
		Flags: append(configFlags(),
			&cli.BoolFlag{Name: "repair", Usage: "queue unreferenced objects for collection (deleted by the collector after gc_grace)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document (at most 1000 keys of each kind, with totals)"},
		),
		Action: fsck,
	}
}

// fsckMissing is a key that a row references and the backend lacks.
type fsckMissing struct {
	Key string `json:"key"`
	Ref string `json:"ref"`
}

// fsckReport is the --json document.
type fsckReport struct {
	Objects           int64         `json:"objects"`
	ReferencedKeys    int64         `json:"referenced_keys"`
	Missing           int64         `json:"missing"`
	MissingKeys       []fsckMissing `json:"missing_keys"`
	Unreferenced      int64         `json:"unreferenced"`
	UnreferencedBytes int64         `json:"unreferenced_bytes"`
	UnreferencedKeys  []string      `json:"unreferenced_keys"`
	Queued            int64         `json:"queued"`
	// QueuedReferenced counts keys the collection queue holds for
	// deletion while a row still references them: the collector deletes
	// due entries without looking for references, so these are bytes a
	// blob needs that are about to be lost (exit status 1).
	QueuedReferenced     int64         `json:"queued_referenced"`
	QueuedReferencedKeys []fsckMissing `json:"queued_referenced_keys"`
}

func fsck(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	ctx, store, backend, done, err := openInterruptible(c, cfg)
	if err != nil {
		return err
	}
	defer done()
	jsonOut, repair := c.Bool("json"), c.Bool("repair")
	out := c.App.Writer
	prog := newFsckProgress(c.App.ErrWriter)
	rep := fsckReport{MissingKeys: []fsckMissing{}, UnreferencedKeys: []string{}, QueuedReferencedKeys: []fsckMissing{}}

	sorter := &keySorter{chunk: fsckChunk}
	defer sorter.close()
	if err := backend.List(ctx, gatewayKeyPrefix, func(o backends.ObjectInfo) error {
		if !gatewayKeyRE.MatchString(o.Key) {
			return nil // not a key the gateway writes (a shared bucket with no s3 prefix)
		}
		rep.Objects++
		prog.update("listed %d objects", rep.Objects)
		return sorter.add(o)
	}); err != nil {
		return cli.Exit("fsck: list backend: "+err.Error(), 1)
	}
	prog.done("listed %d objects", rep.Objects)
	objs, err := sorter.iter()
	if err != nil {
		return cli.Exit("fsck: "+err.Error(), 1)
	}

	var pending []string
	flushRepair := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := store.Update(ctx, func(tx leasedb.Tx) error {
			now, err := tx.Now(ctx)
			if err != nil {
				return err
			}
			return tx.AddGC(ctx, pending, now.Add(cfg.GCGrace))
		})
		if err != nil {
			return fmt.Errorf("queue for collection: %w", err)
		}
		rep.Queued += int64(len(pending))
		pending = pending[:0]
		return nil
	}
	// unreferenced handles a listed object no key of the metadata names.
	unreferenced := func(o backends.ObjectInfo) error {
		if _, err := backend.Stat(ctx, o.Key); errors.Is(err, backends.ErrNotFound) {
			return nil // collected since the listing
		} else if err != nil {
			return fmt.Errorf("stat %s: %w", o.Key, err)
		}
		rep.Unreferenced++
		rep.UnreferencedBytes += o.Size
		if len(rep.UnreferencedKeys) < fsckListCap {
			rep.UnreferencedKeys = append(rep.UnreferencedKeys, o.Key)
		}
		if !jsonOut {
			prog.line(out, "unreferenced: %s (%d bytes)", o.Key, o.Size)
		}
		if repair {
			pending = append(pending, o.Key)
			if len(pending) >= fsckRepairBatch {
				return flushRepair()
			}
		}
		return nil
	}
	cur, ok, err := objs.next()
	if err != nil {
		return cli.Exit("fsck: "+err.Error(), 1)
	}
	var checked int64
	// finding counts one finding of a kind, keeps it for --json (up to
	// fsckListCap) and prints it in the text form.
	finding := func(n *int64, keys *[]fsckMissing, what, key, ref string) {
		*n++
		if len(*keys) < fsckListCap {
			*keys = append(*keys, fsckMissing{Key: key, Ref: ref})
		}
		if !jsonOut {
			prog.line(out, "%s: %s: bytes of %s", what, ref, key)
		}
	}
	err = store.ReferencedKeys(ctx, func(key, ref string) error {
		rep.ReferencedKeys++
		for ok && cur.Key < key {
			if err := unreferenced(cur); err != nil {
				return err
			}
			checked++
			var err error
			if cur, ok, err = objs.next(); err != nil {
				return err
			}
		}
		prog.update("checked %d of %d objects, %d referenced keys", checked, rep.Objects, rep.ReferencedKeys)
		if ok && cur.Key == key {
			checked++
			var err error
			cur, ok, err = objs.next()
			return err
		}
		if ref == "" {
			return nil // an intent or a queued deletion: the bytes need not exist
		}
		if _, err := backend.Stat(ctx, key); err == nil {
			return nil // written after the listing, or adopted (outside the listed key space)
		} else if !errors.Is(err, backends.ErrNotFound) {
			return fmt.Errorf("stat %s: %w", key, err)
		}
		finding(&rep.Missing, &rep.MissingKeys, "missing", key, ref)
		return nil
	})
	for err == nil && ok {
		if err = unreferenced(cur); err == nil {
			cur, ok, err = objs.next()
		}
	}
	if err == nil {
		err = flushRepair()
	}
	if err == nil {
		err = store.QueuedReferencedKeys(ctx, func(key, ref string) error {
			finding(&rep.QueuedReferenced, &rep.QueuedReferencedKeys, "queued for deletion but referenced", key, ref)
			return nil
		})
	}
	if err != nil {
		return cli.Exit("fsck: "+err.Error(), 1)
	}
	prog.done("checked %d objects, %d referenced keys", rep.Objects, rep.ReferencedKeys)
	if jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%d objects, %d referenced keys: %d missing, %d unreferenced (%d bytes), %d referenced but queued for deletion",
			rep.Objects, rep.ReferencedKeys, rep.Missing, rep.Unreferenced, rep.UnreferencedBytes, rep.QueuedReferenced)
		if repair {
			fmt.Fprintf(out, ", %d queued for collection after %s", rep.Queued, cfg.GCGrace)
		}
		fmt.Fprintln(out)
	}
	if rep.Missing > 0 {
		return cli.Exit(fmt.Sprintf("fsck: the bytes of %d referenced keys are missing", rep.Missing), 1)
	}
	if rep.QueuedReferenced > 0 {
		return cli.Exit(fmt.Sprintf("fsck: %d referenced keys are queued for deletion", rep.QueuedReferenced), 1)
	}
	return nil
}

// fsckProgress is a progress line rewritten in place on a terminal, and
// plain lines (one when a phase ends, otherwise at most one every 10 s)
// anywhere else.
type fsckProgress struct {
	w    io.Writer
	tty  bool
	last time.Time
	live bool // a progress line is on screen (tty)
}

func newFsckProgress(w io.Writer) *fsckProgress {
	p := &fsckProgress{w: w, last: time.Now()}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *fsckProgress) update(format string, a ...any) {
	every := 10 * time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[Kfsck: "+format, a...)
		p.live = true
		return
	}
	fmt.Fprintf(p.w, "fsck: "+format+"\n", a...)
}

func (p *fsckProgress) done(format string, a ...any) {
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.live = false
	}
	fmt.Fprintf(p.w, "fsck: "+format+"\n", a...)
}

// line prints a finding to w, clearing the progress line first when both
// go to the same terminal.
func (p *fsckProgress) line(w io.Writer, format string, a ...any) {
	if p.live && w == p.w {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.live = false
	}
	fmt.Fprintf(w, format+"\n", a...)
}

// keySorter is an external sort of backend objects by key: chunk objects
// in memory, sorted and spilled to a temporary file whenever the chunk is
// full.
type keySorter struct {
	chunk int
	buf   []backends.ObjectInfo
	runs  []*os.File
}

func (s *keySorter) add(o backends.ObjectInfo) error {
	s.buf = append(s.buf, o)
	if len(s.buf) >= s.chunk {
		return s.spill()
	}
	return nil
}

func sortObjects(objs []backends.ObjectInfo) {
	slices.SortFunc(objs, func(a, b backends.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
}

// spill writes the sorted chunk to a temporary file, one "key size" line
// per object (a valid key holds neither spaces nor newlines).
func (s *keySorter) spill() error {
	sortObjects(s.buf)
	f, err := os.CreateTemp("", "blobgw-fsck-*")
	if err != nil {
		return err
	}
	_ = os.Remove(f.Name()) // unlinked: gone when closed, even after a crash
	s.runs = append(s.runs, f)
	w := bufio.NewWriter(f)
	for _, o := range s.buf {
		if _, err := fmt.Fprintf(w, "%s %d\n", o.Key, o.Size); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *keySorter) close() {
	for _, f := range s.runs {
		f.Close()
	}
}

// iter returns the objects in key order: the in-memory chunk alone, or a
// merge of the spilled chunks.
func (s *keySorter) iter() (objectIter, error) {
	if len(s.runs) == 0 {
		sortObjects(s.buf)
		return &sliceIter{objs: s.buf}, nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	m := &mergeIter{}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		r := &runReader{sc: bufio.NewScanner(f)}
		if err := r.advance(); err != nil {
			return nil, err
		}
		if r.ok {
			m.h = append(m.h, r)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

type objectIter interface {
	next() (backends.ObjectInfo, bool, error)
}

type sliceIter struct {
	objs []backends.ObjectInfo
	i    int
}

func (it *sliceIter) next() (backends.ObjectInfo, bool, error) {
	if it.i >= len(it.objs) {
		return backends.ObjectInfo{}, false, nil
	}
	it.i++
	return it.objs[it.i-1], true, nil
}

type runReader struct {
	sc  *bufio.Scanner
	cur backends.ObjectInfo
	ok  bool
}

func (r *runReader) advance() error {
	if !r.sc.Scan() {
		r.ok = false
		return r.sc.Err()
	}
	key, size, found := strings.Cut(r.sc.Text(), " ")
	n, err := strconv.ParseInt(size, 10, 64)
	if !found || err != nil {
		return fmt.Errorf("fsck: corrupt spill line %q", r.sc.Text())
	}
	r.cur, r.ok = backends.ObjectInfo{Key: key, Size: n}, true
	return nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].cur.Key < h[j].cur.Key }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

type mergeIter struct{ h runHeap }

func (m *mergeIter) next() (backends.ObjectInfo, bool, error) {
	if len(m.h) == 0 {
		return backends.ObjectInfo{}, false, nil
	}
	r := m.h[0]
	o := r.cur
	if err := r.advance(); err != nil {
		return o, false, err
	}
	if r.ok {
		heap.Fix(&m.h, 0)
	} else {
		heap.Pop(&m.h)
	}
	return o, true, nil
}
