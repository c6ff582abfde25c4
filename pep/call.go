package pep

import (
	"context"
	"fmt"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// call is what one public call carries on its way to the gateway: the
// core's call (its token, cache entries and deadline) and pep's request
// context.
type call struct {
	core.Call
	// context is the canonical JSON of the request context (contextJSON);
	// ctxKey is its part of cache keys (see contextKey).
	context string
	ctxKey  string
	noCache bool
}

// newCall fills in cl, which must be the zero call, for a call: its
// options and its token, the per-call one from WithToken, else the
// client's. It does not allocate (without a request context) and does not
// keep cl, which can stay on the stack.
func (c *Client) newCall(ctx context.Context, cc *callConfig, cl *call) error {
	cl.context, cl.noCache = noContext, cc.noCache
	if cc.reqCtx != nil {
		cl.context = contextJSON(cc.reqCtx)
		cl.ctxKey = contextKey(cl.context)
	}
	v := ctx.Value(tokenKey{})
	if v == nil {
		return c.core.Own(&cl.Call, cl.noCache)
	}
	tok, _ := v.(string)
	if tok == "" && !c.core.Closed() {
		return fmt.Errorf("%w: WithToken was given an empty token", gateway.Err(transport.ErrNoToken))
	}
	return c.core.PerCall(&cl.Call, tok, cl.noCache)
}

// tokenGroup returns the cache entries of the token a call in ctx is made
// with, as newCall would find them, without making the call. It reports
// false when there is no token to read by (none set, or an empty per-call
// one, or the client is closed): newCall says why.
func (c *Client) tokenGroup(ctx context.Context) (*core.Group, bool) {
	switch v := ctx.Value(tokenKey{}).(type) {
	case nil:
		return c.core.OwnGroup()
	case string:
		if v != "" {
			return c.core.Lookup(v)
		}
	}
	return nil, false
}
