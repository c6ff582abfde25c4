package pep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/verbatim"
)

// Check asks whether the token may use scope on resource. The decision is
// Allowed only for an explicit GRANT that the gateway returned for exactly
// this pair (or a cached one).
//
// Failing closed: when the gateway is unreachable, times out, answers 5xx
// after retries, 400, 403, a redirect or an unusable body, or when the
// circuit breaker is open, Check returns a DENY whose Cause says why, and a
// nil error. It returns an error, with a DENY, only for a call it refuses
// to send (ErrInvalidArgument: an empty resource or scope, or the wildcard
// resource "*", which only ListGranted may ask for), a missing or unusable
// token (ErrNoToken; nothing is sent), and a 401 (a *ResponseError matching
// ErrUnauthorized, or ErrProofRejected when the gateway blames the DPoP
// proof; see the package documentation for what each does to the cache and
// the events).
//
// A cached answer is returned without a request and without allocating.
func (c *Client) Check(ctx context.Context, resource, scope string, opts ...CallOption) (Decision, error) {
	if err := checkPair(resource, scope); err != nil {
		c.core.CountCall()
		return c.refuse(Decision{Resource: resource, Scope: scope}, err)
	}
	p := pair{resource: resource, scope: scope}
	// A Check without options, the commonest, asks the cache before it
	// makes its call: a hit needs nothing else. A miss there is the call's:
	// the call made next does not ask the cache again.
	asked := false
	if len(opts) == 0 {
		if g, ok := c.tokenGroup(ctx); ok {
			if s, hit := get(g, "", p); hit {
				c.core.Hit(ctx, "pep.Check", s == Grant)
				return Decision{Resource: resource, Scope: scope, Status: s, Cached: true}, nil
			}
			asked = true
		}
	}
	if err := checkText(resource, scope); err != nil {
		c.core.CountCall()
		return c.refuse(Decision{Resource: resource, Scope: scope}, err)
	}
	var cc callConfig
	if len(opts) > 0 {
		cc = applyCallOptions(opts)
	}
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		c.core.CountCall()
		return c.refuse(Decision{Resource: resource, Scope: scope}, err)
	}
	if !asked {
		if s, ok := get(cl.Group, cl.ctxKey, p); ok {
			c.core.Hit(ctx, "pep.Check", s == Grant)
			return Decision{Resource: resource, Scope: scope, Status: s, Cached: true}, nil
		}
	}
	d := Decision{Resource: resource, Scope: scope}
	c.core.CountCall()
	// Only the miss path moves the call to the heap, together with its
	// one decision, in one allocation.
	miss := &struct {
		cl      call
		ds      [1]Decision
		missing [1]int
	}{cl: cl, ds: [1]Decision{d}}
	err := c.decide(ctx, "pep.Check", &miss.cl, miss.ds[:], miss.missing[:])
	return miss.ds[0], err
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

// checkPair refuses what Check and CheckMany never send: an empty name and
// the wildcard resource, whose answer lists other pairs (rule 8). It is
// inlined; pairError, which makes the error, is not. Names that are not
// valid UTF-8 are checkText's.
func checkPair(resource, scope string) error {
	if resource != "" && scope != "" && resource != "*" {
		return nil
	}
	return pairError(resource, scope)
}

// checkText refuses names that are not valid UTF-8: JSON would send other
// names. Check calls it after its cache lookup without options, which
// needs no such check: only a question that passed it is ever stored, so
// a name that is not valid UTF-8 is never found. It does not allocate.
func checkText(resource, scope string) error {
	if utf8.ValidString(resource) && utf8.ValidString(scope) {
		return nil
	}
	return pairError(resource, scope)
}

func pairError(resource, scope string) error {
	switch {
	case resource == "" || scope == "":
		return fmt.Errorf("%w: a check needs a resource and a scope", ErrInvalidArgument)
	case resource == "*":
		return fmt.Errorf("%w: the resource \"*\" stands for every resource; only ListGranted may ask for it", ErrInvalidArgument)
	case !utf8.ValidString(resource):
		return notText("the resource name")
	case !utf8.ValidString(scope):
		return notText("the scope")
	}
	return nil
}

func (c *Client) refuse(d Decision, err error) (Decision, error) {
	d.Status, d.Cause = Deny, err
	c.core.FailAll(1)
	return d, err
}

