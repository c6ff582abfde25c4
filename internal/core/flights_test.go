package core

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// TestFlightPastItsDeadlineIsNotJoined holds a leader's request after its
// deadline has passed, as a process frozen with a request under way would,
// and requires that a caller arriving then sends its own request instead
// of taking an answer that may be as old as the freeze; that the leader,
// out of time, does not get the answer either; and that the stale flight,
// when it ends, leaves the newer one in place.
func TestFlightPastItsDeadlineIsNotJoined(t *testing.T) {
	joins := make(chan struct{}, 3) // one per caller, once it has joined or led
	f := Flights[string, string]{WaitHook: func() { joins <- struct{}{} }}
	leaderCtx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	leaderDone := make(chan *Outcome[string])
	go func() {
		out, _ := f.Do(leaderCtx, "pep: gateway", "k", true, func() *Outcome[string] {
			close(started)
			<-release // an answer held back, ignoring the leader's context
			return &Outcome[string]{Value: "before the freeze"}
		})
		leaderDone <- out
	}()
	<-started
	<-leaderCtx.Done() // the leader's deadline has passed; its flight is still open

	<-joins // the leader's
	secondRelease := make(chan struct{})
	secondDone := make(chan *Outcome[string])
	go func() {
		out, shared := f.Do(t.Context(), "pep: gateway", "k", true, func() *Outcome[string] {
			<-secondRelease
			return &Outcome[string]{Value: "fresh"}
		})
		if shared {
			t.Error("a caller arriving after the flight's deadline shared its answer")
		}
		secondDone <- out
	}()
	<-joins // the second caller has joined a flight, or led one
	f.mu.Lock()
	joinedStale := f.m["k"].done != nil // a waiter made the flight's done
	f.mu.Unlock()
	if joinedStale {
		close(release)
		close(secondRelease)
		t.Fatalf("a caller arriving after the flight's deadline joined it and got %q", (<-secondDone).Value)
	}
	close(release)
	if out := <-leaderDone; !errors.Is(out.Err, transport.ErrUnavailable) || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Fatalf("the leader got %q, %v after its deadline; want the Cause of a passed deadline", out.Value, out.Err)
	}

	// The newer flight is still joinable: a third caller shares it.
	third := make(chan *Outcome[string])
	go func() {
		out, shared := f.Do(t.Context(), "pep: gateway", "k", true, func() *Outcome[string] {
			return &Outcome[string]{Value: "third's own"}
		})
		if !shared {
			t.Error("the stale flight's end removed the newer flight")
		}
		third <- out
	}()
	<-joins // the third caller has joined

	close(secondRelease)
	if out := <-secondDone; out.Value != "fresh" {
		t.Fatalf("the second caller got %q", out.Value)
	}
	if out := <-third; out.Value != "fresh" {
		t.Fatalf("the third caller got %q", out.Value)
	}
}

// TestWaiterPastItsOwnDeadlineGetsNoValue: a caller waiting for a shared
// request whose own deadline passes meanwhile (earlier than the leader's,
// with its timer not yet fired, as when the process was frozen) does not
// get the value the leader gets in time, but the Cause of its passed
// deadline.
func TestWaiterPastItsOwnDeadlineGetsNoValue(t *testing.T) {
	t.Parallel()
	joins := make(chan struct{}, 2)
	f := Flights[string, string]{WaitHook: func() { joins <- struct{}{} }}
	release := make(chan struct{})
	leaderDone := make(chan *Outcome[string])
	go func() {
		out, _ := f.Do(t.Context(), "pep: gateway", "k", true, func() *Outcome[string] {
			<-release
			return &Outcome[string]{Value: "GRANT"}
		})
		leaderDone <- out
	}()
	<-joins // the leader's

	waiterCtx := frozentest.NewUnfired(time.Hour)
	waiterDone := make(chan *Outcome[string])
	go func() {
		out, _ := f.Do(waiterCtx, "pep: gateway", "k", true, func() *Outcome[string] {
			return &Outcome[string]{Err: errors.New("the waiter sent a request of its own")}
		})
		waiterDone <- out
	}()
	<-joins // the waiter has joined the leader's flight
	waiterCtx.Pass()
	close(release)

	if out := <-leaderDone; out.Err != nil || out.Value != "GRANT" {
		t.Fatalf("the leader, in time, got %q, %v", out.Value, out.Err)
	}
	out := <-waiterDone
	assert.Empty(t, out.Value, "a waiter past its deadline got the shared value")
	requireDeadlineCause(t, out.Err)
}

