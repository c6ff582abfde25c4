package core

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/invalidation"
)

// The purge of a token the server refused (401) is published to the other
// replicas at least once: it is delivered, or replaced by a publication
// that covers it, never dropped.
//
//   - A refusal is queued (publishRefused) in one bounded set, keyed by
//     the token's own digest, so that each spelling of a token is
//     published (replicas of earlier versions hear the token's own
//     digest alone); a refusal already queued is not queued twice, and
//     one queued within refusalQuiet of the token's last is not queued
//     again: a revoked token that a caller keeps sending would otherwise
//     publish a purge per request, which every replica applies.
//   - At most maxRefusedPublishers goroutines of the client's own publish
//     what is queued, each publication bounded by refusedPublishTimeout
//     and the client's timeout. One that fails (an error, a panic or a
//     runtime.Goexit of the Invalidator's Publish) goes back to the set,
//     and its publisher pauses (from refusedRetryMin, doubling up to
//     refusedRetryMax) before it takes the next: retried until delivered,
//     or until Close, which first waits for what was queued, at most
//     closeDrainTimeout.
//   - When the set is full (maxPendingRefusals: a flood of refused
//     tokens, which anyone can send, faster than the channel takes them),
//     or when the oldest refusal in it has waited refusalMaxWait to be
//     taken since it was queued or last tried (a backlog the publishers
//     would take seconds to work through), its refusals are replaced by
//     one purge of every replica's whole cache (msgAll), which covers them
//     and every refusal queued until it is taken, and which is retried so
//     too. The flood costs the other
//     replicas their caches, never a revoked token's cached GRANT; at
//     most one such purge waits at a time. Each replacement is counted
//     (RefusalOverflows) and logged once per episode.
//
// A call never waits for a publication: queuing takes a lock and no I/O,
// and a Redis client may not honour a context's deadline. Nothing of the
// token is kept but its digests.

// refusal is the purge of one refused token: its identity's digest and
// its own, the two messages of Purge's, and when it was queued, or given
// back after a failed try (on the monotonic clock: a process frozen
// meanwhile finds it old).
type refusal struct {
	identity, own [digestBytes]byte
	at            time.Time
}

// refusals is what waits to be published; replicas.refusedMu guards it.
type refusals struct {
	// last holds when each refused token (its own digest) was last
	// queued (refusalQuiet); maxRefused bounds it (when full, it starts
	// over).
	last map[[digestBytes]byte]time.Time
	// queue holds the refusals waiting, oldest (at) first; queued their
	// own digests.
	queue  []refusal
	queued map[[digestBytes]byte]struct{}
	// all is set while a purge of every replica's whole cache waits: it
	// replaced the queue when it was full, and the queue stays empty
	// until it is taken. overflowing is set from then until one is
	// delivered (an episode, logged once).
	all, overflowing bool
	// publishers counts the publishers running.
	publishers int
}

func newRefusals() refusals {
	return refusals{last: make(map[[digestBytes]byte]time.Time), queued: make(map[[digestBytes]byte]struct{})}
}

// backlog counts the publications waiting.
func (q *refusals) backlog() int {
	if q.all {
		return 1
	}
	return len(q.queue)
}

// add queues x, unless it is queued or covered already; when the queue is
// full, it and x are replaced by one purge of every replica's cache. It
// reports whether that began an episode of overflow.
func (q *refusals) add(x refusal) (overflowed bool) {
	if _, ok := q.queued[x.own]; ok || q.all {
		return false
	}
	if len(q.queue) >= maxPendingRefusals {
		return q.overflow()
	}
	q.queue = append(q.queue, x)
	q.queued[x.own] = struct{}{}
	return false
}

// overflow replaces the queue by one purge of every replica's cache, and
// reports whether that began an episode of overflow.
func (q *refusals) overflow() (overflowed bool) {
	q.queue = nil
	clear(q.queued)
	q.all = true
	overflowed = !q.overflowing
	q.overflowing = true
	return overflowed
}

// take returns the next publication: all (a purge of every replica's
// cache) or x; ok is false when nothing waits. The queue becomes a purge of
// every replica's cache when its oldest refusal waited refusalMaxWait:
// overflowed says whether that began an episode of overflow.
func (q *refusals) take() (x refusal, all, ok, overflowed bool) {
	if len(q.queue) > 0 && time.Since(q.queue[0].at) >= refusalMaxWait {
		overflowed = q.overflow()
	}
	switch {
	case q.all:
		q.all = false
		return refusal{}, true, true, overflowed
	case len(q.queue) > 0:
		x = q.queue[0]
		q.queue = q.queue[1:]
		delete(q.queued, x.own)
		return x, false, true, false
	}
	return refusal{}, false, false, false
}

// giveBack queues again a publication that failed, as new, once its
// publisher's pause is over: its age (take) counts from then, since a
// publisher pausing after a failure is not a wait for a publisher (a-fix10c:
// one refusal and a channel outage of 1.4 s became a purge of every cache).
func (q *refusals) giveBack(x refusal, all bool, pause time.Duration) (overflowed bool) {
	if all {
		if !q.all {
			q.queue = nil
			clear(q.queued)
			q.all = true // the same episode
		}
		return false
	}
	x.at = time.Now().Add(pause)
	return q.add(x)
}

