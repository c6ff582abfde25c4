package transport

import (
	"context"
	"errors"
	"time"
)

// A call's deadline is read on the clock, not only through its context's
// timer. A process that was frozen (SIGSTOP, a paused VM or container, a
// starved container) wakes with its timers unfired: for a moment ctx.Err()
// is nil and ctx.Done() open although the deadline passed an hour ago, and
// an answer read then would be used as if it were fresh. So the steps that
// hand something to a call read its deadline themselves (Late):
//
//   - nothing is sent for a call out of time (authorizer.send, before and
//     after the credential is attached, so a slow DPoP key counts too);
//   - an answer read after the deadline is not used (Exchanger.send, after
//     the body is read): the call gets the Cause of a passed deadline;
//   - a shared outcome is handed to each caller only while that caller has
//     time (internal/core's Flights.Do), whatever the deadline of the caller
//     who sent it.

// Late returns why a call may no longer use anything: its context's error,
// or context.DeadlineExceeded once its deadline has passed, read now, even
// though the context's timer has not fired yet. The comparison is on the
// monotonic clock whenever the deadline carries a reading, as every
// deadline context.WithTimeout makes does (a client's own timeout always);
// a deadline the caller built from a wall-clock time is compared as such.
// nil while the call has time.
func Late(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// timeOutcome is what a call running out of time (late, from Late) says
// about the server: a failure only when the deadline was the client's own
// timeout (rule 11); a caller's earlier deadline or cancellation says
// nothing.
func timeOutcome(late error, ownDeadline bool) outcome {
	if ownDeadline && errors.Is(late, context.DeadlineExceeded) {
		return outcomeFailure
	}
	return outcomeNeutral
}
