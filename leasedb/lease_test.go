package leasedb

import (
	"testing"
	"time"

	"github.com/blobgw/blobgw/svcerr"
	"github.com/blobgw/blobgw/svcerr/svcerrtest"
)

// Lease ids in normalized form. A is the id on the resource, B and C are
// others, X is the id the caller generates for acquire without a proposal.
const (
	idA = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	idB = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
	idC = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
	idX = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
)

// t0 is the injected clock: every test evaluates at t0 (or t0 + offset).
var t0 = time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// Stored rows, as seen at t0.
var (
	availableZero  = Lease{}
	availableSt    = Lease{State: "available"}
	leasedFixed    = Lease{ID: idA, State: "leased", Duration: 30, Expires: at(20 * sec)} // 20 s left
	leasedInfinite = Lease{ID: idA, State: "leased", Duration: -1}
	breaking       = Lease{ID: idA, State: "breaking", BreakAt: at(10 * sec)} // 10 s left
	brokenSt       = Lease{ID: idA, State: "broken"}
	brokenLazy     = Lease{ID: idA, State: "breaking", BreakAt: at(-1 * sec)}
	brokenEdge     = Lease{ID: idA, State: "breaking", BreakAt: t0} // BreakAt == now → broken
	expired        = Lease{ID: idA, State: "leased", Duration: 15, Expires: at(-5 * sec)}
	expiredEdge    = Lease{ID: idA, State: "leased", Duration: 15, Expires: t0} // Expires == now → expired

	brokenNow = Lease{ID: idA, State: "broken"}
	released  = Lease{State: "available"}
)

func fixedLease(id string, d int, exp time.Time) Lease {
	return Lease{ID: id, State: "leased", Duration: d, Expires: exp}
}

func infiniteLease(id string) Lease { return Lease{ID: id, State: "leased", Duration: -1} }

func breakingUntil(t time.Time) Lease { return Lease{ID: idA, State: "breaking", BreakAt: t} }

func sameLease(a, b Lease) bool {
	return a.ID == b.ID && a.State == b.State && a.Duration == b.Duration &&
		a.Expires.Equal(b.Expires) && a.BreakAt.Equal(b.BreakAt)
}

func TestLeaseEffective(t *testing.T) {
	tests := []struct {
		name     string
		lease    Lease
		now      time.Time
		want     LeaseState
		status   string
		duration string
	}{
		{"zero lease", availableZero, t0, LeaseAvailable, "unlocked", ""},
		{"stored available", availableSt, t0, LeaseAvailable, "unlocked", ""},
		{"unknown state reads available", Lease{State: "bogus", ID: idA}, t0, LeaseAvailable, "unlocked", ""},
		{"fixed before expiry", leasedFixed, t0, LeaseLeased, "locked", "fixed"},
		{"fixed 1ns before expiry", leasedFixed, at(20*sec - 1), LeaseLeased, "locked", "fixed"},
		{"fixed at expiry", leasedFixed, at(20 * sec), LeaseExpired, "unlocked", ""},
		{"fixed after expiry", leasedFixed, at(time.Hour), LeaseExpired, "unlocked", ""},
		{"fixed without expiry is expired", Lease{ID: idA, State: "leased", Duration: 15}, t0, LeaseExpired, "unlocked", ""},
		{"infinite", leasedInfinite, t0, LeaseLeased, "locked", "infinite"},
		{"infinite far future", leasedInfinite, at(1000 * time.Hour), LeaseLeased, "locked", "infinite"},
		{"breaking before breakAt", breaking, t0, LeaseBreaking, "locked", ""},
		{"breaking 1ns before breakAt", breaking, at(10*sec - 1), LeaseBreaking, "locked", ""},
		{"breaking at breakAt", breaking, at(10 * sec), LeaseBroken, "unlocked", ""},
		{"breaking after breakAt", brokenLazy, t0, LeaseBroken, "unlocked", ""},
		{"breaking edge", brokenEdge, t0, LeaseBroken, "unlocked", ""},
		{"stored broken", brokenSt, t0, LeaseBroken, "unlocked", ""},
		{"expired", expired, t0, LeaseExpired, "unlocked", ""},
		{"expired edge", expiredEdge, t0, LeaseExpired, "unlocked", ""},
		{"stored expired", Lease{ID: idA, State: "expired"}, t0, LeaseExpired, "unlocked", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lease.Effective(tt.now); got != tt.want {
				t.Errorf("Effective = %q, want %q", got, tt.want)
			}
			status, state, duration := tt.lease.Headers(tt.now)
			if status != tt.status || state != string(tt.want) || duration != tt.duration {
				t.Errorf("Headers = (%q, %q, %q), want (%q, %q, %q)",
					status, state, duration, tt.status, tt.want, tt.duration)
			}
		})
	}
}

