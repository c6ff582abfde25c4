package pep

import (
	"context"
	"fmt"
	"time"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// call is what one public call carries on its way to the gateway.
type call struct {
	id    tokenIdent
	state *tokenState // the client's token state; nil for a per-call token
	// context is the canonical JSON of the request context (contextJSON);
	// ctxKey is its part of cache keys (see contextKey).
	context string
	ctxKey  string
	noCache bool
	// group reads the token's cached decisions; nil when the call reads
	// nothing from the cache, and always nil for a token too long to cache.
	group *tokenEntries
	// ownDeadline is set when the call's deadline is the client's timeout
	// rather than an earlier one of the caller's: only then does running
	// out of time say something about the gateway (the breaker's concern).
	ownDeadline bool
}

// newCall fills in cl, which must be the zero call, for a call: its
// options and its token, the per-call one from WithToken, else the
// client's. It does not allocate (without a request context) and does not
// keep cl, which can stay on the stack. It sets fields one by one: copying
// a whole call through the pointer costs more than the rest of a cached
// Check.
func (c *Client) newCall(ctx context.Context, cc *callConfig, cl *call) error {
	if c.x.Closed() {
		return ErrClosed
	}
	cl.context, cl.noCache = noContext, cc.noCache
	if cc.reqCtx != nil {
		cl.context = contextJSON(cc.reqCtx)
		cl.ctxKey = contextKey(cl.context)
	}
	if v := ctx.Value(tokenKey{}); v != nil {
		tok, _ := v.(string)
		if tok == "" {
			return fmt.Errorf("%w: WithToken was given an empty token", ErrNoToken)
		}
		cl.id = tokenIdent{Scheme: schemeBearer, Token: tok}
		if !cl.noCache {
			cl.group = c.cache.lookup(cl.id)
		}
		return nil
	}
	st := c.token.Load()
	if st == nil {
		return fmt.Errorf("%w: call SetToken or pass a token with WithToken", ErrNoToken)
	}
	cl.id, cl.state = st.id, st
	if !cl.noCache {
		cl.group = st.group // nil when the token's entries are not cached (pin)
	}
	return nil
}

// credential returns what attaches the call's token to a request, or why
// the token cannot be sent (ErrNoToken): characters an HTTP header cannot
// carry, or more than maxToken bytes (WithMaxTokenBytes).
func (cl *call) credential(maxToken int) (credential, error) {
	if cl.state == nil { // a per-call token, checked on each call
		if err := transport.CheckToken(cl.id.Token, maxToken); err != nil {
			return nil, err
		}
		return transport.NewBearer(cl.id.Token), nil
	}
	if cl.state.unusable != nil {
		return nil, cl.state.unusable
	}
	if err := cl.state.cred.Usable(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	return cl.state.cred, nil
}

// bound returns ctx limited by the client's timeout, and records in cl
// whether that timeout, not the caller's own deadline, is the call's.
func (c *Client) bound(ctx context.Context, cl *call) (context.Context, context.CancelFunc) {
	deadline, has := ctx.Deadline()
	cl.ownDeadline = !has || time.Until(deadline) >= c.timeout
	return context.WithTimeout(ctx, c.timeout)
}
