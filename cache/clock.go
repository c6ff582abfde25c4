package cache

import (
	"math"
	"sync/atomic"
	"time"
)

// tick is how often the coarse clock advances while the cache is in use.
const tick = time.Millisecond

// minMargin is the least distance from its expiry at which an entry is
// served on the coarse clock's word; closer to it, a hit reads the clock.
const minMargin = time.Second

// clock is a cache's time, read as the time since epoch, the cache's
// creation. With the real clock (now is nil) the time since epoch reads
// only the monotonic clock.
//
// With the real clock, hits read coarse, the time since epoch as a ticker
// last read it, instead of the clock: ticking is set while the ticker runs,
// which is while the cache is in use (see hitTime). The ticker's timer runs
// late when the machine is busy, so coarse is trusted only for entries that
// expire more than margin after it; margin grows to four times the worst
// lateness seen (see fresh). The ticker keeps horizon at coarse plus
// margin, so that a hit checks an entry far from its expiry with one
// comparison; it is "never" (the largest duration) while the ticker is
// stopped and with an injected clock, when hits read the clock.
type clock struct {
	epoch time.Time
	now   func() time.Time

	coarse   atomic.Int64
	ticking  atomic.Bool
	activity atomic.Uint64 // lookups at the ticker's last tick
	margin   atomic.Int64
	horizon  atomic.Int64
	// lookups returns how many lookups the cache has made: the ticker
	// stops after a tick that saw none.
	lookups func() uint64
}

// init starts the clock: now reads the time (nil for the real clock), and
// lookups counts the cache's lookups.
func (k *clock) init(now func() time.Time, lookups func() uint64) {
	k.now, k.lookups = now, lookups
	if now == nil {
		k.epoch = time.Now()
	} else {
		k.epoch = now()
	}
	k.margin.Store(int64(minMargin))
	k.horizon.Store(math.MaxInt64)
}

// elapsed returns the time since the epoch.
func (k *clock) elapsed() time.Duration {
	if k.now == nil {
		return time.Since(k.epoch) // monotonic only
	}
	return k.now().Sub(k.epoch)
}

// hitTime returns the time since the epoch for a hit: with the real clock,
// the coarse time while the ticker runs, so that a hit does not read the
// clock (on some machines the costliest part of a hit); the first hit of an
// idle cache reads the clock and starts the ticker. The ticker is a timer
// that re-arms itself only while lookups arrive: an idle cache has no timer
// and no goroutine.
func (k *clock) hitTime() time.Duration {
	if k.now != nil {
		return k.now().Sub(k.epoch)
	}
	if k.ticking.Load() {
		return time.Duration(k.coarse.Load())
	}
	now := time.Since(k.epoch)
	k.advance(now)
	if k.ticking.CompareAndSwap(false, true) {
		k.activity.Store(k.lookups())
		k.horizon.Store(k.coarse.Load() + k.margin.Load())
		time.AfterFunc(tick, k.tick)
	}
	return now
}

// tick advances the coarse clock, and re-arms unless no lookup came since
// the last tick.
func (k *clock) tick() {
	now := time.Since(k.epoch)
	// A tick due one tick after the last reading that comes late shows how
	// far coarse can fall behind: keep margin at four times that.
	if late := now - time.Duration(k.coarse.Load()); 4*late > time.Duration(k.margin.Load()) {
		k.margin.Store(int64(4 * late))
	}
	k.advance(now)
	activity := k.lookups()
	if activity == k.activity.Load() {
		k.horizon.Store(math.MaxInt64) // before hits can see the ticker stopped
		k.ticking.Store(false)
		return
	}
	k.horizon.Store(k.coarse.Load() + k.margin.Load())
	k.activity.Store(activity)
	time.AfterFunc(tick, k.tick)
}

// advance moves the coarse clock forward to now, never back: a reader that
// was paused after reading the clock must not undo a later reading.
func (k *clock) advance(now time.Duration) {
	for {
		old := k.coarse.Load()
		if int64(now) <= old || k.coarse.CompareAndSwap(old, int64(now)) {
			return
		}
	}
}

// fresh reports whether an entry that expires at expires is unexpired at
// coarse, the time hitTime returned. The coarse clock lags the real one by
// as long as its timer runs late, which on a starved machine is far more
// than a tick; so only an entry that expires more than margin after coarse
// is served on its word, and closer to its expiry a hit reads the clock. An
// injected clock is read exactly in hitTime.
func (k *clock) fresh(expires, coarse time.Duration) bool {
	if expires <= coarse {
		return false
	}
	if k.now != nil || expires-coarse > time.Duration(k.margin.Load()) {
		return true
	}
	return time.Since(k.epoch) < expires
}

// unexpired reports, for a hit, whether an entry that expires at expires
// has not expired: fresh at hitTime. Its common case, an entry beyond the
// horizon, is inlined into the hit.
func (k *clock) unexpired(expires time.Duration) bool {
	return int64(expires) > k.horizon.Load() || k.freshNow(expires)
}

// freshNow is unexpired's uncommon case.
func (k *clock) freshNow(expires time.Duration) bool {
	return k.fresh(expires, k.hitTime())
}
