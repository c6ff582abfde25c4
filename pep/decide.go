package pep

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// A call that the cache could not answer whole is decided here: its missing
// pairs are asked in chunks (ask), each chunk shared with identical
// concurrent ones (runChunk, coalesce.go) and sent through the breaker and
// the transport (fetch, exchange.go); each pair's decision is read from its
// own entry of the answer (answer.go); then the call is settled: failures
// counted and logged, a refused token handled.

// decide asks the gateway for ds[i] of every i in missing and fills each in
// from the answer's entries for exactly that pair. On a refused token every
// decision of the call becomes a DENY carrying the error, cached ones
// included, since the token behind them was just refused.
func (c *Client) decide(ctx context.Context, op string, cl *call, ds []Decision, missing []int) (err error) {
	ctx, span := c.tel.StartCall(ctx, op, len(ds), len(ds)-len(missing))
	defer func() { c.tel.EndCall(span, outcomeOf(ds), err) }()
	ctx, cancel := c.bound(ctx, cl)
	defer cancel()
	queries := make([]pair, len(missing))
	for k, i := range missing {
		queries[k] = pair{resource: ds[i].Resource, scope: ds[i].Scope}
	}
	// Each chunk's pairs are decided on its own goroutine as soon as its
	// answer arrives, while later chunks are still on the wire; a refused
	// token then overrides every decision (settle).
	err = c.ask(ctx, cl, queries, func(k int, o *chunkOutcome) {
		ds[missing[k]] = decideFrom(o, queries[k])
	})
	return c.settle(ctx, cl, ds, err)
}

// chunkOutcome is the outcome of one gateway request: the answer, or the
// error that is the Cause of every pair of the request. It may be shared by
// coalesced callers and is never modified once made.
type chunkOutcome = transport.Outcome[*answer]

// decideFrom returns the decision for exactly the pair p.
func decideFrom(o *chunkOutcome, p pair) Decision {
	if o.Err != nil {
		return Decision{Resource: p.resource, Scope: p.scope, Status: Deny, Cause: o.Err}
	}
	return o.Value.decide(p)
}

// ask sends queries to the gateway in chunks of the batch size, several at
// a time, and hands each query's chunk outcome to got(k, outcome) on the
// chunk's goroutine (got is called once per query, for different k at
// once). A non-nil error is one that concerns the whole call rather than
// the gateway's health: a refused token or proof (401) or a token that
// cannot be sent; then got may not have been called for every query. ctx
// must carry the call's deadline (bound).
func (c *Client) ask(ctx context.Context, cl *call, queries []pair, got func(k int, o *chunkOutcome)) error {
	cred, err := cl.credential(c.maxToken)
	if err != nil {
		return err
	}
	if len(queries) <= c.batchSize { // one chunk, on the caller's goroutine
		o := c.runChunk(ctx, cl, cred, queries)
		for k := range queries {
			got(k, o)
		}
		return refusal(o)
	}
	outs := make([]*chunkOutcome, (len(queries)+c.batchSize-1)/c.batchSize)
	var g errgroup.Group
	g.SetLimit(maxParallelChunks)
	for start := 0; start < len(queries); start += c.batchSize {
		g.Go(func() error {
			end := min(start+c.batchSize, len(queries))
			o := c.runChunk(ctx, cl, cred, queries[start:end])
			outs[start/c.batchSize] = o
			for k := start; k < end; k++ {
				got(k, o)
			}
			return nil
		})
	}
	_ = g.Wait() // chunks report failures as outcomes, never as errors
	for _, o := range outs {
		if err := refusal(o); err != nil {
			return err
		}
	}
	return nil
}

// refusal returns the error of an outcome that concerns the whole call
// rather than the gateway's health: a refused token or proof (401).
func refusal(o *chunkOutcome) error {
	if errors.Is(o.Err, ErrUnauthorized) || errors.Is(o.Err, ErrProofRejected) {
		return o.Err
	}
	return nil
}