func TestApplyLease(t *testing.T) {
	acquire := func(proposed string, d int) LeaseRequest {
		return LeaseRequest{Action: LeaseAcquire, ProposedID: proposed, Duration: d, BreakPeriod: -1}
	}
	renew := func(id string) LeaseRequest { return LeaseRequest{Action: LeaseRenew, ID: id, BreakPeriod: -1} }
	change := func(id, proposed string) LeaseRequest {
		return LeaseRequest{Action: LeaseChange, ID: id, ProposedID: proposed, BreakPeriod: -1}
	}
	release := func(id string) LeaseRequest { return LeaseRequest{Action: LeaseRelease, ID: id, BreakPeriod: -1} }
	brk := func(period int) LeaseRequest { return LeaseRequest{Action: LeaseBreak, BreakPeriod: period} }

	tests := []struct {
		name      string
		lease     Lease
		req       LeaseRequest
		now       time.Time // zero → t0
		want      Lease     // stored row after the call (l unchanged on error)
		wantRes   LeaseResult
		wantCode  svcerr.Code
		wantState LeaseState // effective state of want at now; "" → skip
	}{
		// acquire, no proposed id → X
		{name: "acquire none/available", lease: availableZero, req: acquire("", 15),
			want: fixedLease(idX, 15, at(15*sec)), wantRes: LeaseResult{ID: idX}, wantState: LeaseLeased},
		{name: "acquire none/available stored", lease: availableSt, req: acquire("", -1),
			want: infiniteLease(idX), wantRes: LeaseResult{ID: idX}, wantState: LeaseLeased},
		{name: "acquire none/leased fixed", lease: leasedFixed, req: acquire("", 15),
			want: leasedFixed, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire none/leased infinite", lease: leasedInfinite, req: acquire("", 15),
			want: leasedInfinite, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire none/breaking", lease: breaking, req: acquire("", 15),
			want: breaking, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire none/broken", lease: brokenSt, req: acquire("", 60),
			want: fixedLease(idX, 60, at(60*sec)), wantRes: LeaseResult{ID: idX}},
		{name: "acquire none/broken lazily", lease: brokenLazy, req: acquire("", -1),
			want: infiniteLease(idX), wantRes: LeaseResult{ID: idX}},
		{name: "acquire none/expired", lease: expired, req: acquire("", 15),
			want: fixedLease(idX, 15, at(15*sec)), wantRes: LeaseResult{ID: idX}},

		// acquire, proposed A (the current id)
		{name: "acquire A/available", lease: availableZero, req: acquire(idA, 20),
			want: fixedLease(idA, 20, at(20*sec)), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/leased fixed restarts clock", lease: leasedFixed, req: acquire(idA, 30),
			want: fixedLease(idA, 30, at(30*sec)), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/leased fixed new duration", lease: leasedFixed, req: acquire(idA, 45),
			want: fixedLease(idA, 45, at(45*sec)), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/leased fixed to infinite", lease: leasedFixed, req: acquire(idA, -1),
			want: infiniteLease(idA), wantRes: LeaseResult{ID: idA}, wantState: LeaseLeased},
		{name: "acquire A/leased infinite to fixed", lease: leasedInfinite, req: acquire(idA, 15),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}, wantState: LeaseLeased},
		{name: "acquire A/leased infinite stays infinite", lease: leasedInfinite, req: acquire(idA, -1),
			want: infiniteLease(idA), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/breaking", lease: breaking, req: acquire(idA, 15),
			want: breaking, wantCode: svcerr.LeaseIsBreakingAndCannotBeAcquired},
		{name: "acquire A/broken", lease: brokenSt, req: acquire(idA, 15),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/broken lazily", lease: brokenEdge, req: acquire(idA, 15),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/expired", lease: expired, req: acquire(idA, -1),
			want: infiniteLease(idA), wantRes: LeaseResult{ID: idA}},
		{name: "acquire A/expired edge", lease: expiredEdge, req: acquire(idA, 15),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}},

		// acquire, proposed B
		{name: "acquire B/available", lease: availableZero, req: acquire(idB, 15),
			want: fixedLease(idB, 15, at(15*sec)), wantRes: LeaseResult{ID: idB}},
		{name: "acquire B/leased fixed", lease: leasedFixed, req: acquire(idB, 15),
			want: leasedFixed, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire B/leased infinite", lease: leasedInfinite, req: acquire(idB, -1),
			want: leasedInfinite, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire B/breaking", lease: breaking, req: acquire(idB, 15),
			want: breaking, wantCode: svcerr.LeaseAlreadyPresent},
		{name: "acquire B/broken", lease: brokenSt, req: acquire(idB, 15),
			want: fixedLease(idB, 15, at(15*sec)), wantRes: LeaseResult{ID: idB}},
		{name: "acquire B/expired", lease: expired, req: acquire(idB, 15),
			want: fixedLease(idB, 15, at(15*sec)), wantRes: LeaseResult{ID: idB}},
		{name: "acquire B/expired ignores newID", lease: expiredEdge, req: acquire(idB, -1),
			want: infiniteLease(idB), wantRes: LeaseResult{ID: idB}},
		{name: "acquire bad duration", lease: availableZero, req: acquire(idB, 10),
			want: availableZero, wantCode: svcerr.InvalidHeaderValue},

		// renew A
		{name: "renew A/available", lease: availableZero, req: renew(idA),
			want: availableZero, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew A/available stored", lease: availableSt, req: renew(idA),
			want: availableSt, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew A/leased fixed restarts original duration", lease: leasedFixed, req: renew(idA),
			want: fixedLease(idA, 30, at(30*sec)), wantRes: LeaseResult{ID: idA}, wantState: LeaseLeased},
		{name: "renew A/leased infinite no-op", lease: leasedInfinite, req: renew(idA),
			want: leasedInfinite, wantRes: LeaseResult{ID: idA}},
		{name: "renew A/breaking", lease: breaking, req: renew(idA),
			want: breaking, wantCode: svcerr.LeaseIsBrokenAndCannotBeRenewed},
		{name: "renew A/broken", lease: brokenSt, req: renew(idA),
			want: brokenSt, wantCode: svcerr.LeaseIsBrokenAndCannotBeRenewed},
		{name: "renew A/broken lazily", lease: brokenLazy, req: renew(idA),
			want: brokenLazy, wantCode: svcerr.LeaseIsBrokenAndCannotBeRenewed},
		{name: "renew A/expired", lease: expired, req: renew(idA),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}, wantState: LeaseLeased},
		{name: "renew A/expired edge", lease: expiredEdge, req: renew(idA),
			want: fixedLease(idA, 15, at(15*sec)), wantRes: LeaseResult{ID: idA}, wantState: LeaseLeased},

		// renew B
		{name: "renew B/available", lease: availableZero, req: renew(idB),
			want: availableZero, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew B/leased fixed", lease: leasedFixed, req: renew(idB),
			want: leasedFixed, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew B/leased infinite", lease: leasedInfinite, req: renew(idB),
			want: leasedInfinite, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew B/breaking", lease: breaking, req: renew(idB),
			want: breaking, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew B/broken", lease: brokenSt, req: renew(idB),
			want: brokenSt, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "renew B/expired", lease: expired, req: renew(idB),
			want: expired, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},

		// change A→B
		{name: "change A>B/available", lease: availableZero, req: change(idA, idB),
			want: availableZero, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change A>B/leased fixed keeps duration and expiry", lease: leasedFixed, req: change(idA, idB),
			want: fixedLease(idB, 30, at(20*sec)), wantRes: LeaseResult{ID: idB}},
		{name: "change A>B/leased infinite", lease: leasedInfinite, req: change(idA, idB),
			want: infiniteLease(idB), wantRes: LeaseResult{ID: idB}},
		{name: "change A>A/leased", lease: leasedFixed, req: change(idA, idA),
			want: leasedFixed, wantRes: LeaseResult{ID: idA}},
		{name: "change A>B/breaking", lease: breaking, req: change(idA, idB),
			want: breaking, wantCode: svcerr.LeaseIsBreakingAndCannotBeChanged},
		{name: "change A>B/broken", lease: brokenSt, req: change(idA, idB),
			want: brokenSt, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change A>B/broken lazily", lease: brokenLazy, req: change(idA, idB),
			want: brokenLazy, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change A>B/expired", lease: expired, req: change(idA, idB),
			want: expired, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},

		// change B→A (proposed already current)
		{name: "change B>A/available", lease: availableZero, req: change(idB, idA),
			want: availableZero, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change B>A/leased idempotent", lease: leasedFixed, req: change(idB, idA),
			want: leasedFixed, wantRes: LeaseResult{ID: idA}},
		{name: "change B>A/leased infinite idempotent", lease: leasedInfinite, req: change(idB, idA),
			want: leasedInfinite, wantRes: LeaseResult{ID: idA}},
		{name: "change B>A/breaking", lease: breaking, req: change(idB, idA),
			want: breaking, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "change B>A/broken", lease: brokenSt, req: change(idB, idA),
			want: brokenSt, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change B>A/expired", lease: expired, req: change(idB, idA),
			want: expired, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},

		// change B→C
		{name: "change B>C/available", lease: availableZero, req: change(idB, idC),
			want: availableZero, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change B>C/leased", lease: leasedFixed, req: change(idB, idC),
			want: leasedFixed, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "change B>C/breaking", lease: breaking, req: change(idB, idC),
			want: breaking, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "change B>C/broken", lease: brokenSt, req: change(idB, idC),
			want: brokenSt, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "change B>C/expired", lease: expired, req: change(idB, idC),
			want: expired, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},

		// release A
		{name: "release A/available", lease: availableZero, req: release(idA),
			want: availableZero, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "release A/leased fixed", lease: leasedFixed, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/leased infinite", lease: leasedInfinite, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/breaking", lease: breaking, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/broken", lease: brokenSt, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/broken lazily", lease: brokenLazy, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/expired", lease: expired, req: release(idA),
			want: released, wantState: LeaseAvailable},
		{name: "release A/released again", lease: released, req: release(idA),
			want: released, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},

		// release B
		{name: "release B/available", lease: availableZero, req: release(idB),
			want: availableZero, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "release B/leased", lease: leasedFixed, req: release(idB),
			want: leasedFixed, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "release B/breaking", lease: breaking, req: release(idB),
			want: breaking, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "release B/broken", lease: brokenSt, req: release(idB),
			want: brokenSt, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},
		{name: "release B/expired", lease: expired, req: release(idB),
			want: expired, wantCode: svcerr.LeaseIdMismatchWithLeaseOperation},

		// break, no period
		{name: "break none/available", lease: availableZero, req: brk(-1),
			want: availableZero, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "break none/leased fixed breaks at expiry", lease: leasedFixed, req: brk(-1),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 20}, wantState: LeaseBreaking},
		{name: "break none/leased fixed partial second rounds up", lease: leasedFixed, req: brk(-1), now: at(5500 * time.Millisecond),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 15}, wantState: LeaseBreaking},
		{name: "break none/leased fixed 1ns left", lease: leasedFixed, req: brk(-1), now: at(20*sec - 1),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 1}, wantState: LeaseBreaking},
		{name: "break none/leased infinite broken now", lease: leasedInfinite, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},
		{name: "break none/breaking unchanged", lease: breaking, req: brk(-1),
			want: breaking, wantRes: LeaseResult{BreakTime: 10}, wantState: LeaseBreaking},
		{name: "break none/breaking remaining rounds up", lease: breaking, req: brk(-1), now: at(2500 * time.Millisecond),
			want: breaking, wantRes: LeaseResult{BreakTime: 8}, wantState: LeaseBreaking},
		{name: "break none/broken", lease: brokenSt, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},
		{name: "break none/broken lazily", lease: brokenLazy, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},
		{name: "break none/broken edge", lease: brokenEdge, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},
		{name: "break none/expired", lease: expired, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},
		{name: "break none/expired edge", lease: expiredEdge, req: brk(-1),
			want: brokenNow, wantRes: LeaseResult{BreakTime: 0}, wantState: LeaseBroken},

		// break, period 0
		{name: "break 0/available", lease: availableSt, req: brk(0),
			want: availableSt, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "break 0/leased fixed", lease: leasedFixed, req: brk(0),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break 0/leased infinite", lease: leasedInfinite, req: brk(0),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break 0/breaking", lease: breaking, req: brk(0),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break 0/broken", lease: brokenSt, req: brk(0),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break 0/expired", lease: expired, req: brk(0),
			want: brokenNow, wantState: LeaseBroken},

		// break, period N
		{name: "break N/available", lease: availableZero, req: brk(10),
			want: availableZero, wantCode: svcerr.LeaseNotPresentWithLeaseOperation},
		{name: "break N/leased fixed N < remaining", lease: leasedFixed, req: brk(5),
			want: breakingUntil(at(5 * sec)), wantRes: LeaseResult{BreakTime: 5}, wantState: LeaseBreaking},
		{name: "break N/leased fixed N = remaining", lease: leasedFixed, req: brk(20),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 20}, wantState: LeaseBreaking},
		{name: "break N/leased fixed N > remaining", lease: leasedFixed, req: brk(60),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 20}, wantState: LeaseBreaking},
		{name: "break N/leased fixed fractional remaining", lease: leasedFixed, req: brk(60), now: at(10500 * time.Millisecond),
			want: breakingUntil(at(20 * sec)), wantRes: LeaseResult{BreakTime: 10}, wantState: LeaseBreaking},
		{name: "break N/leased infinite", lease: leasedInfinite, req: brk(60),
			want: breakingUntil(at(60 * sec)), wantRes: LeaseResult{BreakTime: 60}, wantState: LeaseBreaking},
		{name: "break 1/leased infinite", lease: leasedInfinite, req: brk(1),
			want: breakingUntil(at(1 * sec)), wantRes: LeaseResult{BreakTime: 1}, wantState: LeaseBreaking},
		{name: "break N/breaking shortens", lease: breaking, req: brk(3),
			want: breakingUntil(at(3 * sec)), wantRes: LeaseResult{BreakTime: 3}, wantState: LeaseBreaking},
		{name: "break N/breaking never extends", lease: breaking, req: brk(30),
			want: breaking, wantRes: LeaseResult{BreakTime: 10}, wantState: LeaseBreaking},
		{name: "break N/broken", lease: brokenSt, req: brk(30),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break N/broken lazily", lease: brokenLazy, req: brk(30),
			want: brokenNow, wantState: LeaseBroken},
		{name: "break N/expired", lease: expired, req: brk(30),
			want: brokenNow, wantState: LeaseBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = t0
			}
			got, res, err := ApplyLease(tt.lease, tt.req, idX, now)
			svcerrtest.Code(t, err, tt.wantCode)
			if tt.wantCode != "" {
				if st := svcerr.Status(tt.wantCode); tt.wantCode != svcerr.InvalidHeaderValue && st != 409 {
					t.Errorf("status of %s = %d, want 409", tt.wantCode, st)
				}
				if res != (LeaseResult{}) {
					t.Errorf("result on error = %+v, want zero", res)
				}
			}
			if !sameLease(got, tt.want) {
				t.Errorf("lease = %+v\nwant    %+v", got, tt.want)
			}
			if res != tt.wantRes {
				t.Errorf("result = %+v, want %+v", res, tt.wantRes)
			}
			if tt.wantState != "" {
				if s := got.Effective(now); s != tt.wantState {
					t.Errorf("effective state = %q, want %q", s, tt.wantState)
				}
			}
		})
	}
}

