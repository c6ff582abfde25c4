package pep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/events"
)

// maxParallelChunks bounds the gateway requests one call has in flight.
const maxParallelChunks = 4

// pair is one resource-scope pair. In ListGranted an empty scope stands for
// every scope of the resource and the resource "*" for every resource; such
// a pair is a wildcard and is never looked up in the cache.
type pair struct{ resource, scope string }

func (p pair) wildcard() bool { return p.scope == "" || p.resource == "*" }

// call is what one public call carries through its gateway requests.
type call struct {
	id      tokenIdent
	state   *tokenState // the client's token state, nil for a per-call token
	context string      // canonical request context (contextJSON)
	noCache bool
	gen     uint64 // cache generation when the call started
}

// newCall fills in cl for a call: its options and its token, the per-call
// one from WithToken, else the client's. It does not allocate (without a
// request context) and does not keep cl, which can stay on the stack.
func (c *Client) newCall(ctx context.Context, cc *callConfig, cl *call) error {
	*cl = call{context: noContext, noCache: cc.noCache, gen: c.cache.generation()}
	if cc.reqCtx != nil {
		cl.context = contextJSON(cc.reqCtx)
	}
	if v := ctx.Value(tokenKey{}); v != nil {
		tok, _ := v.(string)
		if tok == "" {
			return fmt.Errorf("%w: WithToken was given an empty token", ErrNoToken)
		}
		cl.id = tokenIdent{scheme: schemeBearer, token: tok}
		return nil
	}
	st := c.token.Load()
	if st == nil {
		return fmt.Errorf("%w: call SetToken or pass a token with WithToken", ErrNoToken)
	}
	cl.id, cl.state = st.id, st
	return nil
}

