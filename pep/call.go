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
