package store

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Writes of one realm are paced while other realms are served, so that an
// admin who writes back to back (instantiating 1,000-department templates,
// deleting them, again and again) cannot take the processors from another
// realm's decisions. Realm locks keep the realms from waiting for each
// other; they do not keep them from sharing the machine, and a busy writer
// takes a processor for a millisecond at a time and, with its garbage, sets
// the collector's pace for every realm. On two cores that alone doubled the
// tail latency of an unrelated realm's decisions.
//
// The rule: the time a realm's writes hold its lock is charged to the realm.
// Its credit refills at writeShare of the wall clock per processor, up to
// writeBurst, and its debt is never deeper than writeDebt. A write that
// finds its realm in debt waits until the debt is paid, but only while
// another realm has served an authenticated request (Store.Serving) in the
// last activeWindow: a realm alone writes at full speed, and reads never
// wait. A realm's writes pass the pacer one at a time, as they take its
// lock anyway, so that concurrent writers cannot all pass on one credit; a
// write queued behind others gives up when its request ends.
//
// The longest wait is writeDebt/(writeShare·GOMAXPROCS), counting at least
// two processors: 4 s on two, after a write that held the lock for 200 ms
// (after a 1,000-department template, about 1 ms, the next write waits
// 20 ms). From 40 processors on, the share is the whole wall clock and
// nothing waits: a realm's writes take one processor at most, and there
// are plenty more. The charge is wall-clock time under the lock, not
// processor time: on a loaded machine a write costs its realm more.
const (
	// writeShare is the share of the wall clock, per processor, that one
	// realm's writes may hold its lock for while other realms are served.
	// On two processors, 5%: at 10% a busy admin over HTTP still raised
	// another realm's decision p99 1.6-1.9x, at 5% 1.05-1.35x
	// (BenchmarkRealmIsolation, BENCHMARKS.md).
	writeShare = 0.025
	// writeBurst is the lock time a realm may take at once before it is
	// paced.
	writeBurst = 20 * time.Millisecond
	// writeDebt is the deepest debt a realm can run up: a longer write is
	// charged this much.
	writeDebt = 200 * time.Millisecond
	// activeWindow is how recently another realm must have served an
	// authenticated request for a realm's writes to be paced.
	activeWindow = 100 * time.Millisecond
)

// pacer keeps the accounts of writeShare for a store: each realm's credit
// (pace) and the two realms that served requests last, which tell whether
// a realm is alone.
type pacer struct {
	// clock returns a monotonic time, sleep waits for d or until ctx is
	// done, and share returns the credit a realm earns per unit of wall
	// time (writeShare times GOMAXPROCS, counting at least two); only the
	// tests replace them.
	clock func() time.Duration
	sleep func(ctx context.Context, d time.Duration) error
	share func() float64

	// last and prev are the two realms that served a request most
	// recently, last the latest (note). Two realms noting at once may
	// leave the same realm in both until the other notes again.
	last, prev atomic.Pointer[Realm]
}

// pace is one realm's account with its store's pacer.
type pace struct {
	// seen is when the realm last served a request (Store.Serving, on
	// pacer.clock), kept to a millisecond so that a stream of requests
	// rarely writes it.
	seen atomic.Int64

	// turn holds a token while one of the realm's writes is between the
	// pacer and its charge (Store.WriteContext): a channel, not a mutex,
	// so that a write queued behind others gives up when its request ends.
	// NewRealm makes it.
	turn chan struct{}

	mu     sync.Mutex
	credit time.Duration // in [-writeDebt, writeBurst]
	at     time.Duration // when credit was last brought up to date
	fresh  bool          // at and credit have been set
}

// start is the origin of the pacer's default clock.
var start = time.Now()

// newPacer returns the pacer of a new store.
func newPacer() *pacer {
	return &pacer{
		clock: func() time.Duration { return time.Since(start) },
		sleep: sleep,
		share: func() float64 { return writeShare * float64(max(2, runtime.GOMAXPROCS(0))) },
	}
}

// sleep waits for d, or until ctx is done, whose error it then returns.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// note records that r serves a request now. It writes shared memory at
// most once a millisecond per realm: a stream of decisions costs a clock
// reading and an atomic load each.
func (p *pacer) note(r *Realm) {
	now := p.clock()
	if now-time.Duration(r.pace.seen.Load()) < time.Millisecond {
		return
	}
	r.pace.seen.Store(int64(now))
	if last := p.last.Load(); last != r {
		p.prev.Store(p.last.Swap(r)) // not one atomic step: see last
	}
}

// others reports whether a realm other than r served a request within
// activeWindow of now.
func (p *pacer) others(r *Realm, now time.Duration) bool {
	for _, o := range [2]*Realm{p.last.Load(), p.prev.Load()} {
		if o != nil && o != r && now-time.Duration(o.pace.seen.Load()) < activeWindow {
			return true
		}
	}
	return false
}

// refill brings a's credit up to date at now, earning share per unit of
// time. a.mu is held.
func (p *pacer) refill(a *pace, now time.Duration, share float64) {
	if !a.fresh {
		a.credit, a.at, a.fresh = writeBurst, now, true
		return
	}
	if now <= a.at {
		return
	}
	// In floats, and compared before it is added: a realm idle for years
	// must not overflow its credit into a debt.
	if earned := float64(now-a.at) * share; earned >= float64(writeBurst-a.credit) {
		a.credit = writeBurst
	} else {
		a.credit += time.Duration(earned)
	}
	a.at = now
}

// delay returns how long a write of r must wait, at now, before it may take
// the realm's lock: 0 when r is in credit or alone.
func (p *pacer) delay(r *Realm, now time.Duration) time.Duration {
	share := p.share()
	a := &r.pace
	a.mu.Lock()
	p.refill(a, now, share)
	credit := a.credit
	a.mu.Unlock()
	if credit >= 0 || !p.others(r, now) {
		return 0
	}
	return time.Duration(float64(-credit)/share) + 1
}

// charge debits r with d of lock time, down to -writeDebt at most.
func (p *pacer) charge(r *Realm, d time.Duration) {
	a := &r.pace
	a.mu.Lock()
	p.refill(a, p.clock(), p.share())
	a.credit = max(-writeDebt, a.credit-d)
	a.mu.Unlock()
}

// take waits for the realm's turn to write, or until ctx is done, whose
// error it then returns. The caller gives the turn back with give.
func (a *pace) take(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case a.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give gives back the turn take took.
func (a *pace) give() { <-a.turn }

// wait blocks until a write of r may take the realm's lock, or until ctx
// is done, whose error it then returns. The caller holds r's turn. It
// sleeps at most activeWindow at a time, so that a wait ends soon after
// the other realms fall quiet.
func (p *pacer) wait(ctx context.Context, r *Realm) error {
	for {
		d := p.delay(r, p.clock())
		if d <= 0 {
			return nil
		}
		if err := p.sleep(ctx, min(d, activeWindow)); err != nil {
			return err
		}
	}
}
