package pep

import (
	"context"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/fastcheck"
	"github.com/orgauthz/orgauthz/internal/verbatim"
)

func init() {
	fastcheck.Check = func(ctx context.Context, client any, q fastcheck.Query, res any) error {
		return client.(*Client).checkRequest(ctx, &q, res.(*Result))
	}
	fastcheck.Prepare = func(resource string, scopes []string) any {
		if rt := prepare(resource, scopes); rt != nil {
			return rt
		}
		return nil // not a nil *route in an interface
	}
}

// route is a protected route's constant question (fastcheck.Prepare),
// made once when the route is: its pairs without repeats, and the start of
// each pair's cache keys under a request context, up to the context's
// attributes (ctxOpen), so that a request's key is that start and the rest
// of its context's JSON.
type route struct {
	pairs  []pair
	starts []string
	// cached reports that every pair may be cached (cacheablePair).
	cached bool
}

// ctxOpen is how the canonical JSON of every request context the
// middleware sends begins (appendRequestContext).
const ctxOpen = `{"attributes":{`

// prepare returns the route of every scope of scopes on resource, or nil
// when the question is one checkRequest refuses.
func prepare(resource string, scopes []string) *route {
	if !fastcheck.Askable(resource, scopes) {
		return nil
	}
	rt := &route{cached: true}
	for i, s := range scopes {
		if slices.Contains(scopes[:i], s) {
			continue
		}
		p := pair{resource: resource, scope: s}
		rt.pairs = append(rt.pairs, p)
		rt.starts = append(rt.starts, string(appendKey(nil, p, ctxOpen)))
		rt.cached = rt.cached && cacheablePair(p)
	}
	return rt
}

// routeKeyBytes is the longest key a route's lookup builds on its stack;
// a longer one is built as get builds it.
const routeKeyBytes = 128

// lookup is pep's lookup of the route's pairs, whose decisions ds holds in
// order, under the request context whose canonical JSON is cj, at most
// maxExactContext bytes (its own context key): each key is the pair's
// start followed by the rest of cj. The route's pairs must be cacheable.
func (rt *route) lookup(g *core.Group, cj []byte, ds []Decision) (missing []int) {
	tail := cj[len(ctxOpen):]
	for i := range ds {
		var s Status
		var ok bool
		switch start := rt.starts[i]; {
		case g == nil:
		case len(start)+len(tail) <= routeKeyBytes:
			var buf [routeKeyBytes]byte
			s, ok = status(g.Get(transient(append(append(buf[:0], start...), tail...))))
		default:
			s, ok = get(g, transient(cj), rt.pairs[i])
		}
		if ok {
			ds[i].Status, ds[i].Cached = s, true
			continue
		}
		if missing == nil {
			missing = make([]int, 0, len(ds)-i)
		}
		missing = append(missing, i)
	}
	return missing
}

// checkRequest is CheckMany of one resource's scopes under the request
// context {q.Method, q.Path}, with q.Token as a per-call token (or the
// client's own, with q.Own), for middleware (see internal/fastcheck): the
// same answer, the same counts and telemetry, one cache lookup per pair.
// Answered from the cache, it allocates nothing: the decisions go into
// res.Decisions' backing array when it has room, and the request
// context's cache key is built on the stack.
func (c *Client) checkRequest(ctx context.Context, q *fastcheck.Query, res *Result) error {
	ds := res.Decisions[:0]
	rt, _ := q.Route.(*route)
	if rt != nil {
		for _, p := range rt.pairs {
			ds = append(ds, Decision{Resource: p.resource, Scope: p.scope})
		}
	} else {
		for i, s := range q.Scopes {
			if !slices.Contains(q.Scopes[:i], s) {
				ds = append(ds, Decision{Resource: q.Resource, Scope: s})
			}
		}
	}
	res.Decisions, res.Status = ds, Deny
	if rt == nil && !fastcheck.Askable(q.Resource, q.Scopes) {
		c.core.CountCall()
		pairs, err := expand([]Resource{{Name: q.Resource, Scopes: q.Scopes}}, false)
		res.Decisions = failedPairs(pairs, err)
		return err
	}
	var buf [256]byte
	cj, plain := appendRequestContext(buf[:0], q.Method, q.Path)
	if !plain {
		// Not every byte is printable ASCII: the strings may not be
		// valid UTF-8, which json.Marshal would have written as other
		// strings.
		if err := checkRequestContext(q.Method, q.Path); err != nil {
			c.core.CountCall()
			c.failAll(ds, err)
			return err
		}
	}
	// ctxKey views buf while the cache is asked; a request gets strings
	// of its own.
	ctxKey := transient(cj)
	exact := len(cj) <= maxExactContext
	if !exact {
		ctxKey = contextKey(string(cj))
	}
	var cl core.Call
	var err error
	if q.Own {
		err = c.core.Own(&cl, false)
	} else {
		err = c.core.PerCall(&cl, q.Token, false)
	}
	if err != nil {
		c.core.CountCall()
		c.failAll(ds, err)
		return err
	}
	var missing []int
	if rt != nil && rt.cached && exact {
		missing = rt.lookup(cl.Group, cj, ds)
	} else {
		missing = lookup(cl.Group, ctxKey, ds)
	}
	if len(missing) == 0 {
		res.Status = overall(ds)
		if len(ds) == 1 {
			// One decision from the cache: counted and recorded as
			// Check's hit is, which CheckMany's counts and span equal.
			c.core.Hit(ctx, "pep.CheckMany", ds[0].Status == Grant)
			return nil
		}
		c.core.CountCall()
		c.record(ds)
		c.core.Telemetry().CachedCall(ctx, "pep.CheckMany", len(ds), outcomeOf(ds))
		return nil
	}
	c.core.CountCall()
	// Only the miss path moves the call to the heap.
	miss := &call{Call: cl, context: string(cj)}
	miss.ctxKey = contextKey(miss.context)
	err = c.decide(ctx, "pep.CheckMany", miss, ds, missing)
	res.Status = overall(ds)
	return err
}

// checkRequestContext refuses, as requestContextJSON does, a method or path that
// is not valid UTF-8, which appendRequestContext would have written as
// another string. It does not allocate for valid ones.
func checkRequestContext(method, path string) error {
	if utf8.ValidString(method) && utf8.ValidString(path) {
		return nil
	}
	return (&RequestContext{Method: method, Path: path}).check()
}

// appendRequestContext appends the canonical JSON of the request context
// {Method: method, Path: path} to b: the bytes contextJSON makes of it
// when its strings are valid UTF-8 (checkRequestContext). plain reports
// that every byte of them is printable ASCII written as it is, so valid
// UTF-8: the scan of the append spares a request's check.
func appendRequestContext(b []byte, method, path string) (_ []byte, plain bool) {
	plain = true
	b = append(b, `{"attributes":{`...)
	switch method {
	case "":
	case http.MethodGet: // the methods of most requests, spelt out once
		b = append(b, `"method":"GET"`...)
	case http.MethodPost:
		b = append(b, `"method":"POST"`...)
	case http.MethodPut:
		b = append(b, `"method":"PUT"`...)
	case http.MethodPatch:
		b = append(b, `"method":"PATCH"`...)
	case http.MethodDelete:
		b = append(b, `"method":"DELETE"`...)
	default:
		b = append(b, `"method":`...)
		b, plain = verbatim.AppendJSONPlain(b, method)
	}
	if path != "" {
		if method != "" {
			b = append(b, ',')
		}
		b = append(b, `"path":`...)
		var p bool
		b, p = verbatim.AppendJSONPlain(b, path)
		plain = plain && p
	}
	return append(b, "}}"...), plain
}
