package authzen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// CallOption changes one Evaluate or Evaluations call.
type CallOption interface {
	applyCall(*callConfig)
}

type callConfig struct {
	semantic Semantic
	noCache  bool
}

type callOption func(*callConfig)

func (f callOption) applyCall(c *callConfig) { f(c) }

// WithSemantic sets the evaluations_semantic of an Evaluations call
// (default ExecuteAll). Under DenyOnFirstDeny and PermitOnFirstPermit the
// cache is not read (the PDP's order matters), only written.
func WithSemantic(s Semantic) CallOption { return callOption(func(c *callConfig) { c.semantic = s }) }

// NoCache makes one call ask the PDP even for cached evaluations (the
// cache is not read). The fresh answers still replace what the cache holds
// for their evaluations, as every answer does: a decision without a
// response context or error is stored for later calls, and any other (a
// denial with reasons, an item's error) removes the older entry, so that
// a later call never gets an older decision than the one this call got.
// A call of several requests does read, before it returns, what the cache
// then holds for each permit it was answered before its last wait, as
// every call does (its own answer, or a newer one: a denial there
// replaces the permit); so does one under a semantic.
func NoCache() CallOption { return callOption(func(c *callConfig) { c.noCache = true }) }

// Evaluate asks the PDP's Access Evaluation API whether req's subject may
// perform its action on its resource. The decision is Allowed only for a
// "decision": true that the PDP returned for this request in a 200 answer
// read completely and strictly, with no error in its context (or a cached
// one).
//
// Failing closed: when the PDP is unreachable, times out, answers 5xx
// after retries, 400, 403, 404, a redirect or an unusable body, when its
// metadata cannot be read, or when the circuit breaker is open, Evaluate
// returns a denial whose Cause says why, and a nil error. It returns an
// error, with a denial, only for a request it refuses to send
// (ErrInvalidArgument), no usable credential (ErrNoToken) and a 401 (a
// *ResponseError matching ErrUnauthorized or ErrProofRejected).
func (c *Client) Evaluate(ctx context.Context, req Request, opts ...CallOption) (Decision, error) {
	ds, err := c.evaluate(ctx, "evaluation", Request{}, []Request{req}, opts)
	return ds[0], err
}

// Evaluations asks the PDP's Access Evaluations API for every item, each
// completed from defaults (an item's zero Subject, Action or Resource and
// nil Context are the defaults'), and returns one decision per item, in
// order. Cached items are answered locally (ExecuteAll only); the others
// are sent in requests of at most the batch size (WithBatchSize), several
// at a time under ExecuteAll and one after the other otherwise, so that
// the batch stops where the semantic says. A cached decision is good as of
// the call's return: once the requests are done the cached items are read
// again, and an item whose entry expired or was purged meanwhile is asked
// of the PDP (denied with the Cause of a late call past the deadline).
//
// Each item's decision is read from the answer's entry at its own
// position. An answer with more entries than asked, or fewer when the
// semantic does not allow it (under DenyOnFirstDeny the last entry must be
// a denial, under PermitOnFirstPermit a permit), denies every item of its
// request with a Cause; items the PDP did not reach are denied with
// ErrNotEvaluated. The error rules are Evaluate's; an empty items slice is
// refused.
func (c *Client) Evaluations(ctx context.Context, defaults Request, items []Request, opts ...CallOption) ([]Decision, error) {
	return c.evaluate(ctx, "evaluations", defaults, items, opts)
}

// evaluation is one item on its way: its merged form's key and JSON, and
// its wire form as sent in a batch (partial, relative to the defaults).
type evaluation struct {
	key  string
	body []byte // the merged request, for the Access Evaluation API
	wire wireRequest
}

// evaluate is Evaluate and Evaluations (api names the PDP's API): the
// call's span around decide.
func (c *Client) evaluate(ctx context.Context, api string, defaults Request, reqs []Request, opts []CallOption) (ds []Decision, err error) {
	c.core.CountCall()
	var cc callConfig
	for _, o := range opts {
		if o != nil {
			o.applyCall(&cc)
		}
	}
	name := "authzen.Evaluate"
	if api == "evaluations" {
		name = "authzen.Evaluations"
	}
	tel := c.core.Telemetry()
	ctx, span := tel.StartCall(ctx, name, len(reqs), 0)
	cached := 0
	defer func() {
		if span.IsRecording() {
			tel.Count(span, len(reqs), cached)
			if api == "evaluations" {
				span.SetAttributes(attrSemantic.String(cc.semantic.String()))
			}
		}
		tel.EndCall(span, outcomeOf(ds), err)
	}()
	ds, cached, err = c.decide(ctx, api, defaults, reqs, cc)
	return ds, err
}