// CheckMany asks for every scope of every resource and returns one decision
// per pair, in request order with duplicates removed. Cached pairs are
// answered locally; the others are sent in requests of at most the batch
// size (WithBatchSize), several at a time. A failed request fails closed for
// its own pairs only. A cached decision is good as of the call's return,
// not of its first reading: once the requests are done, the cached pairs
// are read again, and a pair whose entry expired or was purged while the
// call waited is asked of the gateway (failing closed, with the Cause of a
// late call, past the call's deadline). The rules for errors and fail-closed denials are those
// of Check; in addition an empty resources slice or a resource without
// scopes is refused (ErrInvalidArgument) and sends nothing.
func (c *Client) CheckMany(ctx context.Context, resources []Resource, opts ...CallOption) (Result, error) {
	c.core.CountCall()
	pairs, err := expand(resources, false)
	if err != nil {
		return Result{Status: Deny, Decisions: failedPairs(pairs, err)}, err
	}
	cc := applyCallOptions(opts)
	ds := make([]Decision, len(pairs))
	for i, p := range pairs {
		ds[i] = Decision{Resource: p.resource, Scope: p.scope}
	}
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		c.failAll(ds, err)
		return Result{Status: Deny, Decisions: ds}, err
	}
	missing := lookup(cl.Group, cl.ctxKey, ds)
	if len(missing) > 0 {
		err = c.decide(ctx, "pep.CheckMany", &cl, ds, missing)
	} else {
		c.record(ds)
		c.core.Telemetry().CachedCall(ctx, "pep.CheckMany", len(ds), outcomeOf(ds))
	}
	return Result{Status: overall(ds), Decisions: ds}, err
}

// failedPairs returns the DENY decisions of a refused call.
func failedPairs(pairs []pair, err error) []Decision {
	ds := make([]Decision, len(pairs))
	for i, p := range pairs {
		ds[i] = Decision{Resource: p.resource, Scope: p.scope, Status: Deny, Cause: err}
	}
	return ds
}

