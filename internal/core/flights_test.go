package core

import (
	"context"
	"errors"
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