// publishRefused queues the purge of a token the server refused (401) for
// the other replicas (identity is the digest of the token's identity), and
// starts a publisher if none is free. It never waits for the channel.
func (c *Core) publishRefused(token string, identity [digestBytes]byte) {
	r := c.replicas
	if r == nil {
		return
	}
	x := refusal{identity: identity, own: tokenDigest(token), at: time.Now()}
	now := c.now()
	r.refusedMu.Lock()
	last, seen := r.last[x.own]
	if r.closed || seen && now.Sub(last) < refusalQuiet && now.Sub(last) >= 0 {
		r.refusedMu.Unlock()
		return
	}
	if len(r.last) >= maxRefused {
		clear(r.last)
	}
	r.last[x.own] = now
	overflowed := r.add(x)
	start := r.publisherNeeded()
	r.refusedMu.Unlock()
	c.refusalsQueued(overflowed, start, 0)
}

// publisherNeeded reports whether a publisher must be started for what
// waits, and if so counts it (publishers, which Close waits to reach
// zero: quiet); r's refusedMu must be held.
func (r *replicas) publisherNeeded() bool {
	if r.closed || r.publishers >= maxRefusedPublishers || r.publishers >= r.backlog() {
		return false
	}
	r.publishers++
	return true
}

// refusalsQueued counts and logs an overflow, and starts a publisher
// (publisherNeeded) that first pauses for pause.
func (c *Core) refusalsQueued(overflowed, start bool, pause time.Duration) {
	r := c.replicas
	if overflowed {
		r.overflows.Add(1)
		c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": more refused tokens wait to be published than the bound; publishing a purge of every replica's whole cache instead (counted in Stats; logged once until it is delivered)",
			"bound", maxPendingRefusals)
	}
	if start {
		c.goBackground("the publication of refused tokens' purges", func() { c.publishRefusals(pause) })
	}
}

// publishRefusals publishes what waits until nothing does, or until Close;
// after a failure it pauses before the next. A publisher counted by
// publisherNeeded runs it. Whatever way it ends (a runtime.Goexit of the
// Invalidator's Publish included), the publication it holds goes back to
// the queue, and another publisher is started if what waits needs one.
func (c *Core) publishRefusals(pause time.Duration) {
	r := c.replicas
	var (
		x       refusal
		all     bool
		holding bool // x (or all) is taken and not yet delivered nor given back
	)
	defer func() {
		var overflowed bool
		if holding { // Publish ended the goroutine
			r.publishFailures.Add(1)
			pause = nextRetry(pause)
		}
		r.refusedMu.Lock()
		if holding {
			overflowed = r.giveBack(x, all, pause)
		}
		r.publishers--
		start := r.publisherNeeded()
		r.settled()
		r.refusedMu.Unlock()
		c.refusalsQueued(overflowed, start, pause)
	}()
	for {
		if pause > 0 && !wait(r.ctx, pause) {
			return
		}
		var ok, overflowed bool
		r.refusedMu.Lock()
		if !r.closed {
			x, all, ok, overflowed = r.take()
		}
		holding = ok
		r.refusedMu.Unlock()
		c.refusalsQueued(overflowed, false, 0)
		if !ok {
			return
		}
		err := c.publishRefusal(x, all)
		if err == nil {
			holding = false
			pause = 0
			continue
		}
		pause = nextRetry(pause)
		r.refusedMu.Lock()
		overflowed = r.giveBack(x, all, pause)
		holding = false
		r.refusedMu.Unlock()
		c.refusalsQueued(overflowed, false, 0)
	}
}

// publishRefusal publishes one refused token's purge, or (all) a purge of
// every replica's cache, bounded by refusedPublishTimeout and Close; a
// failure, a panic of the Invalidator's Publish included, is counted, and
// the first of a run of failures logged.
func (c *Core) publishRefusal(x refusal, all bool) error {
	r := c.replicas
	ctx, cancel := context.WithTimeout(r.ctx, refusedPublishTimeout)
	defer cancel()
	op, msgs := "a 401", [][]byte{identityMessage(x.identity), ownMessage(x.own)}
	if all {
		op, msgs = "a purge of every replica's cache for refused tokens", [][]byte{allMessage}
	}
	var err error
	if p := safego.Call(func() { err = c.publish(ctx, op, msgs...) }); p != nil {
		c.background("the Invalidator's Publish", p)
		r.publishFailures.Add(1)
		err = errPublishPanicked
	}
	if err != nil {
		if r.ctx.Err() == nil && !r.publishFailing.Swap(true) {
			c.logBackground(slog.LevelWarn, c.who.Peer.Pkg()+": could not tell the other replicas of a refused token; retrying until delivered (failures are counted in Stats; logged once until one is delivered)",
				"cause", safego.Text(err))
		}
		return err
	}
	r.publishFailing.Store(false)
	if all {
		r.refusedMu.Lock()
		r.overflowing = r.all // a purge waiting again is the same episode
		r.refusedMu.Unlock()
	}
	return nil
}

var errPublishPanicked = errors.New("the Invalidator's Publish panicked")

// wait waits for d, and reports false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// nextRetry is the pause after a failed publication that followed pause.
func nextRetry(pause time.Duration) time.Duration {
	return min(max(2*pause, refusedRetryMin), refusedRetryMax)
}

// refusalQuiet is how long after a refused token was queued a refusal of
// it is not queued again; maxRefused bounds the tokens remembered so (when
// full, the memory starts over). maxPendingRefusals bounds the refusals
// waiting (about 90 bytes each), refusalMaxWait how long the oldest
// waits to be taken, maxRefusedPublishers the publishers, each of
// whose publications refusedPublishTimeout bounds; refusedRetryMin and
// refusedRetryMax bound a publisher's pause after a failure.
const (
	refusalQuiet          = time.Second
	maxRefused            = 1024
	maxPendingRefusals    = 1024
	refusalMaxWait        = time.Second
	maxRefusedPublishers  = 64
	refusedPublishTimeout = invalidation.DefaultTrust
	refusedRetryMin       = 200 * time.Millisecond
	refusedRetryMax       = time.Second
)