func TestApplyLeaseAcquireWithoutAnyID(t *testing.T) {
	req := LeaseRequest{Action: LeaseAcquire, Duration: 15, BreakPeriod: -1}
	_, _, err := ApplyLease(Lease{}, req, "", t0)
	svcerrtest.Code(t, err, svcerr.InternalError)
}

// TestLeaseScenarios replays the time-dependent lease sequences (expiry then
// acquire, renew or write; break with and without a period; writes while
// breaking) against one row, advancing the injected clock.
func TestLeaseScenarios(t *testing.T) {
	type step struct {
		at       time.Duration
		req      *LeaseRequest // lease operation, or
		write    *string       // a write with this x-ms-lease-id
		wantCode svcerr.Code
		want     LeaseState
		wantRes  LeaseResult
	}
	acq := func(id string, d int) *LeaseRequest {
		return &LeaseRequest{Action: LeaseAcquire, ProposedID: id, Duration: d, BreakPeriod: -1}
	}
	ren := func(id string) *LeaseRequest { return &LeaseRequest{Action: LeaseRenew, ID: id, BreakPeriod: -1} }
	brk := func(p int) *LeaseRequest { return &LeaseRequest{Action: LeaseBreak, BreakPeriod: p} }
	wr := func(id string) *string { return &id }

	tests := []struct {
		name  string
		steps []step
	}{
		{"C5 expired lease taken over", []step{
			{at: 0, req: acq(idA, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 15 * sec, want: LeaseExpired},
			{at: 16 * sec, req: acq(idB, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idB}},
			{at: 17 * sec, write: wr(idA), wantCode: svcerr.LeaseIdMismatchWithBlobOperation, want: LeaseLeased},
		}},
		{"C6 renew after expiry", []step{
			{at: 0, req: acq(idA, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 16 * sec, req: ren(idA), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 30 * sec, want: LeaseLeased},
			{at: 31 * sec, want: LeaseExpired},
		}},
		{"C7 write clears expired lease", []step{
			{at: 0, req: acq(idA, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 16 * sec, write: wr(""), want: LeaseAvailable},
			{at: 17 * sec, req: ren(idA), wantCode: svcerr.LeaseIdMismatchWithLeaseOperation, want: LeaseAvailable},
		}},
		{"C8 break infinite", []step{
			{at: 0, req: acq(idA, -1), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: sec, req: brk(-1), want: LeaseBroken, wantRes: LeaseResult{BreakTime: 0}},
		}},
		{"C9 breaking blocks acquire until broken", []step{
			{at: 0, req: acq(idA, 60), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 0, req: brk(10), want: LeaseBreaking, wantRes: LeaseResult{BreakTime: 10}},
			{at: 5 * sec, req: acq(idB, 15), wantCode: svcerr.LeaseAlreadyPresent, want: LeaseBreaking},
			{at: 10 * sec, want: LeaseBroken},
			{at: 11 * sec, req: acq(idB, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idB}},
		}},
		{"C10 writes while breaking", []step{
			{at: 0, req: acq(idA, 60), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: sec, req: brk(30), want: LeaseBreaking, wantRes: LeaseResult{BreakTime: 30}},
			{at: 2 * sec, write: wr(idA), want: LeaseBreaking},
			{at: 3 * sec, write: wr(""), wantCode: svcerr.LeaseIdMissing, want: LeaseBreaking},
			{at: 31 * sec, write: wr(idA), wantCode: svcerr.LeaseLost, want: LeaseBroken},
			{at: 31 * sec, write: wr(""), want: LeaseAvailable},
		}},
		{"natural break of a fixed lease", []step{
			{at: 0, req: acq(idA, 15), want: LeaseLeased, wantRes: LeaseResult{ID: idA}},
			{at: 5 * sec, req: brk(-1), want: LeaseBreaking, wantRes: LeaseResult{BreakTime: 10}},
			{at: 9 * sec, req: brk(-1), want: LeaseBreaking, wantRes: LeaseResult{BreakTime: 6}},
			{at: 15 * sec, want: LeaseBroken},
			{at: 16 * sec, req: brk(-1), want: LeaseBroken, wantRes: LeaseResult{BreakTime: 0}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Lease
			for i, s := range tt.steps {
				now := at(s.at)
				var err error
				switch {
				case s.req != nil:
					var res LeaseResult
					l, res, err = ApplyLease(l, *s.req, idX, now)
					if res != s.wantRes {
						t.Errorf("step %d: result = %+v, want %+v", i, res, s.wantRes)
					}
				case s.write != nil:
					l, err = CheckWriteLease(l, *s.write, BlobTarget, now)
				}
				if s.wantCode == "" && err != nil || s.wantCode != "" && !svcerr.HasCode(err, s.wantCode) {
					t.Fatalf("step %d: error = %v, want %q", i, err, s.wantCode)
				}
				if got := l.Effective(now); got != s.want {
					t.Fatalf("step %d: state = %q, want %q (%+v)", i, got, s.want, l)
				}
			}
		})
	}
}

// leaseRows are the five effective states (blob or container) at t0.
var leaseRows = []struct {
	name  string
	lease Lease
	state LeaseState
}{
	{"available", availableZero, LeaseAvailable},
	{"leased fixed", leasedFixed, LeaseLeased},
	{"leased infinite", leasedInfinite, LeaseLeased},
	{"breaking", breaking, LeaseBreaking},
	{"broken", brokenSt, LeaseBroken},
	{"broken lazily", brokenLazy, LeaseBroken},
	{"expired", expired, LeaseExpired},
}

// TestCheckLease covers every cell of the lease enforcement tables of Lease
// Blob (writes and reads of other blob operations) and Lease Container
// (Delete Container = write; every other container operation = read).
func TestCheckLease(t *testing.T) {
	const ok svcerr.Code = ""
	type sent int
	const (
		none sent = iota
		current
		other
	)
	// want[state][sent] per table.
	type cells map[LeaseState][3]svcerr.Code
	tests := []struct {
		name   string
		target LeaseTarget
		write  bool
		want   cells
	}{
		{"blob write", BlobTarget, true, cells{
			LeaseAvailable: {ok, svcerr.LeaseNotPresentWithBlobOperation, svcerr.LeaseNotPresentWithBlobOperation},
			LeaseLeased:    {svcerr.LeaseIdMissing, ok, svcerr.LeaseIdMismatchWithBlobOperation},
			LeaseBreaking:  {svcerr.LeaseIdMissing, ok, svcerr.LeaseIdMismatchWithBlobOperation},
			LeaseBroken:    {ok, svcerr.LeaseLost, svcerr.LeaseLost},
			LeaseExpired:   {ok, svcerr.LeaseLost, svcerr.LeaseLost},
		}},
		{"blob read", BlobTarget, false, cells{
			LeaseAvailable: {ok, svcerr.LeaseNotPresentWithBlobOperation, svcerr.LeaseNotPresentWithBlobOperation},
			LeaseLeased:    {ok, ok, svcerr.LeaseIdMismatchWithBlobOperation},
			LeaseBreaking:  {ok, ok, svcerr.LeaseIdMismatchWithBlobOperation},
			LeaseBroken:    {ok, svcerr.LeaseLost, svcerr.LeaseLost},
			LeaseExpired:   {ok, svcerr.LeaseLost, svcerr.LeaseLost},
		}},
		{"container delete", ContainerTarget, true, cells{
			LeaseAvailable: {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
			LeaseLeased:    {svcerr.LeaseIdMissing, ok, svcerr.LeaseIdMismatchWithContainerOperation},
			LeaseBreaking:  {svcerr.LeaseIdMissing, ok, svcerr.LeaseIdMismatchWithContainerOperation},
			LeaseBroken:    {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
			LeaseExpired:   {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
		}},
		{"container other ops", ContainerTarget, false, cells{
			LeaseAvailable: {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
			LeaseLeased:    {ok, ok, svcerr.LeaseIdMismatchWithContainerOperation},
			LeaseBreaking:  {ok, ok, svcerr.LeaseIdMismatchWithContainerOperation},
			LeaseBroken:    {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
			LeaseExpired:   {ok, svcerr.LeaseNotPresentWithContainerOperation, svcerr.LeaseNotPresentWithContainerOperation},
		}},
	}
	ids := [3]string{none: "", current: idA, other: idB}
	for _, tt := range tests {
		for _, row := range leaseRows {
			for s, id := range ids {
				name := tt.name + "/" + row.name + "/" + [3]string{"none", "A", "B"}[s]
				t.Run(name, func(t *testing.T) {
					if got := row.lease.Effective(t0); got != row.state {
						t.Fatalf("fixture state = %q, want %q", got, row.state)
					}
					want := tt.want[row.state][s]
					if want != ok && svcerr.Status(want) != 412 {
						t.Fatalf("status of %s = %d, want 412", want, svcerr.Status(want))
					}
					if !tt.write {
						svcerrtest.Code(t, CheckReadLease(row.lease, id, tt.target, t0), want)
						return
					}
					got, err := CheckWriteLease(row.lease, id, tt.target, t0)
					svcerrtest.Code(t, err, want)
					wantLease := row.lease
					if want == ok && id == "" && (row.state == LeaseBroken || row.state == LeaseExpired) {
						wantLease = Lease{} // a write without id clears a lapsed lease
					}
					if !sameLease(got, wantLease) {
						t.Errorf("lease after write = %+v, want %+v", got, wantLease)
					}
				})
			}
		}
	}
}

// TestCheckLeaseBoundaries pins the instant a lease stops being enforced.
func TestCheckLeaseBoundaries(t *testing.T) {
	tests := []struct {
		name     string
		lease    Lease
		now      time.Time
		id       string
		wantCode svcerr.Code
		want     Lease
	}{
		{"fixed 1ns before expiry, no id", leasedFixed, at(20*sec - 1), "", svcerr.LeaseIdMissing, leasedFixed},
		{"fixed at expiry, no id clears", leasedFixed, at(20 * sec), "", "", Lease{}},
		{"fixed at expiry, A", leasedFixed, at(20 * sec), idA, svcerr.LeaseLost, leasedFixed},
		{"breaking 1ns before breakAt, A", breaking, at(10*sec - 1), idA, "", breaking},
		{"breaking at breakAt, A", breaking, at(10 * sec), idA, svcerr.LeaseLost, breaking},
		{"breaking at breakAt, no id clears", breaking, at(10 * sec), "", "", Lease{}},
		{"released row, A", released, t0, idA, svcerr.LeaseNotPresentWithBlobOperation, released},
		{"released row, no id", released, t0, "", "", released},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckWriteLease(tt.lease, tt.id, BlobTarget, tt.now)
			svcerrtest.Code(t, err, tt.wantCode)
			if !sameLease(got, tt.want) {
				t.Errorf("lease = %+v, want %+v", got, tt.want)
			}
		})
	}
}
