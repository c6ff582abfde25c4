package transport

import (
	"strconv"
	"sync"
	"time"
)

// BreakerState is the state of a client's circuit breaker. The zero value
// is BreakerClosed, which is also what a client without a breaker reports.
type BreakerState uint8

const (
	// BreakerClosed: requests go to the gateway.
	BreakerClosed BreakerState = iota
	// BreakerOpen: requests are denied at once with ErrCircuitOpen.
	BreakerOpen
	// BreakerHalfOpen: the cool-down is over; the next request is a probe
	// (or one is under way) whose outcome closes or reopens the breaker.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

// outcome is what one request says about the server's health.
type outcome uint8

const (
	// outcomeSuccess: the server answered (any 2xx, 3xx or 4xx).
	outcomeSuccess outcome = iota
	// outcomeFailure: a transport failure, a timeout or a 5xx.
	outcomeFailure
	// outcomeNeutral: the request failed before reaching the server for a
	// reason of the client's own (e.g. a proof could not be signed).
	outcomeNeutral
)

// Breaker is a consecutive-failure circuit breaker. A nil *Breaker is a
// disabled one: it allows everything. It is safe for concurrent use.
type Breaker struct {
	threshold int
	coolDown  time.Duration
	now       func() time.Time
	// onChange is called, without the lock held, after every transition.
	onChange func(from, to BreakerState)

	mu          sync.Mutex
	state       BreakerState
	consecutive int       // consecutive failures while closed
	openedAt    time.Time // when the breaker last opened
	probing     bool      // a half-open probe is under way
}

// NewBreaker returns a breaker that opens after threshold consecutive
// failures for coolDown, reading the time from now and calling onChange
// after every transition; nil (disabled) for threshold 0.
func NewBreaker(threshold int, coolDown time.Duration, now func() time.Time, onChange func(from, to BreakerState)) *Breaker {
	if threshold == 0 {
		return nil
	}
	return &Breaker{threshold: threshold, coolDown: coolDown, now: now, onChange: onChange}
}

// allow reports whether a request may go to the server now. probe is true
// for the single request let through after the cool-down; its outcome must
// be reported to done with probe set.
func (b *Breaker) allow() (ok, probe bool) {
	if b == nil {
		return true, false
	}
	b.mu.Lock()
	from := b.state
	switch b.state {
	case BreakerClosed:
		b.mu.Unlock()
		return true, false
	case BreakerOpen:
		if b.now().Sub(b.openedAt) < b.coolDown {
			b.mu.Unlock()
			return false, false
		}
		b.state = BreakerHalfOpen
	}
	// Half-open: exactly one probe at a time.
	if b.probing {
		b.mu.Unlock()
		return false, false
	}
	b.probing = true
	b.mu.Unlock()
	b.changed(from, BreakerHalfOpen)
	return true, true
}

// done records the outcome of a request that allow let through.
func (b *Breaker) done(probe bool, o outcome) {
	if b == nil {
		return
	}
	b.mu.Lock()
	from := b.state
	switch {
	case probe:
		b.probing = false
		switch o {
		case outcomeSuccess:
			b.state, b.consecutive = BreakerClosed, 0
		case outcomeFailure:
			b.state, b.openedAt = BreakerOpen, b.now()
		}
		// A neutral probe leaves the breaker half-open for the next one.
	case b.state == BreakerClosed:
		switch o {
		case outcomeSuccess:
			b.consecutive = 0
		case outcomeFailure:
			b.consecutive++
			if b.consecutive >= b.threshold {
				b.state, b.openedAt, b.consecutive = BreakerOpen, b.now(), 0
			}
		}
		// Requests that were already under way when the breaker opened
		// do not change it; only the probe decides.
	}
	to := b.state
	b.mu.Unlock()
	b.changed(from, to)
}

func (b *Breaker) changed(from, to BreakerState) {
	if from != to && b.onChange != nil {
		b.onChange(from, to)
	}
}

// Current reports the state; an open breaker whose cool-down is over is
// reported half-open, since the next request will be a probe.
func (b *Breaker) Current() BreakerState {
	if b == nil {
		return BreakerClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.now().Sub(b.openedAt) >= b.coolDown {
		return BreakerHalfOpen
	}
	return b.state
}
