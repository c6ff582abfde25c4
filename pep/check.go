package pep

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/events"
)

// maxParallelChunks bounds the gateway requests one call has in flight.
const maxParallelChunks = 4

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
	c.calls.Add(1)
	d := Decision{Resource: resource, Scope: scope}
	if err := checkPair(resource, scope); err != nil {
		return c.refuse(d, err)
	}
	var cc callConfig
	if len(opts) > 0 {
		cc = applyCallOptions(opts)
	}
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		return c.refuse(d, err)
	}
	if s, ok := c.cache.get(&cl, pair{resource: resource, scope: scope}); ok {
		d.Status, d.Cached = s, true
		return d, nil
	}
	miss := cl // only the miss path moves the call to the heap
	ds := []Decision{d}
	err := c.decide(ctx, &miss, ds, []int{0})
	return ds[0], err
}

// checkPair refuses what Check and CheckMany never send: an empty name and
// the wildcard resource, whose answer lists other pairs (rule 8).
func checkPair(resource, scope string) error {
	switch {
	case resource == "" || scope == "":
		return fmt.Errorf("%w: a check needs a resource and a scope", ErrInvalidArgument)
	case resource == "*":
		return fmt.Errorf("%w: the resource \"*\" stands for every resource; only ListGranted may ask for it", ErrInvalidArgument)
	}
	return nil
}

func (c *Client) refuse(d Decision, err error) (Decision, error) {
	d.Status, d.Cause = Deny, err
	c.failClosed.Add(1)
	return d, err
}

