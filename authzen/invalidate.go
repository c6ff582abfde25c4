package authzen

import (
	"context"

	"github.com/orgauthz/orgauthz/invalidation"
)

// Invalidator carries cache purges between the replicas of a service:
// Publish sends a purge to every replica, Subscribe feeds each replica's
// client what it receives and a heartbeat that travels the same ordered
// stream (see package invalidation for the contract an implementation
// keeps). redisstore.NewInvalidator is the Redis one. It is one type with
// pep.Invalidator.
type Invalidator = invalidation.Invalidator

// WithInvalidator makes the client share its cache purges with the other
// replicas through inv, as pep.WithInvalidator does, whose documentation
// holds the rules: Purge, PurgeAll and every 401 are published (a SHA-256
// digest of the token's identity and one of the token, two messages, never
// the token; a 401's is retried until delivered, and a flood of them
// becomes one purge of every replica's cache) and the other replicas'
// purges applied here; the cache is served only while a heartbeat of inv's was
// sent within its trust window (invalidation.DefaultTrust, 2 s, unless inv
// says otherwise), read on the monotonic clock at every lookup, else every
// call goes to the PDP, and the whole cache is purged after a break. The
// client subscribes on a goroutine of its own from New until Close, which
// waits for it, and first, for at most 2 s, for the calls under way and
// the 401s' purges queued to be published (then at most 2 s more for inv's
// calls to end): a client with an invalidator must be closed. A panic of
// inv's on the client's goroutines is logged, never fatal. A nil inv means
// none (the default).
func WithInvalidator(inv Invalidator) Option { return option(func(c *config) { c.Invalidator = inv }) }

// Purge drops every cached decision of token (as a Bearer or a DPoP-bound
// token), and of every other spelling of it the PDP reads as the same
// token (see pep.Client.Purge; SetToken, SetDPoPToken, ClearToken and a
// 401 retire a token so too), and, with an invalidator, publishes the
// purge to every replica,
// returning once the channel accepted it, by ctx's deadline or the
// client's timeout, whichever comes first. It is pep.Client.Purge, whose
// documentation holds the rules: the local purge is done whatever the
// error (an error says the other replicas may not have heard of it; an
// empty token is one), and no call begun after it shares an earlier
// request's answer. After Close it fails with ErrClosed, purging and
// sending nothing.
func (c *Client) Purge(ctx context.Context, token string) error { return c.core.Purge(ctx, token) }

// PurgeAll drops every cached decision and, with an invalidator, has
// every replica do the same; its errors, deadline and sharing rule are
// Purge's.
func (c *Client) PurgeAll(ctx context.Context) error { return c.core.PurgeAll(ctx) }
