package pep

import (
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/core"
)

// Client asks the gateway for authorization decisions and fails closed. It
// is safe for concurrent use. Its configuration is fixed by New; only the
// token changes afterwards (SetToken, SetDPoPToken, ClearToken).
type Client struct {
	// core holds the token, the cache, the counters and the transport
	// (internal/core, shared with authzen).
	core core.Core

	realm, clientID  string
	authorizeURL     string
	organizationsURL string
	gatewayURL       string // the gateway's base URL, without a trailing slash
}

// New returns a client for the gateway at gatewayURL (an absolute http or
// https URL, optionally with a path prefix) that asks on behalf of the
// application clientID in realm. It applies the defaults, then opts, and
// validates the result once, returning an error that names every setting to
// fix. The client has no token until SetToken is called (or a per-call one
// is given with WithToken).
func New(gatewayURL, realm, clientID string, opts ...Option) (*Client, error) {
	cfg := core.Defaults(DefaultBatchSize)
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	base, err := core.ParseURL(gatewayURL, gateway)
	errs := []error{err}
	if strings.TrimSpace(realm) == "" {
		errs = append(errs, errors.New("pep: the realm is empty; pass the realm (tenant) name, e.g. \"acme\""))
	}
	if strings.TrimSpace(clientID) == "" {
		errs = append(errs, errors.New("pep: the client ID is empty; pass the clientId of the application whose resources are checked"))
	} else if !utf8.ValidString(clientID) {
		errs = append(errs, errors.New("pep: the client ID is not valid UTF-8 (JSON would send another client ID); pass the clientId as UTF-8"))
	}
	if err := errors.Join(append(errs, cfg.Validate("pep"))...); err != nil {
		return nil, err
	}
	prefix := base + "/realms/" + url.PathEscape(realm) + "/authorization-decision-provider"
	c := &Client{realm: realm, clientID: clientID, gatewayURL: base,
		authorizeURL: prefix + "/authorize", organizationsURL: prefix + "/get-organizations"}
	if err := c.core.Init(cfg, core.Identity{
		Peer: gateway, Scope: instrumentation, URL: base,
		Attributes:    []attribute.KeyValue{attribute.String("pep.realm", realm), attribute.String("pep.client", clientID)},
		NoToken:       "call SetToken or pass a token with WithToken",
		Misconfigured: "check the gateway URL, realm and client ID (Client.Verify says which)",
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// SetToken makes token the Bearer token of every later call that has no
// per-call token. It purges the cached decisions of the previous token and
// then emits tokenSet (after releasing the client's locks, so handlers may
// call back into the client). Calls still under way with the previous
// token fail closed at their next step (ErrTokenChanged): no retry goes
// out with it and no answer to it is used or cached. SetToken("") is
// ClearToken().
func (c *Client) SetToken(token string) { c.core.SetBearer(token) }

// ClearToken removes the client's token, purges its cached decisions and
// emits tokenCleared. Calls still under way with it fail closed
// (ErrTokenChanged, as for SetToken); later calls without a per-call token
// fail with ErrNoToken. It does nothing, and emits nothing, when there is
// no token.
func (c *Client) ClearToken() { c.core.ClearToken() }

// Close releases the client's connections. Every call made after it
// (Check, CheckMany, ListGranted, Organizations, Verify), cached answers
// included, fails with ErrClosed, with DENY decisions and nothing sent.
// Calls under way finish as they would have; their connections are closed
// as they end, so that once they have, the client keeps no connection and
// no goroutine (what goleak.VerifyTestMain checks). Close does not wait for
// them (with WithInvalidator it does, for at most 2 s, so that their 401s
// reach the other replicas). It always returns nil; calling it again does
// nothing more.
//
// Close closes the connections of the client's own transport, the one New
// makes when WithHTTPClient is not given. A transport given with
// WithHTTPClient is the caller's: Close leaves its connections alone (close
// them with that *http.Client's CloseIdleConnections), and only stops the
// client from using it.
func (c *Client) Close() error {
	c.core.Close()
	return nil
}

// Subscribe adds h to the handlers of the client's token lifecycle events
// (tokenSet, tokenExpired, tokenCleared) and returns a function that removes
// it. Events are delivered one at a time, in the order the token changed,
// to every handler in subscription order, with no client lock held: a
// tokenExpired handler may call SetToken (its tokenSet is delivered after
// the tokenExpired has reached every handler). SetToken, SetDPoPToken and
// ClearToken return once their event is delivered, unless a delivery is
// already under way, which then delivers it. A call that caused
// tokenExpired waits for its delivery only until the call's deadline; a
// slower handler finishes on its own goroutine. A panicking handler is
// recovered and logged at Error.
func (c *Client) Subscribe(h events.Handler) (unsubscribe func()) { return c.core.Subscribe(h) }

// Stats is a snapshot of a client's counters. Counters only grow.
type Stats struct {
	// Calls counts Check, CheckMany, ListGranted and Organizations calls.
	Calls uint64
	// GatewayRequests counts HTTP requests sent to the gateway, every
	// retry and DPoP nonce resend included.
	GatewayRequests uint64
	// Retries counts the requests that were retries of a failed one.
	Retries uint64
	// Coalesced counts the times a call shared a gateway request that an
	// identical concurrent call had already started, instead of sending
	// its own.
	Coalesced uint64
	// CacheHits and CacheMisses count cache lookups, one per pair.
	CacheHits, CacheMisses uint64
	// CacheEvictions counts live decisions pushed out of a full cache.
	CacheEvictions uint64
	// CacheEntries is the number of decisions cached now.
	CacheEntries int
	// CacheBytes is what the cached decisions count against the cache's
	// byte bound (WithCacheMaxBytes).
	CacheBytes int64
	// FailClosed counts decisions the client denied itself (those with a
	// non-nil Cause) instead of reporting a gateway answer.
	FailClosed uint64
	// Breaker is the circuit breaker's state now.
	Breaker BreakerState
	// Invalidations counts the purge messages received from the
	// invalidation channel (WithInvalidator) and applied: a token's purge
	// published by this version is two (see Purge), one of earlier
	// versions one; MalformedInvalidations the messages on it that were
	// ignored as malformed.
	Invalidations, MalformedInvalidations uint64
	// InvalidationGaps counts the times the channel went down (no cached
	// decision was served until it was back); InvalidationRecoveries the
	// times it came back, the first subscription included, each of which
	// purged the whole cache.
	InvalidationGaps, InvalidationRecoveries uint64
	// InvalidationPublishFailures counts the publications of purges
	// (Purge, PurgeAll, a 401) to the other replicas that failed. A 401's
	// purge is retried until it is delivered (or Close): each failed try
	// counts.
	InvalidationPublishFailures uint64
	// InvalidationRefusalOverflows counts the times the 401s' purges
	// waiting to be published outgrew their bound (1,024, or one waiting a
	// second: a flood of refused tokens, or a slow channel), and were
	// replaced by one purge of every replica's whole cache, which covers
	// them.
	InvalidationRefusalOverflows uint64
	// CacheBypassed reports whether cached decisions are not served now
	// (every call goes to the server): with an invalidator whose
	// heartbeat is not fresh; always false without one.
	CacheBypassed bool
}

// Stats returns the client's counters. It is cheap and safe to call at any
// time.
func (c *Client) Stats() Stats {
	n := c.core.Counts()
	return Stats{
		Calls: n.Calls, GatewayRequests: n.Requests, Retries: n.Retries,
		Coalesced: n.Coalesced, CacheHits: n.CacheHits, CacheMisses: n.CacheMisses,
		CacheEvictions: n.CacheEvictions, CacheEntries: n.CacheEntries, CacheBytes: n.CacheBytes,
		FailClosed: n.FailClosed, Breaker: n.Breaker,
		Invalidations: n.Received, MalformedInvalidations: n.Malformed,
		InvalidationGaps: n.Gaps, InvalidationRecoveries: n.Recoveries,
		InvalidationPublishFailures: n.PublishFailures, InvalidationRefusalOverflows: n.RefusalOverflows,
		CacheBypassed: n.Bypassed,
	}
}
