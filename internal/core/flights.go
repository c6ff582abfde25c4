package core

import (
	"context"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// Flights lets identical concurrent requests (same token, same body) share
// one request: the coalescing of the call wrapper. The first caller, the leader, sends the request
// on its own goroutine under its own context; the others wait for its
// outcome, each only until its own context ends. So every caller is bounded
// by its own deadline (rule 10) and a flight needs no goroutine of its own.
//
// A flight that failed because its leader's context ended (the leader
// cancelled, or its deadline was shorter) says nothing about the gateway: a
// waiter that still has time then sends the request itself, without
// sharing, so that other callers giving up can never deny it.
//
// A flight is joined only before its leader's deadline, read on the
// monotonic clock when a caller arrives. A flight's answer may have been
// made at any time since its request was sent; while the process runs,
// that is within the leader's deadline of now, but a process frozen (a
// paused VM or container, SIGSTOP) with a flight under way can wake with
// its answer an hour old. A caller that begins after the deadline sends
// its own request.
//
// An outcome is handed to each caller only while that caller's own
// deadline has not passed, read on the clock at the hand-over (Late): the
// leader's after its request and the decoding of its answer, each waiter's
// when it wakes. The same freeze can leave a context's timer unfired when
// the answer arrives; and a waiter's deadline may be earlier than the
// leader's. A caller out of time gets the Cause of a passed deadline
// (ErrUnavailable, context.DeadlineExceeded) instead of the value.
//
// K is the key that identifies identical requests; it must hold everything
// that makes two requests differ (the full credential, the body).
type Flights[K comparable, T any] struct {
	mu sync.Mutex
	m  map[K]*flight[T]
	// WaitHook, when set, runs each time a caller has joined a flight (as
	// its leader or a waiter) and is about to wait for it: a test seam.
	WaitHook func()
}

type flight[T any] struct {
	// done is made by the first waiter (a flight nobody joins, as most
	// are, needs none) and closed by the leader once out is set; it is
	// read and made under Flights.mu.
	done chan struct{}
	out  *Outcome[T] // set before done is closed
	// deadline is the leader's, if its context has one: past it, the
	// flight is not joined.
	deadline    time.Time
	hasDeadline bool
}

// Outcome is the outcome of one request: a value, or the error that is
// the Cause of every decision the request was for. It may be shared by
// coalesced callers and is never modified once made.
type Outcome[T any] struct {
	Value T
	Err   error
	// leaderGone marks a failure caused by the context of the caller that
	// sent the request ending, not by the server.
	leaderGone bool
}

// Do returns the outcome of the request identified by key, running send
// itself unless an identical one is in flight. shared reports that the
// outcome came from another caller's request. p names the server in the
// Cause of a caller that left before the outcome came or whose deadline
// passed before it was handed over, or of a leader's request that ended
// without one (a panic on its goroutine).
func (f *Flights[K, T]) Do(ctx context.Context, p transport.Peer, key K, send func() *Outcome[T]) (out *Outcome[T], shared bool) {
	f.mu.Lock()
	fl, inFlight := f.m[key]
	if inFlight && fl.hasDeadline && !time.Now().Before(fl.deadline) {
		inFlight = false // too old to join: this caller leads a new flight
	}
	var done chan struct{}
	if inFlight {
		if fl.done == nil {
			fl.done = make(chan struct{})
		}
		done = fl.done
	} else {
		fl = &flight[T]{}
		fl.deadline, fl.hasDeadline = ctx.Deadline()
		if f.m == nil {
			f.m = make(map[K]*flight[T])
		}
		f.m[key] = fl
	}
	f.mu.Unlock()
	if f.WaitHook != nil {
		f.WaitHook()
	}

	if !inFlight {
		defer func() {
			if fl.out == nil { // send panicked: the waiters fail closed
				fl.out = &Outcome[T]{Err: p.NoAnswer()}
			}
			f.mu.Lock()
			if f.m[key] == fl { // not replaced by a newer flight
				delete(f.m, key)
			}
			done := fl.done
			f.mu.Unlock()
			if done != nil {
				close(done)
			}
		}()
		fl.out = lead(ctx, send)
		return inTime(ctx, p, fl.out), false
	}

	select {
	case <-done:
	case <-ctx.Done():
		return &Outcome[T]{Err: p.Unavailable(ctx.Err())}, false
	}
	if fl.out.leaderGone && transport.Late(ctx) == nil {
		return inTime(ctx, p, lead(ctx, send)), false
	}
	return inTime(ctx, p, fl.out), true
}

// lead sends the request and marks an outcome that failed because the
// leader's own context ended, or its deadline passed (Late).
func lead[T any](ctx context.Context, send func() *Outcome[T]) *Outcome[T] {
	out := send()
	if out.Err != nil && transport.Late(ctx) != nil {
		out.leaderGone = true
	}
	return out
}

// inTime returns out for a caller whose deadline has not passed, read on
// the clock now: the moment out becomes the caller's decisions. A caller
// out of time gets the Cause of a passed deadline in place of a value; an
// outcome that is an error already fails closed and is returned as it is.
// out itself, which other callers may share, is not changed.
func inTime[T any](ctx context.Context, p transport.Peer, out *Outcome[T]) *Outcome[T] {
	if out.Err != nil {
		return out
	}
	if late := transport.Late(ctx); late != nil {
		return &Outcome[T]{Err: p.Unavailable(late)}
	}
	return out
}