// runChunk gets the outcome for one chunk, sharing the gateway request of an
// identical concurrent one (same token and body; see flights).
func (c *Client) runChunk(ctx context.Context, cl *call, cred credential, queries []pair) *chunkOutcome {
	if err := transport.Late(ctx); err != nil { // nothing is started for a caller who left or is out of time
		return &chunkOutcome{Err: unavailable(err)}
	}
	body := authorizeBody(c.clientID, queries, cl.context)
	out, shared := c.flights.Do(ctx, gateway, flightKey{id: cl.id, own: cl.state, body: string(body)}, func() *chunkOutcome {
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
		return &chunkOutcome{Err: err}
	}
	ans, err := decodeAnswer(data, queries)
	if err != nil {
		return &chunkOutcome{Err: err}
	}
	c.cache.store(w, cl, ans)
	return &chunkOutcome{Value: ans}
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
	for _, d := range ds {
		c.tally(d)
	}
	return nil
}

// countFailed counts and logs the decisions among ds that failed closed.
// A failure that looks like a configuration mistake (the gateway answered
// 400 or 404: a client it does not know, a route it does not have) is
// logged at Error, once per distinct cause, since every later call repeats
// it; the others at Warn. ERROR answers are the gateway's, not failures:
// they are logged at Debug.
func (c *Client) countFailed(ds []Decision) {
	var failed, unevaluated int
	var first error
	for _, d := range ds {
		switch {
		case d.Cause == nil:
		case errors.Is(d.Cause, ErrNotEvaluated):
			unevaluated++
		default:
			failed++
			if first == nil {
				first = d.Cause
			}
		}
	}
	if unevaluated > 0 {
		c.logger.Debug("pep: the gateway could not evaluate pairs: their resource or scope is not defined on the client", "pairs", unevaluated)
	}
	if failed == 0 {
		return
	}
	c.failClosed.Add(uint64(failed))
	var re *ResponseError
	if errors.As(first, &re) && (re.StatusCode == http.StatusBadRequest || re.StatusCode == http.StatusNotFound) {
		c.logOnce(first)
		return
	}
	c.logger.Warn("pep: failing closed", "pairs", failed, "cause", first.Error())
}

// logOnce logs a configuration-shaped cause at Error the first time it is
// seen. The set of causes seen is bounded; when it fills, it starts over.
func (c *Client) logOnce(cause error) {
	text := cause.Error()
	c.seenMu.Lock()
	_, seen := c.seen[text]
	if !seen {
		if c.seen == nil || len(c.seen) >= maxSeenCauses {
			c.seen = make(map[string]struct{})
		}
		c.seen[text] = struct{}{}
	}
	c.seenMu.Unlock()
	if !seen {
		c.logger.Error("pep: the gateway refuses this client's requests; check the gateway URL, realm and client ID (Client.Verify says which)", "cause", text)
	}
}

// maxSeenCauses bounds the configuration-shaped causes logOnce remembers.
const maxSeenCauses = 64

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
	if transport.NonceOwed(re) {
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
		c.enqueue(events.TokenExpired, cl.id.Scheme, re)
	}
	c.tokenMu.Unlock()
	if current {
		c.emitter.Deliver(ctx)
	}
}

// listMissing asks the gateway for queries[i] of every i in missing and
// sets answers[i].
func (c *Client) listMissing(ctx context.Context, cl *call, queries []pair, missing []int, answers [][]Decision) (err error) {
	ctx, span := c.tel.StartCall(ctx, "pep.ListGranted", len(queries), len(queries)-len(missing))
	defer func() { c.tel.EndCall(span, "listed", err) }()
	ctx, cancel := c.bound(ctx, cl)
	defer cancel()
	asked := make([]pair, len(missing))
	for k, i := range missing {
		asked[k] = queries[i]
	}
	outs := make([]*chunkOutcome, len(asked))
	err = c.ask(ctx, cl, asked, func(k int, o *chunkOutcome) { outs[k] = o })
	if err != nil {
		_ = c.settle(ctx, cl, nil, err)
		c.failClosed.Add(uint64(len(missing)))
		return err
	}
	for k, i := range missing {
		q, o := asked[k], outs[k]
		switch {
		case !q.wildcard() || o.Err != nil:
			answers[i] = []Decision{decideFrom(o, q)}
		default:
			answers[i] = o.Value.covered(q)
		}
		c.countFailed(answers[i])
		for _, d := range answers[i] {
			c.tally(d)
		}
	}
	return nil
}

// exchange sends one POST to the gateway through the client's Exchanger
// (breaker, retries, credential, transport) and returns the body of a 200
// answer, or the fail-closed Cause.
func (c *Client) exchange(ctx context.Context, cl *call, cred credential, url string, body []byte) ([]byte, error) {
	return c.x.Post(ctx, cred, url, body, nil, cl.ownDeadline)
}
