package authzen

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/core"
)

// Client asks an AuthZEN PDP for access decisions and fails closed. It is
// safe for concurrent use. Its configuration is fixed by New; only the
// PEP's credential changes afterwards (SetToken, SetDPoPToken,
// ClearToken).
type Client struct {
	// core holds the credential, the cache, the counters and the
	// transport (internal/core, shared with pep).
	core core.Core

	pdpURL string // without a trailing slash

	// endpoints are the PDP's, from WithEndpoints or discovery; nil until
	// discovery succeeded. discovering holds a token while a discovery
	// runs: one at a time, and a waiter can give up.
	endpoints   atomic.Pointer[Endpoints]
	discovering chan struct{}

	// noCredential is WithoutCredentials: the client sends none, and a
	// token given to it is refused.
	noCredential bool
}

// New returns a client for the PDP at pdpURL (an absolute http or https
// URL, the PDP identifier of the AuthZEN metadata). Unless WithEndpoints
// is given, the endpoints are read from the PDP's
// /.well-known/authzen-configuration on the first call (or by Discover).
// New applies the defaults, then opts, and validates the result once,
// returning an error that names every setting to fix.
func New(pdpURL string, opts ...Option) (*Client, error) {
	cfg := config{Settings: core.Defaults(DefaultBatchSize)}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	base, err := core.ParseURL(pdpURL, pdp)
	errs := []error{err, cfg.Validate("authzen")}
	var ep *Endpoints
	if cfg.endpoints != nil {
		e, err := cfg.endpoints.resolve(base)
		errs = append(errs, err)
		ep = &e
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c := &Client{pdpURL: base, discovering: make(chan struct{}, 1), noCredential: cfg.noCredential}
	c.endpoints.Store(ep)
	if err := c.core.Init(cfg.Settings, core.Identity{
		Peer: pdp, Scope: instrumentation, URL: base,
		NoToken:       "call SetToken or SetDPoPToken (or make the client WithoutCredentials, for a PDP that takes none)",
		Misconfigured: "check the PDP URL and its endpoints (WithEndpoints, or its metadata)",
	}); err != nil {
		return nil, err
	}
	if c.noCredential {
		c.core.SetNone()
	}
	return c, nil
}

// resolve makes every endpoint absolute against base.
func (e Endpoints) resolve(base string) (Endpoints, error) {
	var errs []error
	fix := func(name string, p *string) {
		if *p == "" {
			return
		}
		if strings.HasPrefix(*p, "/") {
			*p = base + *p
		}
		// A path is held to the PDP URL's rules once resolved: no query or
		// fragment, which might hold secrets and would show in logs and
		// spans (url.full); the error does not repeat the endpoint.
		if _, err := core.ParseURL(*p, pdp); err != nil {
			errs = append(errs, fmt.Errorf("authzen: the %s endpoint must be a path starting with / or an absolute http(s) URL, without user information, query or fragment (give secrets as the credential, not in the URL)", name))
		}
	}
	fix("evaluation", &e.Evaluation)
	fix("evaluations", &e.Evaluations)
	fix("subject search", &e.SearchSubject)
	fix("resource search", &e.SearchResource)
	fix("action search", &e.SearchAction)
	return e, errors.Join(errs...)
}

// SetToken makes token the Bearer token the PEP sends to the PDP. It purges
// the previous credential's cached decisions and emits tokenSet; calls
// still under way with the previous credential fail closed at their next
// step (ErrTokenChanged). A token longer than WithMaxTokenBytes, or one an
// HTTP header cannot carry, is refused by every call (ErrNoToken) without
// sending anything. SetToken("") is ClearToken(), on every client. On a
// client made WithoutCredentials any other token is a wiring mistake:
// every later call fails with an error matching ErrNoToken that says so,
// until ClearToken.
func (c *Client) SetToken(token string) {
	if c.accepts(token, "SetToken") {
		c.core.SetBearer(token)
	}
}

// accepts reports whether a token given by method ("SetToken" or
// "SetDPoPToken") is to be set. An empty one is ClearToken; on a client
// made WithoutCredentials any other makes every later call fail, saying
// what to fix.
func (c *Client) accepts(token, method string) bool {
	switch {
	case token == "":
		c.ClearToken()
	case c.noCredential:
		c.core.Refuse(fmt.Errorf("%w: the client was made WithoutCredentials and then given a token (%s): "+
			"drop WithoutCredentials to send a token, or do not call %s", pdp.Err(ErrNoToken), method, method))
	default:
		return true
	}
	return false
}

// SetDPoPToken makes token a DPoP-bound token (RFC 9449) bound to signer's
// key: every attempt carries a fresh proof and the PDP's latest DPoP-Nonce.
// Otherwise as SetToken (SetDPoPToken("", signer) is ClearToken(); any
// other token is a wiring mistake on a client made WithoutCredentials); a
// nil signer makes calls fail with ErrNoToken.
//
// A key that is not held in memory (signer.InMemory false: a KMS, an HSM)
// signs under the call's context: a call waits for it only until its
// deadline and is then denied with a Cause matching ErrUnavailable and
// context.DeadlineExceeded, nothing sent and the breaker not counting it.
// A key makes at most 16 signatures at once, across every authzen and pep
// client using it through any Signer of it: dpop.NewSigner called again on
// the same crypto.Signer value (one that can be compared with ==) and the
// copies Signer.WithClock makes share its bound. A key is known by that
// value, never by the public key it claims: another crypto.Signer of the
// same public key (another tenant's claiming it, another region of one KMS
// key) has a bound of its own, and one that cannot be compared has one
// per NewSigner. A call waits for a slot only
// until its deadline, and a hung key holds at most 16 goroutines. One
// whose every slot has been taken for over 10 s is taken as hung: calls
// fail at once (ErrUnavailable) until one returns.
func (c *Client) SetDPoPToken(token string, signer *dpop.Signer) {
	if c.accepts(token, "SetDPoPToken") {
		c.core.SetDPoP(token, signer)
	}
}

// ClearToken removes the credential, purges its cached decisions and emits
// tokenCleared; calls under way with it fail closed (ErrTokenChanged), and
// later calls fail with ErrNoToken. It does nothing, and emits nothing,
// when there is no credential. On a client made WithoutCredentials it
// emits nothing either: it undoes the refusal a token given to it caused
// (SetToken, SetDPoPToken), so that the client again sends no credential,
// and otherwise does nothing.
func (c *Client) ClearToken() {
	if c.noCredential {
		c.core.Unrefuse()
		return
	}
	c.core.ClearToken()
}

// Close releases the client's connections: every call made after it
// (Evaluate, Evaluations, the searches, Discover) fails with ErrClosed
// without sending anything; calls under way finish, and their connections
// are closed as they end. Close does not wait for them (with WithInvalidator
// it does, for at most 2 s, so that their 401s reach the other replicas). It closes only the
// connections of the transport New made; one given with WithHTTPClient is
// the caller's to close. It always returns nil; calling it again does
// nothing more.
func (c *Client) Close() error {
	c.core.Close()
	return nil
}

// Subscribe adds h to the handlers of the client's token lifecycle events
// (tokenSet, tokenExpired, tokenCleared) and returns a function that
// removes it. The delivery rules are pep.Client.Subscribe's: one event at
// a time, in the order the credential changed, with no client lock held; a
// panicking handler is recovered and logged at Error.
func (c *Client) Subscribe(h events.Handler) (unsubscribe func()) { return c.core.Subscribe(h) }

// Stats is a snapshot of a client's counters. Counters only grow.
type Stats struct {
	// Calls counts Evaluate, Evaluations and search calls.
	Calls uint64
	// Evaluations counts the decisions the calls returned, fail-closed
	// ones included.
	Evaluations uint64
	// PDPRequests counts HTTP requests sent to the PDP, every retry and
	// DPoP nonce resend included.
	PDPRequests uint64
	// Retries counts the requests that were retries of a failed one.
	Retries uint64
	// Coalesced counts calls that shared an identical concurrent call's
	// request instead of sending their own.
	Coalesced uint64
	// CacheHits and CacheMisses count cache lookups, one per evaluation.
	CacheHits, CacheMisses uint64
	// CacheEvictions counts live decisions pushed out of a full cache.
	CacheEvictions uint64
	// CacheEntries is the number of decisions cached now.
	CacheEntries int
	// CacheBytes is what the cached decisions count against the cache's
	// byte bound (WithCacheMaxBytes).
	CacheBytes int64
	// FailClosed counts decisions the client denied itself (non-nil Cause).
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
		Calls: n.Calls, Evaluations: n.Decisions, PDPRequests: n.Requests, Retries: n.Retries,
		Coalesced: n.Coalesced, CacheHits: n.CacheHits, CacheMisses: n.CacheMisses,
		CacheEvictions: n.CacheEvictions, CacheEntries: n.CacheEntries, CacheBytes: n.CacheBytes,
		FailClosed: n.FailClosed, Breaker: n.Breaker,
		Invalidations: n.Received, MalformedInvalidations: n.Malformed,
		InvalidationGaps: n.Gaps, InvalidationRecoveries: n.Recoveries,
		InvalidationPublishFailures: n.PublishFailures, InvalidationRefusalOverflows: n.RefusalOverflows,
		CacheBypassed: n.Bypassed,
	}
}
