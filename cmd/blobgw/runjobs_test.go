package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The listing feeds the workers as it goes and never runs more than
// lookahead objects ahead of them, so a run over millions of blobs holds a
// bounded list; every listed object is processed once.
func TestRunJobsStreamsTheListing(t *testing.T) {
	const total, workers = 3*lookahead + 17, 4
	var emitted, started, maxAhead atomic.Int64
	release := make(chan struct{})
	// Every worker waits on its first object until the listing has had
	// time to run as far ahead as it may.
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	src := func(ctx context.Context, emit func(migJob) error) error {
		for range total {
			if err := emit(migJob{name: "b", size: 1}); err != nil {
				return err
			}
			if d := emitted.Add(1) - started.Load(); d > maxAhead.Load() {
				maxAhead.Store(d)
			}
		}
		return nil
	}
	var out bytes.Buffer
	err := runJobs(context.Background(), &out, "test", workers, src, func(ctx context.Context, j migJob, p *progress) (bool, error) {
		<-release
		started.Add(1)
		p.moved.Add(j.size)
		p.bytes.Add(j.size)
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := started.Load(); got != total {
		t.Fatalf("%d objects processed, %d listed", got, total)
	}
	if m := maxAhead.Load(); m < lookahead || m > lookahead+workers {
		t.Fatalf("the listing ran %d objects ahead of the workers; want lookahead %d (+%d held by workers)", m, lookahead, workers)
	}
	if !strings.Contains(out.String(), "copied 30017, skipped 0, failed 0") {
		t.Fatalf("summary: %s", out.String())
	}
}

// A listing that fails part way: what was listed is processed, the run
// fails naming the cause, and the totals never claimed to be final.
func TestRunJobsListingFails(t *testing.T) {
	boom := errors.New("list failed")
	src := func(ctx context.Context, emit func(migJob) error) error {
		for range 5 {
			if err := emit(migJob{name: "b"}); err != nil {
				return err
			}
		}
		return boom
	}
	var out bytes.Buffer
	var n atomic.Int64
	err := runJobs(context.Background(), &out, "test", 2, src, func(ctx context.Context, j migJob, p *progress) (bool, error) {
		n.Add(1)
		return false, nil
	})
	if err == nil || !strings.Contains(err.Error(), "list failed") || n.Load() != 5 {
		t.Fatalf("err %v, %d processed", err, n.Load())
	}
	if !strings.Contains(out.String(), "5/5+ objects") {
		t.Fatalf("progress should mark the totals as partial: %s", out.String())
	}
}
