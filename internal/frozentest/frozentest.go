// Package frozentest gives tests the context a call sees when a frozen
// process (SIGSTOP, a frozen container) resumes: its deadline has
// passed, and the runtime has not yet run the timer that would end it.
// On Linux it also runs a child process of the test binary that a test
// freezes for real (Child, StartChild, WaitStopped, StopSelf).
package frozentest

import (
	"context"
	"sync/atomic"
	"time"
)

// Unfired is a context whose deadline a test moves into the past without
// its timer firing: Done never closes and Err stays nil. A client whose
// own timeout is longer than the time left keeps reading this deadline
// (context.WithTimeout then wraps it without a timer of its own).
type Unfired struct {
	context.Context
	deadline atomic.Pointer[time.Time]
}

// NewUnfired returns an Unfired context whose deadline is d from now.
func NewUnfired(d time.Duration) *Unfired {
	c := &Unfired{Context: context.Background()}
	at := time.Now().Add(d)
	c.deadline.Store(&at)
	return c
}

// Deadline returns the deadline, as a context's does.
func (c *Unfired) Deadline() (time.Time, bool) { return *c.deadline.Load(), true }

// Pass makes the deadline now: from here on it has passed, and the
// context's timer has still not fired.
func (c *Unfired) Pass() {
	now := time.Now()
	c.deadline.Store(&now)
}
