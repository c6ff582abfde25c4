package core

import (
	"context"
	"errors"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// Token is the client's own token. A new one is made by every SetToken,
// so that expired marks exactly one token's lifetime.
type Token struct {
	// cred is released (before the purge) when the token is replaced or
	// cleared, which stops the calls still using it (ErrTokenChanged).
	cred *transport.Held
	id   transport.Ident
	// unusable is why the token cannot be sent (Peer.CheckToken:
	// characters a header cannot carry, or longer than WithMaxTokenBytes),
	// found once when it is set rather than on every call; nil when it
	// can.
	unusable error
	// group is the token's pinned handle in the decision cache (nil
	// without one), unpinned when the token is replaced.
	group *Group
	// identity is the digest of the token's identity (identityDigest),
	// by which its retirement finds every spelling of it; digest is the
	// token's own digest on the invalidation channel (tokenDigest), zero
	// without an Invalidator. Its flights carry both (flightKey).
	identity, digest [digestBytes]byte
	// expired is set, under Core.tokenMu, by the first 401 for this
	// token: it makes tokenExpired fire once, however many calls the
	// server refuses.
	expired bool
}

// SetBearer makes token the client's Bearer token for every later call;
// see set. An empty token is ClearToken.
func (c *Core) SetBearer(token string) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.set(transport.NewBearer(token))
}

// SetDPoP makes token the client's DPoP-bound token for every later call,
// bound to signer's key (a nil signer makes every call fail with
// ErrNoToken); see set. An empty token is ClearToken.
func (c *Core) SetDPoP(token string, signer *dpop.Signer) {
	if token == "" {
		c.ClearToken()
		return
	}
	c.set(transport.NewDPoP(token, signer))
}

// set makes cred the client's token. It stops the calls still using the
// previous token (ErrTokenChanged), purges that token's cached decisions,
// and then emits tokenSet once the client's locks are released, so that
// handlers may call back into the client.
func (c *Core) set(cred transport.Credential) {
	st := c.newToken(cred, nil)
	if st.unusable = c.who.Peer.CheckToken(st.id.Token, c.maxToken); st.unusable == nil {
		st.group = c.cache.pin(st.id) // a token never sent has nothing to cache
	}
	c.tokenMu.Lock()
	old := c.token.Swap(st)
	c.enqueue(events.TokenSet, st.id.Scheme, nil)
	c.tokenMu.Unlock()
	if old != nil {
		c.forget(old)
	}
	c.emitter.Deliver(context.Background())
}

// SetNone makes the client send no credential on every later call, for
// good, without an event: a client made to go without (its decisions are
// cached under the one Ident of SchemeNone).
func (c *Core) SetNone() {
	st := c.newToken(transport.NewNone(), nil)
	st.group = c.cache.pin(st.id)
	c.replace(st)
}

// Refuse makes every later call fail with err, which must match
// ErrNoToken and say what to fix, without an event: a credential given
// to a client made to go without one. Calls under way stop
// (ErrTokenChanged).
func (c *Core) Refuse(err error) {
	c.replace(c.newToken(transport.NewNone(), err))
}

// Unrefuse undoes Refuse: when the client's token is a refusal (and only
// then) it becomes SetNone's again, without an event. It reports whether
// it did.
func (c *Core) Unrefuse() bool {
	st := c.newToken(transport.NewNone(), nil)
	st.group = c.cache.pin(st.id)
	c.tokenMu.Lock()
	cur := c.token.Load()
	refused := cur != nil && cur.id.Scheme == transport.SchemeNone && cur.unusable != nil
	if refused {
		c.token.Store(st)
	}
	c.tokenMu.Unlock()
	if !refused {
		st.cred.Release()
		if st.group != nil {
			st.group.Unpin()
		}
		return false
	}
	c.forget(cur)
	return true
}