// credential returns what attaches the call's token to a request.
func (cl *call) credential() (credential, error) {
	if !validToken(cl.id.token) {
		return nil, fmt.Errorf("%w: the token holds characters an HTTP header cannot carry", ErrNoToken)
	}
	if cl.state == nil {
		return newBearer(cl.id.token), nil
	}
	if err := cl.state.cred.usable(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	return cl.state.cred, nil
}

// Check asks whether the token may use scope on resource. The decision is
// Allowed only for an explicit GRANT from the gateway (or a cached one).
//
// Failing closed: when the gateway is unreachable, times out, answers 5xx
// after retries, 400, 403, a redirect or an unusable body, or when the
// circuit breaker is open, Check returns a DENY whose Cause says why, and a
// nil error. It returns an error only for an empty resource or scope, a
// missing token (ErrNoToken; nothing is sent), and a 401 (a *ResponseError
// matching ErrUnauthorized; the token's cached decisions are purged and,
// for the client's own token, tokenExpired is emitted once). The decision is
// DENY whenever the error is not nil.
//
// A cached answer is returned without a request and without allocating.
func (c *Client) Check(ctx context.Context, resource, scope string, opts ...CallOption) (Decision, error) {
	c.calls.Add(1)
	d := Decision{Resource: resource, Scope: scope}
	if resource == "" || scope == "" {
		return c.refuse(d, errors.New("pep: Check needs a resource and a scope"))
	}
	var cc callConfig
	if len(opts) > 0 {
		cc = applyCallOptions(opts)
	}
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		return c.refuse(d, err)
	}
	if !cl.noCache {
		if s, ok := c.cache.get(cacheKey{id: cl.id, resource: resource, scope: scope, context: cl.context}); ok {
			d.Status, d.Cached = s, true
			return d, nil
		}
	}
	miss := cl // only the miss path moves the call to the heap
	ds := []Decision{d}
	err := c.decide(ctx, &miss, ds, []int{0})
	return ds[0], err
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
// of Check; in addition an empty resources slice, an empty resource name or
// a resource without scopes is an error and sends nothing.
func (c *Client) CheckMany(ctx context.Context, resources []Resource, opts ...CallOption) (Result, error) {
	c.calls.Add(1)
	if len(resources) == 0 {
		return Result{Status: Deny}, errors.New("pep: CheckMany needs at least one resource")
	}
	pairs, err := expand(resources, false)
	if err != nil {
		return Result{Status: Deny}, err
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

// expand turns resources into unique pairs in request order. With wildcards
// (ListGranted), a resource without scopes becomes one wildcard pair.
func expand(resources []Resource, wildcards bool) ([]pair, error) {
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
	for i, r := range resources {
		if r.Name == "" {
			return nil, fmt.Errorf("pep: resource %d has no name", i)
		}
		if len(r.Scopes) == 0 {
			if !wildcards {
				return nil, fmt.Errorf("pep: resource %q has no scopes", r.Name)
			}
			add(pair{resource: r.Name})
			continue
		}
		for _, s := range r.Scopes {
			if s == "" {
				return nil, fmt.Errorf("pep: resource %q has an empty scope", r.Name)
			}
			add(pair{resource: r.Name, scope: s})
		}
	}
	return pairs, nil
}

// lookup answers the pairs the cache holds and returns the indexes of the
// others. Wildcard pairs are never looked up.
func (c *Client) lookup(cl *call, pairs []pair, ds []Decision) (missing []int) {
	for i, p := range pairs {
		if !cl.noCache && !p.wildcard() {
			if s, ok := c.cache.get(cacheKey{id: cl.id, resource: p.resource, scope: p.scope, context: cl.context}); ok {
				ds[i].Status, ds[i].Cached = s, true
				continue
			}
		}
		missing = append(missing, i)
	}
	return missing
}

// decide asks the gateway for ds[i] of every i in missing and fills them in.
// On a 401 every decision of the call becomes a DENY carrying the error,
// cached ones included, since the token behind them was just refused.
func (c *Client) decide(ctx context.Context, cl *call, ds []Decision, missing []int) error {
	answers, err := c.ask(ctx, cl, ds, missing)
	if err == nil {
		for k, i := range missing {
			ds[i] = answers[k][0]
		}
	}
	return c.settle(cl, ds, err)
}

// settle counts and logs the fail-closed decisions of a call. When err (a
// 401 or an unusable token) is set, every decision becomes a DENY carrying
// it and a refused token is handled. It runs on the caller's goroutine after
// every request of the call has ended, so events are emitted with no lock
// held.
func (c *Client) settle(cl *call, ds []Decision, err error) error {
	if err != nil {
		var refusal *ResponseError
		if asRefusal(err, &refusal) {
			c.refused(cl, refusal)
		}
		c.failAll(ds, err)
		return err
	}
	var failed int
	var first error
	for _, d := range ds {
		if d.Cause != nil {
			failed++
			first = cmpOr(first, d.Cause)
		}
	}
	if failed > 0 {
		c.failClosed.Add(uint64(failed))
		c.logger.Warn("pep: failing closed", "pairs", failed, "cause", first.Error())
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (c *Client) failAll(ds []Decision, err error) {
	for i := range ds {
		ds[i].Status, ds[i].Cached, ds[i].Cause = Deny, false, err
	}
	c.failClosed.Add(uint64(len(ds)))
}

// refused handles a 401 for the call's token: its cached decisions go, and
// the first refusal of the client's own token emits tokenExpired.
//
// A DPoP nonce challenge that was still refused after its one retry is not a
// verdict on the token: it is returned to the caller but purges nothing and
// emits nothing.
func (c *Client) refused(cl *call, err *ResponseError) {
	if isNonceChallenge(err.Challenge) {
		return
	}
	c.cache.purge(cl.id)
	if cl.state != nil && cl.state.expired.CompareAndSwap(false, true) {
		c.emit(events.TokenExpired, cl.id.scheme, err)
	}
}

// ask sends the pairs ds[missing] to the gateway in chunks and returns, per
// missing pair, the gateway's answers (see matchAnswers) or fail-closed
// decisions. A non-nil error is a 401 or a token that cannot be sent; the
// answers are then nil.
func (c *Client) ask(ctx context.Context, cl *call, ds []Decision, missing []int) ([][]Decision, error) {
	cred, err := cl.credential()
	if err != nil {
		return nil, err
	}
	patient := cannotEnd(ctx)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	pairs := make([]pair, len(missing))
	for k, i := range missing {
		pairs[k] = pair{resource: ds[i].Resource, scope: ds[i].Scope}
	}
	var chunks [][]pair
	for start := 0; start < len(pairs); start += c.batchSize {
		chunks = append(chunks, pairs[start:min(start+c.batchSize, len(pairs))])
	}
	results := make([]*chunkResult, len(chunks))
	if len(chunks) == 1 {
		results[0] = c.runChunk(ctx, cl, cred, chunks[0], patient)
	} else {
		var g errgroup.Group
		g.SetLimit(maxParallelChunks)
		for k, ch := range chunks {
			g.Go(func() error {
				results[k] = c.runChunk(ctx, cl, cred, ch, patient)
				return nil
			})
		}
		_ = g.Wait() // the chunks report failures as data, never as errors
	}

	answers := make([][]Decision, 0, len(pairs))
	for _, r := range results {
		if errors.Is(r.err, ErrUnauthorized) {
			return nil, r.err
		}
		if r.err != nil {
			for _, p := range r.pairs {
				answers = append(answers, []Decision{{Resource: p.resource, Scope: p.scope, Status: Deny, Cause: r.err}})
			}
			continue
		}
		answers = append(answers, r.answers...)
	}
	return answers, nil
}

// chunkResult is the outcome of one gateway request; it may be shared by
// coalesced callers and is never modified after it is made.
type chunkResult struct {
	pairs   []pair
	answers [][]Decision // per pair, see matchAnswers; nil when err is set
	err     error        // the Cause of every pair of a failed request
}

// runChunk gets the answer for one chunk, sharing the gateway request of an
// identical concurrent one (same token, pairs and context). A caller whose
// own context ends stops waiting at once and fails closed; the shared
// request goes on, bounded by the deadline of the call that started it, and
// its answer is cached for later calls.
//
// The shared request runs under the deadline of the caller that started
// it. A caller that joined it and is told of a timeout while its own
// context is still live starts a request of its own, once, so that every
// caller is bounded by its own deadline rather than by another's.
//
// A patient caller, whose context cannot end (see cannotEnd), is bounded by
// the client's timeout alone, so no shared request can outlast it: it has
// no reason to stop waiting early. It waits in singleflight's Do, which
// sends a request it starts on its own goroutine, rather than in DoChan,
// which starts a goroutine per request so that its caller can leave.
func (c *Client) runChunk(ctx context.Context, cl *call, cred credential, pairs []pair, patient bool) *chunkResult {
	if err := ctx.Err(); err != nil { // nothing is started for a caller who left
		return &chunkResult{pairs: pairs, err: unavailable(err)}
	}
	body := authorizeBody(c.clientID, pairs, cl.context)
	key := flightKey(cl.id, body)
	for joinedTimedOut := false; ; joinedTimedOut = true {
		started := false
		run := func() (any, error) {
			started = true
			if patient { // its caller waits for it to end: ctx outlives it
				return c.flight(ctx, cl, cred, pairs, body), nil
			}
			growStack(0) // run is on a new goroutine of singleflight's
			fctx, cancel := detach(ctx)
			defer cancel()
			return c.flight(fctx, cl, cred, pairs, body), nil
		}
		var res *chunkResult
		if patient {
			if c.flightWait != nil { // just before joining: Do has no later moment
				c.flightWait()
			}
			v, _, _ := c.flights.Do(key, run)
			res = v.(*chunkResult)
		} else {
			ch := c.flights.DoChan(key, run)
			if c.flightWait != nil {
				c.flightWait()
			}
			select {
			case r := <-ch:
				res = r.Val.(*chunkResult)
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					// If this caller started the request, it shares this
					// deadline and is about to fail: let later callers
					// start afresh instead of joining it.
					c.flights.Forget(key)
				}
				return &chunkResult{pairs: pairs, err: unavailable(ctx.Err())}
			}
		}
		if started { // read after the request ended: no race
			return res
		}
		c.coalesced.Add(1)
		if joinedTimedOut || ctx.Err() != nil || !errors.Is(res.err, context.DeadlineExceeded) {
			return res
		}
	}
}

// cannotEnd reports whether ctx can never be cancelled nor expire, as
// context.Background and context.WithoutCancel: it has no Done channel and
// no deadline.
func cannotEnd(ctx context.Context) bool {
	_, hasDeadline := ctx.Deadline()
	return ctx.Done() == nil && !hasDeadline
}

// growStack gives the calling goroutine, in one step while its stack is
// still shallow, the stack a gateway request needs (under 16 KiB through
// net/http). A goroutine starts with a small stack, which the runtime
// doubles by copying whenever a call needs more; a new flight goroutine
// would otherwise grow three times deep inside net/http, each copy walking
// every frame, which costs about 3 us per request. Its 8 KiB frame is read
// at a runtime index (always 0) so that the compiler keeps it.
//
//go:noinline
func growStack(i int) byte {
	var frame [8 << 10]byte
	return frame[i]
}

// detach returns a context that keeps ctx's values and deadline but not its
// cancellation, so that a request shared by several callers is not failed
// by one of them giving up.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, _ := ctx.Deadline() // ask always sets one
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// flight performs one shared gateway request under ctx: the starting
// call's context, detached from its cancellation unless that caller waits
// for the request to end whatever happens (see runChunk).
func (c *Client) flight(ctx context.Context, cl *call, cred credential, pairs []pair, body []byte) *chunkResult {
	data, err := c.exchange(ctx, cred, c.authorizeURL, body)
	if err != nil {
		return &chunkResult{pairs: pairs, err: err}
	}
	answers, err := matchAnswers(pairs, data, cl.id.token)
	if err != nil {
		return &chunkResult{pairs: pairs, err: err}
	}
	c.cache.store(cl.gen, cl.id, cl.context, answers)
	return &chunkResult{pairs: pairs, answers: answers}
}

// ListGranted returns the pairs the gateway grants, in request order (pairs
// listed for a wildcard in the gateway's order), without duplicates. A
// resource without scopes asks for every scope defined on it, the resource
// name "*" for every resource of the client, and nil resources for every
// permission of the client. Specific pairs are answered from the cache when
// possible; answers for wildcards are cached as pairs for later Checks.
//
// ListGranted fails closed like CheckMany: a pair that could not be decided
// is not listed. Then, unlike CheckMany, it also returns an error (the Cause
// of the first such pair) together with the permissions it could confirm,
// since an incomplete list cannot be told from a short one. A 401 or a
// missing token return no permissions and the error.
func (c *Client) ListGranted(ctx context.Context, resources []Resource, opts ...CallOption) ([]Permission, error) {
	c.calls.Add(1)
	if len(resources) == 0 {
		resources = []Resource{{Name: "*"}}
	}
	pairs, err := expand(resources, true)
	if err != nil {
		return nil, err
	}
	cc := applyCallOptions(opts)
	var cl call
	if err := c.newCall(ctx, &cc, &cl); err != nil {
		c.failClosed.Add(uint64(len(pairs)))
		return nil, err
	}
	ds := make([]Decision, len(pairs))
	for i, p := range pairs {
		ds[i] = Decision{Resource: p.resource, Scope: p.scope}
	}
	missing := c.lookup(&cl, pairs, ds)
	answers := make([][]Decision, len(pairs))
	for i := range ds {
		answers[i] = ds[i : i+1]
	}
	if len(missing) > 0 {
		got, err := c.ask(ctx, &cl, ds, missing)
		if err == nil {
			for k, i := range missing {
				answers[i] = got[k]
			}
		}
		var flat []Decision
		for _, as := range answers {
			flat = append(flat, as...)
		}
		if err := c.settle(&cl, flat, err); err != nil {
			return nil, err
		}
	}

	var perms []Permission
	var firstCause error
	seen := make(map[pair]struct{})
	for _, as := range answers {
		for _, d := range as {
			firstCause = cmpOr(firstCause, d.Cause)
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

// exchange sends one POST to the gateway, passing the circuit breaker and
// reporting the outcome to it, and returns the body of a 200 answer. Other
// outcomes are errors that serve as fail-closed Causes: ErrCircuitOpen,
// ErrUnavailable for transport failures and timeouts, and *ResponseError
// for other statuses and over-long bodies.
func (c *Client) exchange(ctx context.Context, cred credential, url string, body []byte) ([]byte, error) {
	ok, probe := c.breaker.allow()
	if !ok {
		return nil, ErrCircuitOpen
	}
	data, o, err := c.send(ctx, cred, url, body)
	c.breaker.done(probe, o)
	return data, err
}

func (c *Client) send(ctx context.Context, cred credential, url string, body []byte) ([]byte, outcome, error) {
	req, err := newPost(withCallState(ctx, &callState{cred: cred}), url, body)
	if err != nil {
		return nil, outcomeNeutral, err
	}
	// Boxing the log line's values costs allocations even when the logger
	// discards it, so they are made only for a logger that wants them.
	debug := c.logger.Enabled(ctx, slog.LevelDebug)
	var start time.Time
	if debug {
		start = time.Now()
	}
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		var credErr *credentialError
		if errors.As(err, &credErr) {
			return nil, outcomeNeutral, credErr
		}
		c.logger.Debug("pep: gateway request failed", "url", url, "error", err.Error())
		return nil, outcomeFailure, unavailable(err)
	}
	defer resp.Body.Close()
	data, err := readBody(resp.Body, resp.ContentLength)
	if debug {
		c.logger.Debug("pep: gateway answered", "url", url, "status", resp.StatusCode, "duration", time.Since(start))
	}
	if err != nil {
		return nil, outcomeFailure, unavailable(fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		re := responseError(resp, data, cred.ident().token)
		if resp.StatusCode >= 500 {
			return nil, outcomeFailure, re
		}
		return nil, outcomeSuccess, re
	}
	return data, outcomeSuccess, nil
}
