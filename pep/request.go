package pep

import (
	"context"
	"fmt"
	"slices"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/fastcheck"
	"github.com/orgauthz/orgauthz/internal/transport"
)

func init() {
	fastcheck.Check = func(ctx context.Context, client any, q fastcheck.Query, res any) error {
		return client.(*Client).checkRequest(ctx, &q, res.(*Result))
	}
}

// checkRequest is CheckMany of one resource's scopes under the request
// context {q.Method, q.Path}, with q.Token as a per-call token (or the
// client's own, with q.Own), for middleware (see internal/fastcheck): the
// same answer, the same counts and telemetry, one cache lookup per pair.
// Answered from the cache, it allocates nothing: the decisions go into
// res.Decisions' backing array when it has room, and the request
// context's cache key is built on the stack.
func (c *Client) checkRequest(ctx context.Context, q *fastcheck.Query, res *Result) error {
	c.core.CountCall()
	ds := res.Decisions[:0]
	for i, s := range q.Scopes {
		if !slices.Contains(q.Scopes[:i], s) {
			ds = append(ds, Decision{Resource: q.Resource, Scope: s})
		}
	}
	res.Decisions, res.Status = ds, Deny
	if q.Resource == "" || q.Resource == "*" || len(ds) == 0 || slices.Contains(q.Scopes, "") {
		pairs, err := expand([]Resource{{Name: q.Resource, Scopes: q.Scopes}}, false)
		res.Decisions = failedPairs(pairs, err)
		return err
	}
	var buf [256]byte
	cj := appendRequestContext(buf[:0], q.Method, q.Path)
	// ctxKey views buf while the cache is asked; a request gets strings
	// of its own.
	ctxKey := transient(cj)
	if len(cj) > maxExactContext {
		ctxKey = contextKey(string(cj))
	}
	var cl core.Call
	var err error
	switch {
	case q.Own:
		err = c.core.Own(&cl, false)
	case q.Token == "" && !c.core.Closed():
		err = fmt.Errorf("%w: WithToken was given an empty token", gateway.Err(transport.ErrNoToken))
	default:
		err = c.core.PerCall(&cl, q.Token, false)
	}
	if err != nil {
		c.failAll(ds, err)
		return err
	}
	missing := lookup(cl.Group, ctxKey, ds)
	if len(missing) == 0 {
		c.record(ds)
		c.core.Telemetry().CachedCall(ctx, "pep.CheckMany", len(ds), outcomeOf(ds))
		res.Status = overall(ds)
		return nil
	}
	// Only the miss path moves the call to the heap.
	miss := &call{Call: cl, context: string(cj)}
	miss.ctxKey = contextKey(miss.context)
	err = c.decide(ctx, "pep.CheckMany", miss, ds, missing)
	res.Status = overall(ds)
	return err
}

// appendRequestContext appends the canonical JSON of the request context
// {Method: method, Path: path} to b: the bytes contextJSON makes of it.
func appendRequestContext(b []byte, method, path string) []byte {
	b = append(b, `{"attributes":{`...)
	if method != "" {
		b = append(b, `"method":`...)
		b = appendJSONString(b, method)
	}
	if path != "" {
		if method != "" {
			b = append(b, ',')
		}
		b = append(b, `"path":`...)
		b = appendJSONString(b, path)
	}
	return append(b, "}}"...)
}
