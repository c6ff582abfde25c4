package pep

import (
	"context"
	"errors"
	"slices"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// A call that the cache could not answer whole is decided here: its missing
// pairs are asked in chunks of the batch size (ask), each chunk shared with
// identical concurrent ones and sent through the breaker and the transport
// (internal/core's Send, which also handles a refused token as its answer
// comes); each pair's decision is read from its own entry of the answer
// (answer.go); then the call is settled: decisions counted and failures
// logged, and its decisions summed up (overall, outcomeOf).

// decide asks the gateway for ds[i] of every i in missing and fills each in
// from the answer's entries for exactly that pair, then checks again what
// the call read before its last wait (reconfirm). On a refused token every
// decision of the call becomes a DENY carrying the error, cached ones
// included, since the token behind them was just refused.
func (c *Client) decide(ctx context.Context, op string, cl *call, ds []Decision, missing []int) (err error) {
	tel := c.core.Telemetry()
	ctx, span := tel.StartCall(ctx, op, len(ds), len(ds)-len(missing))
	defer func() { tel.EndCall(span, outcomeOf(ds), err) }()
	ctx, cancel := c.core.Bound(ctx, &cl.Call)
	defer cancel()
	queries := make([]pair, len(missing))
	for k, i := range missing {
		queries[k] = pair{resource: ds[i].Resource, scope: ds[i].Scope}
	}
	// Each chunk's pairs are decided on its own goroutine as soon as its
	// answer arrives, while later chunks are still on the wire; a refused
	// token then overrides every decision (settle).
	err = c.ask(ctx, cl, queries, func(k int, o chunkOutcome) {
		ds[missing[k]] = decideFrom(o, queries[k])
	})
	// A call of one request and no hit read everything at its only wait:
	// it has nothing to check again.
	if err == nil && (len(missing) < len(ds) || len(missing) > c.core.BatchSize()) {
		err = c.reconfirm(ctx, cl, ds)
	}
	return c.settle(ds, err)
}

// reconfirm checks again, once the call's requests are done, every
// GRANT of ds the call read before its last wait (core.Reconfirm), its
// hits (Cached) and its answers' GRANTs alike: each is kept only while the
// cache serves it now (core.Confirm, confirm; a DENY there, a newer
// answer, replaces it), and nothing there, whatever the reason, means it
// is asked again. The call's token's entries are read as they are now
// (core.Regroup), for a NoCache call too, which stores its answers as any
// call does. A GRANT asked again is held the same way when the cache
// could store it on arrival (chunkOutcome.Storable, a cacheable pair),
// and otherwise while the call's deadline has not passed (core.InTime);
// one that no longer holds fails closed with core's WaitedOut. A decision
// asked again is the gateway's (Cached false), or fails closed with the
// Cause of its request (a call out of time: the deadline of ctx). A DENY
// or a failure of an answer is not checked: it grants nothing.
func (c *Client) reconfirm(ctx context.Context, cl *call, ds []Decision) error {
	read := make([]int, 0, len(ds))
	for i := range ds {
		if ds[i].Cached || ds[i].Status == Grant && ds[i].Cause == nil {
			read = append(read, i)
		}
	}
	if len(read) == 0 {
		return nil
	}
	var g *core.Group
	regrouped := false
	var storable map[int]bool // of the decisions asked again
	return core.Reconfirm(read, func(i int, again bool) bool {
		d := &ds[i]
		if !d.Cached && (d.Status != Grant || d.Cause != nil) {
			return true // asked again and denied, or failed: grants nothing
		}
		if again && !storable[i] {
			return c.core.InTime(ctx, &cl.Call)
		}
		if !regrouped { // once per round: a re-ask may have made the token's group
			g, regrouped = c.core.Regroup(&cl.Call), true
		}
		s, ok := confirm(g, cl.ctxKey, pair{resource: d.Resource, scope: d.Scope})
		if ok && s != d.Status {
			d.Status, d.Cached = s, true // the cache's newer verdict
		}
		return ok
	}, func(stale []int) error {
		regrouped = false
		queries := make([]pair, len(stale))
		for k, i := range stale {
			queries[k] = pair{resource: ds[i].Resource, scope: ds[i].Scope}
		}
		kept := make([]bool, len(stale))
		err := c.ask(ctx, cl, queries, func(k int, o chunkOutcome) {
			ds[stale[k]] = decideFrom(o, queries[k])
			kept[k] = o.Storable && cacheablePair(queries[k])
		})
		// On this goroutine, once every chunk has ended.
		if storable == nil {
			storable = make(map[int]bool, len(stale))
		}
		for k, i := range stale {
			storable[i] = kept[k]
		}
		return err
	}, func(i int) {
		ds[i] = Decision{Resource: ds[i].Resource, Scope: ds[i].Scope, Status: Deny, Cause: c.core.WaitedOut()}
	})
}

// chunkOutcome is the outcome of one gateway request: the answer, or the
// error that is the Cause of every pair of the request. The answer is never
// modified once made.
type chunkOutcome struct {
	Value *answer
	Err   error
	// Storable reports whether the cache could store a GRANT of Value on
	// arrival (core.Send).
	Storable bool
}

// decideFrom returns the decision for exactly the pair p.
func decideFrom(o chunkOutcome, p pair) Decision {
	if o.Err != nil {
		return Decision{Resource: p.resource, Scope: p.scope, Status: Deny, Cause: o.Err}
	}
	return o.Value.decide(p)
}

// ask sends queries to the gateway in chunks of the batch size, several at
// a time, and hands each query's chunk outcome to got(k, outcome) on the
// chunk's goroutine (got is called once per query, for different k at
// once). A non-nil error is one that concerns the whole call rather than
// the gateway's health: a refused token or proof (401), the first in the
// order of the queries, or a token that cannot be sent; then got may not
// have been called for every query. ctx must carry the call's deadline.
func (c *Client) ask(ctx context.Context, cl *call, queries []pair, got func(k int, o chunkOutcome)) error {
	cred, err := c.core.Credential(&cl.Call)
	if err != nil {
		return err
	}
	// One chunk, on the caller's goroutine, without core.Batches, whose
	// callback would climb back into pep on every uncached Check
	// (scripts/checkpath counts the climbs).
	if len(queries) <= c.core.BatchSize() {
		o := c.runChunk(ctx, cl, cred, queries)
		for k := range queries {
			got(k, o)
		}
		if core.Refusal(o.Err) {
			return o.Err
		}
		return nil
	}
	return c.core.Batches(len(queries), false, func(start, end int) (bool, error) {
		o := c.runChunk(ctx, cl, cred, queries[start:end])
		for k := start; k < end; k++ {
			got(k, o)
		}
		if core.Refusal(o.Err) {
			return false, o.Err
		}
		return false, nil
	})
}

// runChunk gets the outcome for one chunk, sharing the gateway request of
// an identical concurrent one (core.Send), and caches the gateway's
// decisions when the request was its own.
func (c *Client) runChunk(ctx context.Context, cl *call, cred transport.Credential, queries []pair) chunkOutcome {
	body := authorizeBody(c.clientID, queries, cl.context)
	var data []byte
	var storable bool
	var w *core.Writer
	var err error
	if slices.ContainsFunc(queries, pair.wildcard) {
		// Its answer may no longer list a pair the cache holds under a
		// key its wildcards cover.
		data, storable, w, err = c.core.SendWide(ctx, &cl.Call, cred, c.authorizeURL, body, nil, wildcardsCover(queries, cl.ctxKey))
	} else {
		data, storable, w, err = c.core.Send(ctx, &cl.Call, cred, c.authorizeURL, body, nil)
	}
	defer w.Close()
	if err != nil {
		return chunkOutcome{Err: err}
	}
	a, err := decodeAnswer(data, queries)
	if err != nil {
		return chunkOutcome{Err: err}
	}
	store(w, cl, a)
	return chunkOutcome{Value: a, Storable: storable}
}

// askWideFirst is ask for ListGranted's queries, setting outs[k] to the
// outcome of queries[k]: when they mix wildcards and named pairs, the
// wildcards are asked first, and the named pairs once their requests have
// ended. A wildcard's request drops the token's cached decisions of the
// pairs it covers as it is sent (core.SendWide), so that a named pair it
// covers whose answer was stored, or in flight, before it would be gone
// when the call checks it again (reconfirm), and asked twice (a-fix15b
// F3); asked after it, they are stored after the drop. The call waits for
// two rounds of requests then, as it did for the re-ask.
func (c *Client) askWideFirst(ctx context.Context, cl *call, queries []pair, outs []chunkOutcome) error {
	var wide, named []int
	for k, q := range queries {
		if q.wildcard() {
			wide = append(wide, k)
		} else {
			named = append(named, k)
		}
	}
	if len(wide) == 0 || len(named) == 0 || len(queries) <= c.core.BatchSize() {
		return c.ask(ctx, cl, queries, func(k int, o chunkOutcome) { outs[k] = o })
	}
	for _, idx := range [][]int{wide, named} {
		part := make([]pair, len(idx))
		for j, k := range idx {
			part[j] = queries[k]
		}
		if err := c.ask(ctx, cl, part, func(j int, o chunkOutcome) { outs[idx[j]] = o }); err != nil {
			return err
		}
	}
	return nil
}

// settle counts the decisions of a call and logs its failures. When err (a
// refused token or proof, or an unusable token) is set, every decision
// becomes a DENY carrying it (a refused token was handled when its answer
// came: core's post). It runs on the caller's goroutine after every request
// of the call has ended.
func (c *Client) settle(ds []Decision, err error) error {
	if err != nil {
		c.failAll(ds, err)
		return err
	}
	c.record(ds)
	return nil
}

// record counts decisions by verdict and logs those that failed closed
// (core.Record). ERROR answers are the gateway's, not failures: they are
// logged at Debug.
func (c *Client) record(dss ...[]Decision) {
	var t core.Tally
	unevaluated := 0
	for _, ds := range dss {
		for _, d := range ds {
			v := verdict(d)
			if v == core.Errored {
				unevaluated++
			}
			t.Add(v, d.Cause)
		}
	}
	if unevaluated > 0 {
		c.core.Logger().Debug("pep: the gateway could not evaluate pairs: their resource or scope is not defined on the client", "pairs", unevaluated)
	}
	c.core.Record(&t)
}

// verdict is what a decision amounts to for the counters.
func verdict(d Decision) core.Verdict {
	switch {
	case d.Cause != nil && !errors.Is(d.Cause, ErrNotEvaluated):
		return core.FailedClosed
	case d.Status == Grant:
		return core.Allowed
	case d.Status == Error:
		return core.Errored
	}
	return core.Denied
}

// overall computes Result.Status from per-pair decisions (fail-closed rule 6).
func overall(ds []Decision) Status {
	if len(ds) == 0 {
		return Deny
	}
	sawError := false
	for _, d := range ds {
		switch {
		case d.Status == Error:
			sawError = true
		case d.Status != Grant || d.Cause != nil:
			return Deny
		}
	}
	if sawError {
		return Error
	}
	return Grant
}

// outcomeOf names the outcome of a call's decisions for its span: the
// overall status, or fail_closed when any pair failed closed.
func outcomeOf(ds []Decision) string {
	for _, d := range ds {
		if d.Cause != nil && !errors.Is(d.Cause, ErrNotEvaluated) {
			return "fail_closed"
		}
	}
	switch overall(ds) {
	case Grant:
		return "grant"
	case Error:
		return "error"
	}
	return "deny"
}

func (c *Client) failAll(ds []Decision, err error) {
	for i := range ds {
		ds[i].Status, ds[i].Cached, ds[i].Cause = Deny, false, err
	}
	c.core.FailAll(len(ds))
}

// listMissing asks the gateway for queries[i] of every i in missing and
// sets answers[i]; then it checks again what the call read before its
// last wait, its cache hits and its answers' GRANTs (reconfirm), each of
// which it may replace by the gateway's answer.
func (c *Client) listMissing(ctx context.Context, cl *call, queries []pair, missing []int, answers [][]Decision, hits []Decision) (err error) {
	tel := c.core.Telemetry()
	ctx, span := tel.StartCall(ctx, "pep.ListGranted", len(queries), len(queries)-len(missing))
	defer func() { tel.EndCall(span, "listed", err) }()
	ctx, cancel := c.core.Bound(ctx, &cl.Call)
	defer cancel()
	asked := make([]pair, len(missing))
	for k, i := range missing {
		asked[k] = queries[i]
	}
	outs := make([]chunkOutcome, len(asked))
	if err := c.askWideFirst(ctx, cl, asked, outs); err != nil {
		_ = c.settle(nil, err)
		c.core.FailAll(len(missing))
		return err
	}
	// read holds every decision of the call, the hits first, then each
	// answer's; reconfirm checks it.
	read := append(make([]Decision, 0, len(hits)+len(missing)), hits...)
	for k, i := range missing {
		q, o := asked[k], outs[k]
		switch {
		case !q.wildcard() || o.Err != nil:
			answers[i] = []Decision{decideFrom(o, q)}
		default:
			answers[i] = o.Value.covered(q)
		}
		read = append(read, answers[i]...)
	}
	if len(hits) > 0 || len(missing) > c.core.BatchSize() {
		if err := c.reconfirm(ctx, cl, read); err != nil {
			_ = c.settle(nil, err)
			c.core.FailAll(len(missing))
			return err
		}
	}
	copy(hits, read)
	fresh := make([][]Decision, 0, len(missing)+len(hits))
	at := len(hits)
	for _, i := range missing {
		answers[i] = read[at : at+len(answers[i])]
		at += len(answers[i])
		fresh = append(fresh, answers[i])
	}
	for _, d := range hits {
		if !d.Cached { // asked again: counted as the call's other answers are
			fresh = append(fresh, []Decision{d})
		}
	}
	c.record(fresh...)
	return nil
}