// decide returns a decision per item, and how many came from the cache.
// Under a semantic other than ExecuteAll the cache is not read: the PDP's
// order matters.
func (c *Client) decide(ctx context.Context, api string, defaults Request, reqs []Request, cc callConfig) ([]Decision, int, error) {
	ds := make([]Decision, max(len(reqs), 1))
	evs, err := prepare(defaults, reqs, cc.semantic)
	if err != nil {
		return c.failAll(ds, err), 0, err
	}
	var cl core.Call
	if err := c.core.Own(&cl, cc.noCache || cc.semantic != ExecuteAll); err != nil {
		return c.failAll(ds, err), 0, err
	}
	cred, err := c.core.Credential(&cl)
	if err != nil {
		return c.failAll(ds, err), 0, err
	}
	var missing, hits []int
	for i, ev := range evs {
		if allowed, ok := core.Get(cl.Group, ev.key); ok {
			ds[i] = Decision{allowed: allowed, Cached: true}
			hits = append(hits, i)
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) > 0 {
		ctx, cancel := c.core.Bound(ctx, &cl)
		defer cancel()
		if err := c.ask(ctx, api, &cl, cred, defaults, cc.semantic, evs, missing, ds, nil); err != nil {
			return c.failAll(ds, err), 0, err
		}
		// What the call read before its last wait, its hits and its
		// answers' permits, is good only as of the call's return: each is
		// kept while the cache serves it, and asked again otherwise
		// (core.Reconfirm; a-client14b F1, a-fix15b F2). A call of one
		// request and no hit read everything at its only wait: it has
		// nothing to check again.
		if len(hits) > 0 || len(missing) > c.core.BatchSize() {
			err = c.reconfirm(ctx, api, &cl, cred, defaults, cc.semantic, evs, ds)
		}
		if err != nil {
			return c.failAll(ds, err), 0, err
		}
	}
	cached := 0
	var t core.Tally
	for _, d := range ds {
		t.Add(verdict(d), d.Cause)
		if d.Cached {
			cached++
		}
	}
	c.core.Record(&t)
	return ds, cached, nil
}

// reconfirm checks again every permit of ds read before the call's last
// wait, a hit (Cached) or an answer's, by the check every permit passes
// before it leaves the client (core.Confirm): what the cache holds for its
// key now, the newest decision the client had, holds (a denial there
// replaces a permit), and nothing there, whatever the reason (evicted,
// expired, purged, a newer denial with reasons the cache forgets), means
// it is asked again. The cache is read through the client's own
// credential's entries (core.Regroup), for a call that does not read the
// cache (NoCache, a semantic other than ExecuteAll) too, which stores its
// answers as any call does. A permit asked again is held the same way
// when the cache could store it on arrival (a permit without reasons, its
// request's answer storable: core.Send), and otherwise while the call's
// deadline has not passed (core.InTime); one that no longer holds fails
// closed (core's WaitedOut). A denial or a failure permits nothing and is
// not checked.
func (c *Client) reconfirm(ctx context.Context, api string, cl *core.Call, cred transport.Credential, defaults Request, s Semantic, evs []evaluation, ds []Decision) error {
	read := make([]int, 0, len(ds))
	for i := range ds {
		if ds[i].Cached || ds[i].Allowed() {
			read = append(read, i)
		}
	}
	if len(read) == 0 {
		return nil
	}
	g := c.core.Regroup(cl) // the client's own credential's: pinned
	storable := make([]bool, len(ds))
	return core.Reconfirm(read, func(i int, again bool) bool {
		if !ds[i].Cached && !ds[i].Allowed() {
			return true // asked again and denied, or failed: permits nothing
		}
		if again && !storable[i] {
			return c.core.InTime(ctx, cl)
		}
		allowed, ok := core.Confirm(g, evs[i].key)
		if ok && !allowed {
			ds[i] = Decision{Cached: true} // the cache's newer denial
		}
		return ok
	}, func(stale []int) error {
		return c.ask(ctx, api, cl, cred, defaults, s, evs, stale, ds, storable)
	}, func(i int) {
		ds[i] = Decision{Cause: c.core.WaitedOut()}
	})
}

// verdict is what a decision amounts to for the counters: an item the PDP
// did not reach (ErrNotEvaluated) is not a failure.
func verdict(d Decision) core.Verdict {
	switch {
	case errors.Is(d.Cause, ErrNotEvaluated):
		return core.Errored
	case d.Cause != nil:
		return core.FailedClosed
	case d.allowed:
		return core.Allowed
	}
	return core.Denied
}

// prepare checks every item, completed from the defaults, and encodes it.
func prepare(defaults Request, reqs []Request, s Semantic) ([]evaluation, error) {
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: at least one item is needed", ErrInvalidArgument)
	}
	if s > PermitOnFirstPermit {
		return nil, fmt.Errorf("%w: unknown evaluation semantic %d", ErrInvalidArgument, s)
	}
	// The defaults go on the wire of a batch as they are, even where every
	// item replaces them.
	if err := wireOf(defaults).checkAt("defaults."); err != nil {
		return nil, err
	}
	evs := make([]evaluation, len(reqs))
	var errs []error
	for i, r := range reqs {
		m := merge(defaults, r)
		if m.Subject.Type == "" || m.Subject.ID == "" || m.Action.Name == "" || m.Resource.Type == "" || m.Resource.ID == "" {
			errs = append(errs, fmt.Errorf("item %d lacks a subject type or id, an action name or a resource type or id", i))
			continue
		}
		if len(reqs) > 1 {
			// Named as the item's field, which the caller wrote.
			if err := wireOf(r).checkAt("item " + strconv.Itoa(i) + ": "); err != nil {
				return nil, err
			}
		}
		body, err := encode(wireOf(m))
		if err != nil {
			return nil, err
		}
		evs[i] = evaluation{key: cacheKey(body), body: body, wire: wireOf(r)}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return evs, nil
}

// merge completes r from defaults, as the PDP does with what r puts on
// the wire: a part r leaves out (see the present methods, which wireOf
// asks too) is the default's. The cache key is made of the result, so the
// two must agree on what is left out, an empty map included.
func merge(defaults, r Request) Request {
	if !r.Subject.present() {
		r.Subject = defaults.Subject
	}
	if !r.Action.present() {
		r.Action = defaults.Action
	}
	if !r.Resource.present() {
		r.Resource = defaults.Resource
	}
	if len(r.Context) == 0 {
		r.Context = defaults.Context
	}
	return r
}

func (c *Client) failAll(ds []Decision, err error) []Decision {
	for i := range ds {
		ds[i] = Decision{Cause: err}
	}
	c.core.FailAll(len(ds))
	return ds
}

// ask sends the missing items in chunks and fills in their decisions. The
// error is one that concerns the whole call: a refused credential (401).
//
// storable, when not nil, gets for each decided item whether the cache
// could store its permit on arrival (fill).
func (c *Client) ask(ctx context.Context, api string, cl *core.Call, cred transport.Credential, defaults Request, s Semantic, evs []evaluation, missing []int, ds []Decision, storable []bool) error {
	ep, err := c.resolveEndpoints(ctx)
	url := ""
	if err == nil {
		url = ep.Evaluations
		if api == "evaluation" {
			url = ep.Evaluation
		}
		if url == "" {
			err = fmt.Errorf("%w: it names no %s endpoint", ErrDiscovery, api)
		}
	}
	if err != nil {
		for _, i := range missing {
			ds[i] = Decision{Cause: err}
		}
		return nil
	}
	if api == "evaluation" {
		out := c.send(ctx, cl, cred, url, evs[0].body, []string{evs[0].key}, ExecuteAll, true)
		return fill(out, missing, ds, storable)
	}
	// Items after the one that ended the batch under s are not sent.
	for _, i := range missing {
		ds[i] = Decision{Cause: ErrNotEvaluated}
	}
	return c.core.Batches(len(missing), s != ExecuteAll, func(start, end int) (bool, error) {
		chunk := missing[start:end]
		b := wireBatch{wireRequest: wireOf(defaults), Evaluations: make([]wireRequest, len(chunk))}
		if s != ExecuteAll {
			b.Options = &wireOptions{Semantic: s.String()}
		}
		keys := make([]string, len(chunk))
		for j, i := range chunk {
			b.Evaluations[j], keys[j] = evs[i].wire, evs[i].key
		}
		out := &outcome{}
		if body, err := encode(b); err != nil {
			out.Err = err
		} else {
			out = c.send(ctx, cl, cred, url, body, keys, s, false)
		}
		if err := fill(out, chunk, ds, storable); err != nil {
			return true, err
		}
		return out.Err != nil || out.stopped, nil
	})
}

// fill sets the decisions of the items at idx from their request's
// outcome, each from the answer's entry at its own position, and, when
// storable is not nil, storable[i]: whether the cache could store the
// item's permit on arrival (the request's answer storable, the decision
// one store keeps).
func fill(out *outcome, idx []int, ds []Decision, storable []bool) error {
	if out.Err != nil {
		if core.Refusal(out.Err) {
			return out.Err
		}
		for _, i := range idx {
			ds[i] = Decision{Cause: out.Err}
		}
		return nil
	}
	for k, i := range idx {
		kept := false
		if k < len(out.Value) {
			ds[i] = decisionOf(out.Value[k])
			kept = out.storable && keeps(out.Value[k])
		} else {
			ds[i] = Decision{Cause: ErrNotEvaluated}
		}
		if storable != nil {
			storable[i] = kept
		}
	}
	return nil
}

func decisionOf(it item) Decision {
	return Decision{allowed: it.allowed && it.err == nil, Cause: it.err, Context: it.context}
}

// send posts one request, shared with identical concurrent ones (same
// credential, endpoint and body; core.Send), reads its answer strictly
// and, when the request was its own, stores what it says of each
// evaluated item under keys (store).
func (c *Client) send(ctx context.Context, cl *core.Call, cred transport.Credential, url string, body []byte, keys []string, s Semantic, single bool) *outcome {
	data, storable, w, err := c.core.Send(ctx, cl, cred, url, body, http.Header{"X-Request-Id": {newRequestID()}})
	defer w.Close()
	if err != nil {
		return &outcome{Err: err}
	}
	var items []item
	if single {
		var it item
		it, err = decodeEvaluation(data)
		items = []item{it}
	} else {
		items, err = decodeEvaluations(data, len(keys))
	}
	out := &outcome{storable: storable}
	for k, it := range items {
		// The batch ends at its first stopping item, whatever the PDP says
		// of the items after it: they were not evaluated, so they are
		// neither returned nor cached.
		if err == nil && s.stops(decisionOf(it).Allowed()) {
			items, out.stopped = items[:k+1], true
			break
		}
	}
	if err == nil && len(items) < len(keys) && !out.stopped {
		err = pdp.Malformed("the answer has %d evaluations for %d asked", len(items), len(keys))
	}
	if err != nil {
		return &outcome{Err: err}
	}
	store(w, keys, items)
	out.Value = items
	return out
}

// store replaces what the cache holds for every item the PDP's answer
// decided (items[k] is the answer for keys[k]): a decision without a
// response context or error is kept; any other (a denial with reasons, an
// item's error) is not, and removes the older entry of its key, so that
// no older decision is served in place of the PDP's newer one. It is the
// only step that writes an answer to the cache. Keys the answer did not
// reach (after the item that stopped the batch) are not answered and keep
// what they hold.
func store(w *core.Writer, keys []string, items []item) {
	w.Used()
	for k, it := range items {
		if keeps(it) {
			w.Add(keys[k], it.allowed)
		} else {
			w.Forget(keys[k])
		}
	}
}

// keeps reports whether store keeps the decision of it: one without a
// response context or error.
func keeps(it item) bool {
	return it.err == nil && len(it.context) == 0
}

// outcome is the outcome of one PDP request: its items, or the error that
// is the Cause of every item of the request; stopped reports that an item
// ended the batch under its semantic (Semantic.stops).
type outcome struct {
	Value   []item
	Err     error
	stopped bool
	// storable reports whether the cache could store a permit of the
	// answer on arrival (core.Send).
	storable bool
}

// newRequestID returns a random X-Request-ID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