func requireDeadlineCause(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, transport.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestWaiterOfALeaderThatLeft: what a caller waiting on another's request
// gets when that request ends. A leader that left (cancelled, or its own
// deadline passed, its timer unfired as in a frozen process) says nothing
// of the server: a waiter that still has time sends the request itself
// and gets its own answer, so that callers who give up never deny it. A
// leader in time shares whatever the server said, an error too; a leader
// whose request ended without an outcome (a panic under it) fails its
// waiters closed; a waiter that leaves first gets the Cause of its own
// end and sends nothing.
func TestWaiterOfALeaderThatLeft(t *testing.T) {
	t.Parallel()
	refused := errors.New("the server's refusal")
	tests := []struct {
		name string
		// answer is what the leader's request returns once released,
		// read with the leader's context.
		answer func(ctx context.Context) *Outcome[string]
		// act runs once the waiter has joined, before the leader's
		// request is released.
		act func(cancelLeader, passLeader, cancelWaiter func())
		// waiterLeaves is set when act ends the waiter's wait.
		waiterLeaves bool
		// want is the waiter's value, or wantErr its error.
		want       string
		wantErr    []error
		wantShared bool
		// wantSends is the requests sent: the leader's, and the waiter's
		// own if it resent.
		wantSends int32
	}{
		{
			name: "the leader cancels",
			answer: func(ctx context.Context) *Outcome[string] {
				return &Outcome[string]{Err: transport.Peer("pep: gateway").Unavailable(ctx.Err())}
			},
			act:       func(cancelLeader, _, _ func()) { cancelLeader() },
			want:      "the waiter's own",
			wantSends: 2,
		},
		{
			name: "the leader's deadline passes unfired",
			answer: func(ctx context.Context) *Outcome[string] {
				return &Outcome[string]{Err: transport.Peer("pep: gateway").Unavailable(transport.Late(ctx))}
			},
			act:       func(_, passLeader, _ func()) { passLeader() },
			want:      "the waiter's own",
			wantSends: 2,
		},
		{
			name:       "the leader in time shares the server's answer",
			answer:     func(context.Context) *Outcome[string] { return &Outcome[string]{Value: "the leader's"} },
			act:        func(_, _, _ func()) {},
			want:       "the leader's",
			wantShared: true,
			wantSends:  1,
		},
		{
			name:       "the leader in time shares the server's failure",
			answer:     func(context.Context) *Outcome[string] { return &Outcome[string]{Err: refused} },
			act:        func(_, _, _ func()) {},
			wantErr:    []error{refused},
			wantShared: true,
			wantSends:  1,
		},
		{
			name:       "the leader's request panics",
			answer:     func(context.Context) *Outcome[string] { panic("a bug under the request") },
			act:        func(_, _, _ func()) {},
			wantErr:    []error{transport.ErrUnavailable},
			wantShared: true,
			wantSends:  1,
		},
		{
			name:         "the waiter leaves first",
			answer:       func(context.Context) *Outcome[string] { return &Outcome[string]{Value: "the leader's"} },
			act:          func(_, _, cancelWaiter func()) { cancelWaiter() },
			waiterLeaves: true,
			wantErr:      []error{transport.ErrUnavailable, context.Canceled},
			wantSends:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			joins := make(chan struct{}, 2)
			f := Flights[string, string]{WaitHook: func() { joins <- struct{}{} }}
			var sends atomic.Int32
			leaderDeadline := frozentest.NewUnfired(time.Hour)
			leaderCtx, cancelLeader := context.WithCancel(leaderDeadline)
			defer cancelLeader()
			started, release, leaderDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(leaderDone)
				defer func() { _ = recover() }() // the panic row's, on the leader's goroutine
				f.Do(leaderCtx, "pep: gateway", "k", true, func() *Outcome[string] {
					sends.Add(1)
					close(started)
					<-release
					return tt.answer(leaderCtx)
				})
			}()
			<-joins
			<-started

			waiterCtx, cancelWaiter := context.WithCancel(t.Context())
			defer cancelWaiter()
			type result struct {
				out    *Outcome[string]
				shared bool
			}
			waiterDone := make(chan result)
			go func() {
				out, shared := f.Do(waiterCtx, "pep: gateway", "k", true, func() *Outcome[string] {
					sends.Add(1)
					return &Outcome[string]{Value: "the waiter's own"}
				})
				waiterDone <- result{out, shared}
			}()
			<-joins // the waiter waits on the leader's request
			tt.act(cancelLeader, leaderDeadline.Pass, cancelWaiter)
			var got result
			if tt.waiterLeaves {
				got = <-waiterDone // before the answer, which it must not race
			}
			close(release)
			<-leaderDone
			if !tt.waiterLeaves {
				got = <-waiterDone
			}
			for _, want := range tt.wantErr {
				require.ErrorIs(t, got.out.Err, want)
			}
			if len(tt.wantErr) == 0 {
				require.NoError(t, got.out.Err)
			}
			assert.Equal(t, tt.want, got.out.Value)
			assert.Equal(t, tt.wantShared, got.shared)
			assert.Equal(t, tt.wantSends, sends.Load())
		})
	}
}
