package core

import (
	"context"
	"errors"
	"net/http"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// Verdict is what one decision a client returns amounts to, for the
// counters.
type Verdict uint8

const (
	// Denied: the server denied.
	Denied Verdict = iota
	// Allowed: the server allowed.
	Allowed
	// Errored: the server could not evaluate (pep's ERROR); it never
	// allows, but is the server's answer, not a failure.
	Errored
	// FailedClosed: the client denied itself (the decision has a Cause).
	FailedClosed
)

// A Tally counts one call's decisions by verdict, for Record. The zero
// Tally is empty.
type Tally struct {
	n     [4]uint64
	first error // the Cause of the first decision that failed closed
}

// Add counts one decision; cause is its Cause when it failed closed.
func (t *Tally) Add(v Verdict, cause error) {
	t.n[v]++
	if v == FailedClosed && t.first == nil {
		t.first = cause
	}
}

// Record adds a call's tally to the counters and logs its fail-closed
// decisions: at Error, once per distinct cause, when the cause looks like
// a configuration mistake (the server answered 400 or 404: a client it
// does not know, a route it does not have), since every later call
// repeats it; at Warn otherwise.
func (c *Core) Record(t *Tally) {
	c.denied.Add(t.n[Denied])
	c.allowed.Add(t.n[Allowed])
	c.errored.Add(t.n[Errored])
	failed := t.n[FailedClosed]
	if failed == 0 {
		return
	}
	c.failClosed.Add(failed)
	var re *transport.ResponseError
	if errors.As(t.first, &re) && (re.StatusCode == http.StatusBadRequest || re.StatusCode == http.StatusNotFound) {
		c.logOnce(t.first)
		return
	}
	c.logger.Warn(c.who.Peer.Pkg()+": failing closed", c.who.Scope.Items, failed, "cause", t.first.Error())
}

// logOnce logs a configuration-shaped cause at Error the first time it is
// seen. The set of causes seen is bounded; when it fills, it starts over.
func (c *Core) logOnce(cause error) {
	text := cause.Error()
	c.seenMu.Lock()
	_, seen := c.seen[text]
	if !seen {
		if c.seen == nil || len(c.seen) >= maxSeenCauses {
			c.seen = make(map[string]struct{})
		}
		c.seen[text] = struct{}{}
	}
	c.seenMu.Unlock()
	if !seen {
		c.logger.Error(c.who.Peer.Pkg()+": the "+c.who.Peer.Server()+" refuses this client's requests; "+c.who.Misconfigured, "cause", text)
	}
}

// maxSeenCauses bounds the configuration-shaped causes logOnce remembers.
const maxSeenCauses = 64

// CountCall counts a public call (one not answered from the cache whole
// by Hit).
func (c *Core) CountCall() { c.calls.Add(1) }

// FailAll counts n decisions the client denied itself without asking the
// server (a refused call), which are not logged.
func (c *Core) FailAll(n int) { c.failClosed.Add(uint64(n)) }

// Hit counts a call of one decision answered from the cache, both the
// call and its decision, and records it for telemetry as op. It allocates
// nothing.
func (c *Core) Hit(ctx context.Context, op string, allowed bool) {
	outcome := c.who.Scope.Outcomes[1]
	if allowed {
		c.hitAllowed.Add(1)
		outcome = c.who.Scope.Outcomes[0]
	} else {
		c.hitDenied.Add(1)
	}
	c.tel.CachedCall(ctx, op, 1, outcome)
}