// expand turns resources into unique pairs in request order. With wildcards
// (ListGranted), a resource without scopes becomes one query for all of
// them and the resource "*" is allowed; without, both are refused. The
// error names resources by position, never by name.
func expand(resources []Resource, wildcards bool) ([]pair, error) {
	if len(resources) == 0 {
		return nil, fmt.Errorf("%w: at least one resource is needed", ErrInvalidArgument)
	}
	n := 0
	for _, r := range resources {
		n += max(len(r.Scopes), 1)
	}
	pairs := make([]pair, 0, n)
	// A set of the pairs is needed only when one could repeat; checking
	// the names is ten times cheaper than hashing every pair.
	var seen map[pair]struct{}
	if !distinct(resources) {
		seen = make(map[pair]struct{}, n)
	}
	add := func(p pair) {
		if seen != nil {
			if _, dup := seen[p]; dup {
				return
			}
			seen[p] = struct{}{}
		}
		pairs = append(pairs, p)
	}
	var errs []error
	for i, r := range resources {
		switch {
		case r.Name == "":
			errs = append(errs, fmt.Errorf("resource %d has no name", i))
			continue
		case !utf8.ValidString(r.Name):
			errs = append(errs, fmt.Errorf("resource %d's name %s", i, verbatim.Problem))
			continue
		case r.Name == "*" && !wildcards:
			errs = append(errs, fmt.Errorf("resource %d is \"*\", which only ListGranted may ask for", i))
			continue
		case len(r.Scopes) == 0 && !wildcards:
			errs = append(errs, fmt.Errorf("resource %d has no scopes", i))
			continue
		case len(r.Scopes) == 0:
			add(pair{resource: r.Name})
			continue
		}
		for _, s := range r.Scopes {
			if s == "" {
				errs = append(errs, fmt.Errorf("resource %d has an empty scope", i))
				break
			}
			if !utf8.ValidString(s) {
				errs = append(errs, fmt.Errorf("resource %d has a scope that %s", i, verbatim.Problem))
				break
			}
			add(pair{resource: r.Name, scope: s})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return pairs, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return pairs, nil
}

// distinct reports whether no resource is named twice and none lists a
// scope twice, so that every pair expand makes is a new one. Hashing the
// names costs a fraction of hashing every pair.
func distinct(resources []Resource) bool {
	names := make(map[string]struct{}, len(resources))
	var scopes map[string]struct{}
	for _, r := range resources {
		if _, dup := names[r.Name]; dup {
			return false
		}
		names[r.Name] = struct{}{}
		if len(r.Scopes) <= 16 {
			for i, s := range r.Scopes {
				if slices.Contains(r.Scopes[:i], s) {
					return false
				}
			}
			continue
		}
		if scopes == nil {
			scopes = make(map[string]struct{}, len(r.Scopes))
		}
		clear(scopes)
		for _, s := range r.Scopes {
			if _, dup := scopes[s]; dup {
				return false
			}
			scopes[s] = struct{}{}
		}
	}
	return true
}

// lookup answers the decisions of ds (their pairs) that the cache holds,
// read through g under a request context key, and returns the indexes of
// the others. CheckMany and the middleware's requests (checkRequest) ask
// the cache through it.
func lookup(g *core.Group, ctxKey string, ds []Decision) (missing []int) {
	for i := range ds {
		if s, ok := get(g, ctxKey, pair{resource: ds[i].Resource, scope: ds[i].Scope}); ok {
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

// ListGranted returns the pairs the gateway grants, in request order (pairs
// listed for a wildcard in the gateway's order), without duplicates. A
// resource without scopes asks for every scope defined on it, the resource
// name "*" for every resource of the client, and nil resources for every
// permission of the client. Specific pairs are answered from the cache when
// possible (read again once the call's requests are done, as CheckMany's
// are); answers for wildcards are cached as pairs for later Checks.
// Every listed pair is decided like a Check of it: by the answer's one
// entry for exactly that pair. A pair the call gets several decisions for
// (named and covered by a wildcard, or covered by two) is listed only when
// every one of them grants: a DENY, an ERROR or a failure in any answer
// beats a GRANT in another, whichever is newer.
//
// An answer may make the client keep at most 10,000 distinct pairs; a
// longer listing is refused as malformed, so that a hostile gateway cannot
// make one call cost more than its answer's size.
//
// ListGranted fails closed like CheckMany: a pair that could not be decided
// is not listed. Then, unlike CheckMany, it also returns an error (the Cause
// of the first such pair) together with the permissions it could confirm,
// since an incomplete list cannot be told from a short one. A pair left
// out because one answer denied it (or could not evaluate it) returns no
// error: the gateway decided it. A 401 or a missing token return no
// permissions and the error.
func (c *Client) ListGranted(ctx context.Context, resources []Resource, opts ...CallOption) ([]Permission, error) {
	c.core.CountCall()
	if resources == nil {
		resources = []Resource{{Name: "*"}}
	}
	queries, err := expand(resources, true)
	if err != nil {
		return nil, err
	}
	cc := applyCallOptions(opts)
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		c.core.FailAll(len(queries))
		return nil, err
	}
	// answers holds, per query, the decisions it yields: one for a
	// specific pair, the covered pairs for a wildcard.
	// A specific pair's cache hit is held in hits, where the call reads it
	// again once its requests are done (listMissing).
	answers := make([][]Decision, len(queries))
	var missing []int
	var hits []Decision
	var hitAt []int
	for i, q := range queries {
		if s, ok := get(cl.Group, cl.ctxKey, q); ok {
			hits = append(hits, Decision{Resource: q.resource, Scope: q.scope, Status: s, Cached: true})
			hitAt = append(hitAt, i)
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) > 0 {
		if err := c.listMissing(ctx, &cl, queries, missing, answers, hits); err != nil {
			return nil, err
		}
	} else {
		c.core.Telemetry().CachedCall(ctx, "pep.ListGranted", len(queries), "listed")
	}
	for k, i := range hitAt {
		answers[i] = hits[k : k+1]
	}
	return listed(answers)
}

// listed merges every decision a ListGranted call holds for each pair (a
// pair named and covered by a wildcard, or covered by two, gets one from
// each answer) and lists, in the order of their first decision, the pairs
// that every one of their decisions grants: any DENY, ERROR or failure of
// a pair beats a GRANT of it, whichever answer is the newer, so a pair the
// gateway has just revoked is never listed from an answer sent before the
// revocation. The error is the Cause of the first decision that failed
// (not ErrNotEvaluated): a pair denied or left unevaluated by one answer
// and granted by another is left out without an error, since the gateway
// did decide it (the list is not incomplete), and failing closed, the
// client cannot tell the newer answer.
func listed(answers [][]Decision) ([]Permission, error) {
	var firstCause error
	denied := make(map[pair]bool)
	for _, ds := range answers {
		for _, d := range ds {
			if firstCause == nil && !errors.Is(d.Cause, ErrNotEvaluated) {
				firstCause = d.Cause
			}
			p := pair{resource: d.Resource, scope: d.Scope}
			denied[p] = denied[p] || !d.Allowed()
		}
	}
	var perms []Permission
	for _, ds := range answers {
		for _, d := range ds {
			p := pair{resource: d.Resource, scope: d.Scope}
			if no, ok := denied[p]; !ok || no {
				continue
			}
			delete(denied, p) // listed once
			perms = append(perms, Permission{Resource: d.Resource, Scope: d.Scope, Status: Grant})
		}
	}
	return perms, firstCause
}

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
// client's. A request context that JSON cannot carry as written is refused
// (requestContextJSON) before the token is looked at. It does not allocate (without a request context) and does not
// keep cl, which can stay on the stack.
func (c *Client) newCall(ctx context.Context, cc *callConfig, cl *call) error {
	cl.context, cl.noCache = noContext, cc.noCache
	if cc.reqCtx != nil {
		var err error
		if cl.context, err = requestContextJSON(cc.reqCtx); err != nil {
			return err
		}
		cl.ctxKey = contextKey(cl.context)
	}
	v := ctx.Value(tokenKey{})
	if v == nil {
		return c.core.Own(&cl.Call, cl.noCache)
	}
	tok, _ := v.(string)
	return c.core.PerCall(&cl.Call, tok, cl.noCache)
}
