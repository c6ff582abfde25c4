package pep

import (
	"context"

	"github.com/orgauthz/orgauthz/invalidation"
)

// Invalidator carries cache purges between the replicas of a service:
// Publish sends a purge to every replica, Subscribe feeds each replica's
// client what it receives and a heartbeat that travels the same ordered
// stream (see package invalidation for the contract an implementation
// keeps). redisstore.NewInvalidator is the Redis one. It is one type with
// authzen.Invalidator.
type Invalidator = invalidation.Invalidator

// WithInvalidator makes the client share its cache purges with the other
// replicas through inv: Purge, PurgeAll and every 401 (which purges the
// refused token) are published, and what the other replicas publish is
// applied here. Messages carry a SHA-256 digest of a token, never the
// token: a token's purge is two messages, one that names the token's
// identity (every spelling of it, see Purge), for replicas of this version
// and later, and one that names the token itself, for replicas of earlier
// versions during a rolling upgrade (which count the first as malformed,
// logging one warning, and ignore it). This client applies both, and so
// the purges of replicas of earlier versions too.
//
// A 401's purge is published on goroutines of the client's own (the call
// that was refused never waits for the channel) and delivered at least
// once: a publication that fails is retried, after a pause growing from
// 200 ms to 1 s, until the channel takes it or the client is closed. A
// token refused again within a second of its last purge, or whose purge
// waits already, is not published again. At most 1,024 refused tokens'
// purges wait (64 are published at once); when more come (a flood of
// tokens the gateway refuses, which anyone can send, faster than the
// channel takes them), or when one has waited a second since it was
// queued or last tried, they are replaced by one purge of every replica's
// whole cache, which covers them and every refusal until it is published:
// the flood costs the other replicas their caches (every call then asks
// the gateway), never a refused token's purge. Stats counts each failed
// try (InvalidationPublishFailures) and each replacement
// (InvalidationRefusalOverflows); the first failure of a run, and each
// replacement until its purge is delivered, are logged at Warn.
//
// The cache is served only while inv's channel is known to be current: a
// heartbeat from it was sent within its trust window
// (invalidation.DefaultTrust, 2 s, unless inv says otherwise), read on the
// monotonic clock at every lookup. While the channel is down, slow, or
// after the process was frozen, every call goes to the gateway (nothing
// cached is served, GRANT or DENY), and after the channel broke the whole
// cache is purged before it is trusted again; Stats counts both, and both
// are logged. A new client trusts its cache from its first heartbeat.
//
// The client subscribes on a goroutine of its own from New until Close,
// which waits for it to end: a client with an invalidator must be closed.
// A panic of inv's Subscribe there, or of its Publish of a 401's purge (on
// a goroutine of its own too), is logged at Error and taken as its error:
// Subscribe is called again after a pause, the publication is counted as
// failed and retried. Close first lets the calls under way end and the
// 401s' purges they and earlier calls queued be published, for at most 2 s
// (a replica shut down just after a 401, or while a call was at the
// gateway, does not take the other replicas' purge with it), then stops
// what is left of them and waits for inv's calls under way to end, for at
// most 2 s more: it returns whatever inv does. A nil inv means none (the
// default).
func WithInvalidator(inv Invalidator) Option { return option(func(c *config) { c.Invalidator = inv }) }

// Purge drops every cached decision of token (as a Bearer or a DPoP
// token), and of every other spelling of it the gateway reads as the same
// token: for a compact JWS (a JWT), any token with its header and payload,
// whatever the unused bits of each segment's last base64url character
// and whatever its signature (an ECDSA signature (r, s) has a twin (r,
// n-s)); for a compact JWE, its five segments whatever those bits; any
// other token, that token alone. Every retirement of a token is done so:
// Purge, a 401, SetToken, SetDPoPToken and ClearToken replacing it,
// another replica's purge. A decision is still served only to the exact
// token string the gateway answered for; a forged spelling (a bad
// signature) can at worst make the real token's decisions be asked
// again. With an invalidator, Purge publishes the purge to every replica,
// returning once the channel accepted it: from then on no replica serves
// a cached decision of token for longer than the propagation bound (the
// channel's delivery, at worst its trust window). The local purge is done
// whatever the error; an error says the other replicas may not have heard
// of it (they purge their whole cache when their own channel comes back
// from a break, but not when only this replica's publishing failed), and
// an empty token is an error. Decisions of token being fetched while
// Purge runs are not cached, and no call that begins after Purge returned
// (nor after this client applied another replica's purge) shares the
// answer of a request sent before it, whether or not token's decisions
// are cached (WithCache(0, ...), a token over 8 KiB, a per-call token).
// With redisstore's Invalidator,
// Purge returns by ctx's deadline or the client's timeout (WithTimeout),
// whichever comes first, even when ctx has no deadline (the local purge
// done), so Close never waits long for a Purge under way. After Close it
// fails with ErrClosed, purging and sending nothing.
func (c *Client) Purge(ctx context.Context, token string) error { return c.core.Purge(ctx, token) }

// PurgeAll drops every cached decision and, with an invalidator, has
// every replica do the same; its errors, deadline and sharing rule are
// Purge's.
func (c *Client) PurgeAll(ctx context.Context) error { return c.core.PurgeAll(ctx) }
