// Package invalidation is the contract between a decision client (pep,
// authzen) and the channel that carries cache invalidations between the
// replicas of a service: an [Invalidator] publishes a client's purges to
// every replica and feeds every purge it receives, and a heartbeat, to the
// client's [Receiver].
//
// The client trusts its cache only while the channel is known to be
// current: a heartbeat that travelled the same ordered stream as the
// purges was sent within the client's trust window (see [Receiver]). A
// channel that is down, slow, or whose process was frozen stops the
// heartbeats, and the client then asks its server for every decision until
// a fresh heartbeat arrives, by which time every purge published before it
// has been applied. Messages carry a digest of a token, never the token.
//
// redisstore.NewInvalidator is the Redis implementation (in the nested
// module github.com/orgauthz/orgauthz/redisstore).
package invalidation

import (
	"context"
	"time"
)

// Invalidator carries invalidation messages between replicas. Its methods
// are safe for concurrent use. A client given one (pep.WithInvalidator,
// authzen.WithInvalidator) calls Subscribe once, on a goroutine of its
// own, and Publish for each purge.
type Invalidator interface {
	// Publish sends msg to every replica subscribed to the channel, this
	// one included. It returns once the channel has accepted msg (for
	// Redis, once PUBLISH was answered), or with an error saying why it
	// could not. msg is not kept after Publish returns.
	Publish(ctx context.Context, msg []byte) error

	// Subscribe receives the channel's messages and reports them to r
	// until ctx is done, then returns ctx's error. It reconnects on its
	// own when the channel breaks, calling r.Lost first; it returns early
	// only for an error that retrying cannot mend, which the client logs
	// before calling Subscribe again after a pause. It calls r's methods
	// from one goroutine, one at a time, in the order the stream delivered
	// what they report, and must return promptly once ctx is done.
	Subscribe(ctx context.Context, r Receiver) error
}

// Receiver is what an Invalidator reports to: the client. Its methods
// return quickly and never fail; what they are given is untrusted (any
// process that can publish on the channel can write it).
type Receiver interface {
	// Message reports one message published on the channel. A malformed
	// one is counted and ignored; no message can make a client grant
	// anything (they only remove cached decisions). The client does not
	// keep msg.
	Message(msg []byte)

	// Heartbeat reports that every message published on the channel
	// before sent has been reported: sent is when the Invalidator sent a
	// request (redisstore's: a heartbeat published through the same route
	// as the purges, on a channel the same Redis process orders) whose answer
	// arrived, in order, after them. sent must be read with time.Now (its
	// monotonic reading is what counts) just before the request is
	// written, never when its answer arrives: an answer that waited in a
	// socket while the process was frozen must not look fresh. The client
	// trusts its cache until sent plus its trust window.
	Heartbeat(sent time.Time)

	// Lost reports that messages may have been missed: the subscription
	// broke, or could not be made, because of err. The client stops
	// trusting its cache at once and, at the next Heartbeat, purges
	// everything it cached before it.
	Lost(err error)
}

// DefaultTrust is how long after a heartbeat was sent a client trusts its
// cache, unless the Invalidator says otherwise (see Window): the longest
// a purge can take to reach a replica whose channel stalled without
// breaking, or that was frozen. An Invalidator must send heartbeats well
// within it (redisstore's every 250 ms).
const DefaultTrust = 2 * time.Second

// Window is an optional method of an Invalidator: the trust window its
// heartbeats are good for, instead of DefaultTrust. It must be positive.
type Window interface {
	TrustWindow() time.Duration
}
