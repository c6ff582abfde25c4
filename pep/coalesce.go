package pep

import (
	"context"
	"sync"
)

// flights lets identical concurrent gateway requests (same token, same
// body) share one request. The first caller, the leader, sends the request
// on its own goroutine under its own context; the others wait for its
// outcome, each only until its own context ends. So every caller is bounded
// by its own deadline (rule 10) and a flight needs no goroutine of its own.
//
// A flight that failed because its leader's context ended (the leader
// cancelled, or its deadline was shorter) says nothing about the gateway: a
// waiter that still has time then sends the request itself, without
// sharing, so that other callers giving up can never deny it.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
	// waitHook, when set, runs each time a caller has joined a flight (as
	// its leader or a waiter) and is about to wait for it: a test seam.
	waitHook func()
}

type flight struct {
	done chan struct{}
	out  *chunkOutcome // set before done is closed
}

// errNoOutcome is what waiters see should a leader's request end without
// an outcome (a panic on the leader's goroutine).
var errNoOutcome = &transportError{kind: "the request ended without an answer"}

// do returns the outcome of the request identified by key, running send
// itself unless an identical one is in flight. shared reports that the
// outcome came from another caller's request.
func (f *flights) do(ctx context.Context, key string, send func() *chunkOutcome) (out *chunkOutcome, shared bool) {
	f.mu.Lock()
	fl, inFlight := f.m[key]
	if !inFlight {
		fl = &flight{done: make(chan struct{})}
		if f.m == nil {
			f.m = make(map[string]*flight)
		}
		f.m[key] = fl
	}
	f.mu.Unlock()
	if f.waitHook != nil {
		f.waitHook()
	}

	if !inFlight {
		defer func() {
			f.mu.Lock()
			delete(f.m, key)
			f.mu.Unlock()
			close(fl.done)
		}()
		fl.out = &chunkOutcome{err: errNoOutcome} // in case send panics
		fl.out = lead(ctx, send)
		return fl.out, false
	}

	select {
	case <-fl.done:
	case <-ctx.Done():
		return &chunkOutcome{err: unavailable(ctx.Err())}, false
	}
	if fl.out.leaderGone && ctx.Err() == nil {
		return lead(ctx, send), false
	}
	return fl.out, true
}

// lead sends the request and marks an outcome that failed because the
// leader's own context ended.
func lead(ctx context.Context, send func() *chunkOutcome) *chunkOutcome {
	out := send()
	if out.err != nil && ctx.Err() != nil {
		out.leaderGone = true
	}
	return out
}