// CheckMany asks for every scope of every resource and returns one decision
// per pair, in request order with duplicates removed. Cached pairs are
// answered locally; the others are sent in requests of at most the batch
// size (WithBatchSize), several at a time. A failed request fails closed for
// its own pairs only. The rules for errors and fail-closed denials are those
// of Check; in addition an empty resources slice or a resource without
// scopes is refused (ErrInvalidArgument) and sends nothing.
func (c *Client) CheckMany(ctx context.Context, resources []Resource, opts ...CallOption) (Result, error) {
	c.calls.Add(1)
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
	missing := c.lookup(&cl, pairs, ds)
	if len(missing) > 0 {
		err = c.decide(ctx, &cl, ds, missing)
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
	seen := make(map[pair]struct{}, n)
	add := func(p pair) {
		if _, dup := seen[p]; !dup {
			seen[p] = struct{}{}
			pairs = append(pairs, p)
		}
	}
	var errs []error
	for i, r := range resources {
		switch {
		case r.Name == "":
			errs = append(errs, fmt.Errorf("resource %d has no name", i))
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
			add(pair{resource: r.Name, scope: s})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return pairs, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return pairs, nil
}

// lookup answers the pairs the cache holds and returns the indexes of the
// others.
func (c *Client) lookup(cl *call, pairs []pair, ds []Decision) (missing []int) {
	for i, p := range pairs {
		if s, ok := c.cache.get(cl, p); ok {
			ds[i].Status, ds[i].Cached = s, true
			continue
		}
		missing = append(missing, i)
	}
	return missing
}

// decide asks the gateway for ds[i] of every i in missing and fills each in
// from the answer's entries for exactly that pair. On a refused token every
// decision of the call becomes a DENY carrying the error, cached ones
// included, since the token behind them was just refused.
func (c *Client) decide(ctx context.Context, cl *call, ds []Decision, missing []int) error {
	ctx, cancel := c.bound(ctx, cl)
	defer cancel()
	queries := make([]pair, len(missing))
	for k, i := range missing {
		queries[k] = pair{resource: ds[i].Resource, scope: ds[i].Scope}
	}
	outs, err := c.ask(ctx, cl, queries)
	if err == nil {
		for k, i := range missing {
			ds[i] = outs[k].decide(queries[k])
		}
	}
	return c.settle(ctx, cl, ds, err)
}

// chunkOutcome is the outcome of one gateway request: the answer, or the
// error that is the Cause of every pair of the request. It may be shared by
// coalesced callers and is never modified once made.
type chunkOutcome struct {
	ans *answer
	err error
	// leaderGone marks a failure caused by the context of the caller that
	// sent the request ending, not by the gateway.
	leaderGone bool
}

// decide returns the decision for exactly the pair p.
func (o *chunkOutcome) decide(p pair) Decision {
	if o.err != nil {
		return Decision{Resource: p.resource, Scope: p.scope, Status: Deny, Cause: o.err}
	}
	return o.ans.decide(p)
}

// ask sends queries to the gateway in chunks of the batch size, several at
// a time, and returns each query's chunk outcome. A non-nil error is one
// that concerns the whole call rather than the gateway's health: a refused
// token or proof (401) or a token that cannot be sent. ctx must carry the
// call's deadline (bound).
func (c *Client) ask(ctx context.Context, cl *call, queries []pair) ([]*chunkOutcome, error) {
	cred, err := cl.credential()
	if err != nil {
		return nil, err
	}
	outs := make([]*chunkOutcome, len(queries))
	run := func(start int) {
		end := min(start+c.batchSize, len(queries))
		o := c.runChunk(ctx, cl, cred, queries[start:end])
		for i := start; i < end; i++ {
			outs[i] = o
		}
	}
	if len(queries) <= c.batchSize {
		run(0)
	} else {
		var g errgroup.Group
		g.SetLimit(maxParallelChunks)
		for start := 0; start < len(queries); start += c.batchSize {
			g.Go(func() error { run(start); return nil })
		}
		_ = g.Wait() // chunks report failures as outcomes, never as errors
	}
	for _, o := range outs {
		if errors.Is(o.err, ErrUnauthorized) || errors.Is(o.err, ErrProofRejected) {
			return nil, o.err
		}
	}
	return outs, nil
}

// runChunk gets the outcome for one chunk, sharing the gateway request of an
// identical concurrent one (same token and body; see flights).
func (c *Client) runChunk(ctx context.Context, cl *call, cred credential, queries []pair) *chunkOutcome {
	if err := ctx.Err(); err != nil { // nothing is started for a caller who left
		return &chunkOutcome{err: unavailable(err)}
	}
	body := authorizeBody(c.clientID, queries, cl.context)
	out, shared := c.flights.do(ctx, flightKey(cl.id, body), func() *chunkOutcome {
		return c.fetch(ctx, cl, cred, queries, body)
	})
	if shared {
		c.coalesced.Add(1)
	}
	return out
}

// fetch sends one authorize request and reads its answer, storing the
// gateway's decisions in the cache unless the token's entries are purged
// while the request is under way.
func (c *Client) fetch(ctx context.Context, cl *call, cred credential, queries []pair, body []byte) *chunkOutcome {
	w := c.cache.writer(cl)
	if w != nil {
		defer w.Close()
	}
	data, err := c.exchange(ctx, cl, cred, c.authorizeURL, body)
	if err != nil {
		return &chunkOutcome{err: err}
	}
	ans, err := decodeAnswer(data, queries)
	if err != nil {
		return &chunkOutcome{err: err}
	}
	c.cache.store(w, cl, ans)
	return &chunkOutcome{ans: ans}
}

// settle counts and logs the fail-closed decisions of a call. When err (a
// refused token or proof, or an unusable token) is set, every decision
// becomes a DENY carrying it, and a refused token is handled. It runs on the
// caller's goroutine after every request of the call has ended.
func (c *Client) settle(ctx context.Context, cl *call, ds []Decision, err error) error {
	if err != nil {
		c.refused(ctx, cl, err)
		c.failAll(ds, err)
		return err
	}
	c.countFailed(ds)
	return nil
}

// countFailed counts and logs the fail-closed decisions among ds.
func (c *Client) countFailed(ds []Decision) {
	var failed int
	var first error
	for _, d := range ds {
		if d.Cause != nil {
			failed++
			if first == nil {
				first = d.Cause
			}
		}
	}
	if failed > 0 {
		c.failClosed.Add(uint64(failed))
		c.logger.Warn("pep: failing closed", "pairs", failed, "cause", first.Error())
	}
}

func (c *Client) failAll(ds []Decision, err error) {
	for i := range ds {
		ds[i].Status, ds[i].Cached, ds[i].Cause = Deny, false, err
	}
	c.failClosed.Add(uint64(len(ds)))
}

// refused handles a 401 for the call's token: its cached decisions go and,
// if it is still the client's own current token, tokenExpired is emitted
// once. A 401 that blames the DPoP proof (rule 9), or a DPoP nonce challenge
// that was still refused after its one resend, is no verdict on the token:
// it purges nothing and emits nothing. Delivery of the event is bounded by
// ctx, the call's deadline.
func (c *Client) refused(ctx context.Context, cl *call, err error) {
	var re *ResponseError
	if !errors.As(err, &re) || !errors.Is(re, ErrUnauthorized) {
		return
	}
	if re.dpop == dpopNonceOwed {
		return
	}
	c.cache.purge(cl.id)
	if cl.state == nil {
		return // a per-call token: the client's own token is unaffected
	}
	c.tokenMu.Lock()
	current := c.token.Load() == cl.state && !cl.state.expired
	if current {
		cl.state.expired = true
		c.enqueue(events.TokenExpired, cl.id.scheme, re)
	}
	c.tokenMu.Unlock()
	if current {
		c.emitter.Deliver(ctx)
	}
}

// ListGranted returns the pairs the gateway grants, in request order (pairs
// listed for a wildcard in the gateway's order), without duplicates. A
// resource without scopes asks for every scope defined on it, the resource
// name "*" for every resource of the client, and nil resources for every
// permission of the client. Specific pairs are answered from the cache when
// possible; answers for wildcards are cached as pairs for later Checks.
// Every listed pair is decided like a Check of it: by the answer's one
// entry for exactly that pair.
//
// An answer may make the client keep at most 10,000 distinct pairs; a
// longer listing is refused as malformed, so that a hostile gateway cannot
// make one call cost more than its answer's size.
//
// ListGranted fails closed like CheckMany: a pair that could not be decided
// is not listed. Then, unlike CheckMany, it also returns an error (the Cause
// of the first such pair) together with the permissions it could confirm,
// since an incomplete list cannot be told from a short one. A 401 or a
// missing token return no permissions and the error.
func (c *Client) ListGranted(ctx context.Context, resources []Resource, opts ...CallOption) ([]Permission, error) {
	c.calls.Add(1)
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
		c.failClosed.Add(uint64(len(queries)))
		return nil, err
	}
	// answers holds, per query, the decisions it yields: one for a
	// specific pair, the covered pairs for a wildcard.
	answers := make([][]Decision, len(queries))
	var missing []int
	for i, q := range queries {
		if s, ok := c.cache.get(&cl, q); ok {
			answers[i] = []Decision{{Resource: q.resource, Scope: q.scope, Status: s, Cached: true}}
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) > 0 {
		if err := c.listMissing(ctx, &cl, queries, missing, answers); err != nil {
			return nil, err
		}
	}

	var perms []Permission
	var firstCause error
	seen := make(map[pair]struct{})
	for _, ds := range answers {
		for _, d := range ds {
			if firstCause == nil {
				firstCause = d.Cause
			}
			p := pair{resource: d.Resource, scope: d.Scope}
			if _, dup := seen[p]; dup || !d.Allowed() {
				continue
			}
			seen[p] = struct{}{}
			perms = append(perms, Permission{Resource: d.Resource, Scope: d.Scope, Status: Grant})
		}
	}
	return perms, firstCause
}

// listMissing asks the gateway for queries[i] of every i in missing and
// sets answers[i].
func (c *Client) listMissing(ctx context.Context, cl *call, queries []pair, missing []int, answers [][]Decision) error {
	ctx, cancel := c.bound(ctx, cl)
	defer cancel()
	asked := make([]pair, len(missing))
	for k, i := range missing {
		asked[k] = queries[i]
	}
	outs, err := c.ask(ctx, cl, asked)
	if err != nil {
		_ = c.settle(ctx, cl, nil, err)
		c.failClosed.Add(uint64(len(missing)))
		return err
	}
	for k, i := range missing {
		q, o := asked[k], outs[k]
		switch {
		case !q.wildcard() || o.err != nil:
			answers[i] = []Decision{o.decide(q)}
		default:
			answers[i] = o.ans.covered(q)
		}
		c.countFailed(answers[i])
	}
	return nil
}