// newToken returns the state of a new token of the client, cred, which
// cannot be sent when unusable is set; its group is for the caller to pin.
func (c *Core) newToken(cred transport.Credential, unusable error) *Token {
	st := &Token{cred: transport.Hold(cred), id: cred.Ident(), unusable: unusable}
	st.identity = identityDigest(st.id.Token)
	if c.replicas != nil {
		st.digest = tokenDigest(st.id.Token)
	}
	return st
}

// replace makes st the client's token without an event, and forgets the
// previous one.
func (c *Core) replace(st *Token) {
	c.tokenMu.Lock()
	old := c.token.Swap(st)
	c.tokenMu.Unlock()
	if old != nil {
		c.forget(old)
	}
}

// ClearToken removes the client's token, as SetCredential replaces it,
// and emits tokenCleared; it does nothing, and emits nothing, when there
// is no token.
func (c *Core) ClearToken() {
	c.tokenMu.Lock()
	old := c.token.Swap(nil)
	if old != nil {
		c.enqueue(events.TokenCleared, old.id.Scheme, nil)
	}
	c.tokenMu.Unlock()
	if old == nil {
		return
	}
	c.forget(old)
	c.emitter.Deliver(context.Background())
}

// forget drops a token that is no longer the client's: the calls still
// using it stop (ErrTokenChanged), then it is retired (the cached
// decisions of every spelling of it go) and its pin on them goes. The
// order matters: the purge fences the cache writers of requests made
// before it, and a request made after it is stopped by the release
// (transport.Held).
func (c *Core) forget(old *Token) {
	old.cred.Release()
	c.retire(old.id, old.identity)
	if old.group != nil {
		old.group.Unpin()
	}
}

// Subscribe adds h to the handlers of the token lifecycle events and
// returns a function that removes it (see pep.Client.Subscribe for the
// delivery rules).
func (c *Core) Subscribe(h events.Handler) (unsubscribe func()) { return c.emitter.Subscribe(h) }

// enqueue queues an event; c.tokenMu must be held, so that events are
// queued in the order of the token changes they report.
func (c *Core) enqueue(kind events.Kind, s transport.Scheme, err error) {
	c.emitter.Enqueue(events.Event{Kind: kind, Time: c.now(), TokenType: s.String(), Err: err})
}

// refused handles the error of a call's request (post, through which
// every request that carries a credential goes): for an answer that
// refuses the call's token (ErrUnauthorized: a 401, or a 400 or 403 naming
// invalid_token), the token is retired (the cached decisions of every
// spelling of it go), here and (with an Invalidator, published on a
// goroutine of its own) on every replica, and, if it is still the
// client's own current token, tokenExpired is emitted once per token, its
// delivery bounded by ctx (the call's deadline). A 401 that blames the DPoP proof (ErrProofRejected: a
// rejected proof, or a nonce still asked for after its one resend, in the
// DPoP challenge or, when that names no error, in the JSON body) is no
// verdict on the token: nothing happens; nor for a per-call
// token beyond the purge, since the client's own is unaffected. Only a
// credential the call sent can be refused: a 401 to a call that sent none
// (SchemeNone, a client made to go without) is the call's error and
// nothing more, with no purge and no event, so that no refresh handler is
// ever asked to replace a token the client does not have.
func (c *Core) refused(ctx context.Context, cl *Call, err error) {
	var re *transport.ResponseError
	if !errors.As(err, &re) || !errors.Is(re, transport.ErrUnauthorized) ||
		cl.ID.Scheme == transport.SchemeNone {
		return
	}
	identity, _ := c.digestsOf(cl)
	c.retire(cl.ID, identity)
	c.publishRefused(cl.ID.Token, identity)
	if cl.Token == nil {
		return
	}
	c.tokenMu.Lock()
	current := c.token.Load() == cl.Token && !cl.Token.expired
	if current {
		cl.Token.expired = true
		c.enqueue(events.TokenExpired, cl.ID.Scheme, re)
	}
	c.tokenMu.Unlock()
	if current {
		c.emitter.Deliver(ctx)
	}
}
