package cache

import (
	"math"
	"time"
)

// clock is a cache's time, read as the time since epoch, the cache's
// creation: expiry times are durations since the epoch.
//
// The clock is read whenever a time is needed, every hit included, and no
// reading is kept to stand in for a later one: a remembered "now" is as
// old as the longest stall between its reading and its use, and a process
// that is frozen (SIGSTOP, a paused VM or container) or starved stalls for
// as long as that lasts. With the real clock (now is nil) the time since
// the epoch reads only the monotonic clock (the runtime's nanotime, no wall
// clock), which keeps counting while the process is frozen and which
// changes of the wall clock do not move.
type clock struct {
	epoch time.Time
	now   func() time.Time
}

// init starts the clock: now reads the time, nil for the real clock.
func (k *clock) init(now func() time.Time) {
	k.now = now
	if now == nil {
		k.epoch = time.Now() // with a monotonic reading, which Since uses
	} else {
		k.epoch = now()
	}
}

// elapsed returns the time since the epoch, read now.
func (k *clock) elapsed() time.Duration {
	if k.now == nil {
		return time.Since(k.epoch) // monotonic only
	}
	return k.now().Sub(k.epoch)
}

// expiry returns when an entry stored for ttl from the time from expires:
// never (the largest duration) when that is past the largest duration,
// and at once (the smallest) when ttl is zero or negative.
func expiry(from, ttl time.Duration) time.Duration {
	switch {
	case ttl <= 0:
		return math.MinInt64
	case from > math.MaxInt64-ttl:
		return math.MaxInt64
	}
	return from + ttl
}
