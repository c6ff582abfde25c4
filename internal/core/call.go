package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// Call is what one public call carries on its way to the server: its
// token, the cache entries it reads and whose deadline it has. A client
// fills one in with Own or PerCall, usually on its stack.
type Call struct {
	// ID is the call's token.
	ID transport.Ident
	// Token is the client's token state the call uses; nil for a
	// per-call token.
	Token *Token
	// Group reads the token's cached decisions; nil reads nothing (no
	// cache, NoCache, or a token too long to cache).
	Group *Group
	// Own is set (Bound) when the call's deadline is the client's
	// timeout rather than an earlier one of the caller's: only then does
	// running out of time say something about the server (the breaker's
	// concern).
	Own bool
	// epoch is the count of purges of every token when the call began
	// (Own, PerCall): the call shares only requests of callers that began
	// after the same purges (flightKey). A purge of one token retires that
	// token's flights instead (Flights.Retire).
	epoch uint64
	// fresh is set for a call that reads no cached decision (NoCache): it
	// joins no request sent before it began, whose answer may be older
	// than one the client has had since.
	fresh bool
	// bound is when Bound gave the call its deadline, on the client's
	// clock (InTime).
	bound time.Time
}

// Own fills cl in with the client's own token; with noCache it reads no
// cached decision. It fails with ErrClosed after Close and with ErrNoToken
// without a token. It does not allocate on success.
func (c *Core) Own(cl *Call, noCache bool) error {
	if c.x.Closed() {
		return c.who.Peer.Err(transport.ErrClosed)
	}
	st := c.token.Load()
	if st == nil {
		return fmt.Errorf("%w: %s", c.who.Peer.Err(transport.ErrNoToken), c.who.NoToken)
	}
	cl.ID, cl.Token, cl.epoch, cl.fresh = st.id, st, c.purges.Load(), noCache
	if !noCache {
		cl.Group = st.group // nil when the token's entries are not cached
	}
	return nil
}

// PerCall fills cl in with a per-call Bearer token (pep's WithToken);
// with noCache it reads no cached decision. It fails with ErrClosed after
// Close and with ErrNoToken for an empty token; the token is otherwise
// checked when it is about to be sent (Credential).
func (c *Core) PerCall(cl *Call, token string, noCache bool) error {
	switch {
	case c.x.Closed():
		return c.who.Peer.Err(transport.ErrClosed)
	case token == "":
		return fmt.Errorf("%w: WithToken was given an empty token", c.who.Peer.Err(transport.ErrNoToken))
	}
	cl.ID = transport.Ident{Scheme: transport.SchemeBearer, Token: token}
	cl.epoch, cl.fresh = c.purges.Load(), noCache
	if !noCache {
		cl.Group = c.cache.lookup(cl.ID)
	}
	return nil
}

// Credential returns what attaches the call's token to a request, or why
// the token cannot be sent (ErrNoToken): characters an HTTP header cannot
// carry, more than WithMaxTokenBytes, a DPoP token without a signer.
func (c *Core) Credential(cl *Call) (transport.Credential, error) {
	if cl.Token == nil { // a per-call token, checked on each call
		if err := c.who.Peer.CheckToken(cl.ID.Token, c.maxToken); err != nil {
			return nil, err
		}
		return transport.NewBearer(cl.ID.Token), nil
	}
	if cl.Token.unusable != nil {
		return nil, cl.Token.unusable
	}
	if err := cl.Token.cred.Usable(); err != nil {
		return nil, fmt.Errorf("%w: %w", c.who.Peer.Err(transport.ErrNoToken), err)
	}
	return cl.Token.cred, nil
}

// Bound returns ctx limited by the client's timeout, and records in cl
// whether that timeout, not the caller's own deadline, is the call's, and
// when it began, on the client's clock (InTime).
func (c *Core) Bound(ctx context.Context, cl *Call) (context.Context, context.CancelFunc) {
	deadline, has := ctx.Deadline()
	cl.Own = !has || time.Until(deadline) >= c.timeout
	cl.bound = c.now()
	return context.WithTimeout(ctx, c.timeout)
}

// post sends one POST of body to url for the call, with cred, through the
// breaker, retries and transport (transport.Exchanger.Post), and returns
// the body of a 200 answer or the fail-closed Cause. ctx must carry the
// call's deadline (Bound).
//
// It is the only way a request that carries a credential leaves the
// client (Send, SendWide and Exchange go through it), and every error of
// it goes through the one 401 handler, refused: so no call, whatever it
// is for, can be told its token was refused without the token's cached
// decisions going and tokenExpired being emitted (once per token). A
// shared request's refusal is handled once, by the caller that sent it,
// for every caller sharing it: they all sent the same token of the same
// client token state (flightKey).
//
// The answer is handled once it is settled, whatever the user code that
// runs after it in Post does (the request span's end, a log line, the
// body's Close): the 401 handler runs in a defer, on the answer Post
// settled before that code ran, so that a panic there (recovered by the
// caller's middleware) never leaves a refused token's cached GRANTs
// served.
func (c *Core) post(ctx context.Context, cl *Call, cred transport.Credential, url string, body []byte, header http.Header) ([]byte, error) {
	if r := c.replicas; r != nil {
		r.posted(1)
		defer r.posted(-1) // after the 401 is handled: Close waits for its purge
	}
	var answer error
	defer func() {
		switch {
		case transport.UnusedAnswer(answer):
			// A 200 read but not used (late, cut short): newer than what
			// the cache holds of the token, and unknown.
			c.cache.purge(cl.ID)
		case answer != nil:
			c.refused(ctx, cl, answer)
		}
	}()
	return c.x.Post(ctx, cred, url, body, header, cl.Own, &answer)
}

// Late returns the Cause of a call out of time (transport.Late), said by
// the client, or nil while it has time.
func (c *Core) Late(ctx context.Context) error {
	if err := transport.Late(ctx); err != nil {
		return c.who.Peer.Unavailable(err)
	}
	return nil
}

// flightKey identifies identical requests: the full token and the client's
// token state that holds it (nil for a per-call token), so that a call
// whose token was replaced under it never decides a call made after the
// change, nor one with a per-call token of the same string; the count of
// purges when the call began, so that a call that began after a purge
// (of any token: here, from another replica, after the channel came back)
// never gets the answer of a request sent before it; then the URL and the
// exact body. identity is the digest of the token's identity, by which a
// retirement of any spelling of the token retires its flights (retire,
// purgeIdentity), whether or not its decisions are cached; digest is the
// token's own digest on the invalidation channel (zero without one), by
// which the purge of a replica of an earlier version does (purgeDigest).
// Being the token's, they split no requests id does not.
type flightKey struct {
	id               transport.Ident
	own              *Token
	epoch            uint64
	identity, digest flightDigest
	url, body        string
}

// flightDigest is the first half of a digest, which is what a flight's
// key carries of it: a map keeps a key of up to 128 bytes in its own
// slots, and a longer one in an allocation of its own, one per request.
// Two tokens whose digests began alike would only retire each other's
// flights (a request sent again), never share one (the key holds id).
type flightDigest [digestBytes / 2]byte

func flightOf(d [digestBytes]byte) flightDigest { return flightDigest(d[:]) }

// Send posts body to url for the call (post), unless an identical request
// is in flight, whose answer it then shares (Flights); a caller out of time
// sends nothing. It returns the body of a 200 answer, or the call's
// fail-closed Cause. The caller whose request it was, not one that shared
// it, also gets the writer of the request's decisions, made just before the
// request was sent (so that their TTL counts from then, and that a purge
// of the token meanwhile fences them): it stores what it decodes through w
// and closes it. w is nil for a caller that shared, and when the token's
// decisions are not cached; its methods are safe on nil.
//
// storable reports whether the cache could store a GRANT of the answer on
// arrival, this caller's request's or the one it shared: the token's
// decisions are cached and the answer came before the allow TTL, counted
// from the send, ran out (Confirm). A pair the cache does not hold, or a
// decision the caller does not keep, is for the caller to leave out.
func (c *Core) Send(ctx context.Context, cl *Call, cred transport.Credential, url string, body []byte, header http.Header) (data []byte, storable bool, w *Writer, err error) {
	return c.send(ctx, cl, cred, url, body, header, nil)
}

// Wide is what a request asking about keys it does not name covers
// (SendWide): Covers reports whether it covers a key, and Name names the
// keys it covers: two Wides of one Name cover the same keys
// (cache.Writer.Drop).
type Wide struct {
	Name   string
	Covers func(key string) bool
}

// SendWide is Send for a request that asks about keys it does not name
// (pep's wildcards: every scope of a resource, every resource), which
// wide covers: its answer can leave out a key the cache holds
// an older verdict for, and nothing would then replace that verdict. So
// the request's writer, made before it is sent, drops the token's cached
// decisions under those keys and keeps every older request of the token
// from storing under them (Writer.Drop), and the answer's decisions are
// stored afresh through w; the token's other keys, and the requests
// bringing them, are left alone (a-hold16 F1: the whole token was
// dropped, so another call's answers about other resources, stored or in
// flight, were fenced and failed closed, and the call's own hits were
// asked again, F2). The token's requests in flight are no longer shared
// with later callers, whose calls may need an answer newer than the drop.
func (c *Core) SendWide(ctx context.Context, cl *Call, cred transport.Credential, url string, body []byte, header http.Header, wide Wide) (data []byte, storable bool, w *Writer, err error) {
	return c.send(ctx, cl, cred, url, body, header, &wide)
}

// sent is a 200 answer's body and whether the cache could store a GRANT
// of it on arrival (Send).
type sent struct {
	data     []byte
	storable bool
}

// send is Send, and SendWide when wide is set.
func (c *Core) send(ctx context.Context, cl *Call, cred transport.Credential, url string, body []byte, header http.Header, wide *Wide) (data []byte, storable bool, w *Writer, err error) {
	if err := c.Late(ctx); err != nil { // nothing is started for a caller who left or is out of time
		return nil, false, nil, err
	}
	key := flightKey{id: cl.ID, own: cl.Token, epoch: cl.epoch, url: url, body: string(body)}
	identity, digest := c.digestsOf(cl)
	key.identity, key.digest = flightOf(identity), flightOf(digest)
	answered := false
	out, shared := c.flights.Do(ctx, c.who.Peer, key, !cl.fresh, func() *Outcome[sent] {
		sentAt := c.now() // no later than the writer's: its TTL counts from it
		w = c.cache.writer(cl.ID)
		if wide != nil {
			c.flights.Retire(func(k flightKey) bool { return k.id == cl.ID })
			w.Drop(wide.Name, wide.Covers)
		}
		returned := false
		defer func() {
			if !returned { // a panic under the request: the writer must not hold its token's group for ever
				w.Close()
			}
		}()
		data, err := c.post(ctx, cl, cred, url, body, header)
		returned, answered = true, err == nil
		// A writer the token's purge fenced meanwhile counts as storable:
		// the cache then serves nothing of it, and it fails closed.
		storable := w != nil && c.now().Sub(sentAt) < c.grantTTL
		return &Outcome[sent]{Value: sent{data: data, storable: storable}, Err: err}
	})
	if shared {
		c.coalesced.Add(1)
	}
	if out.Err != nil {
		if answered && w != nil {
			// The server answered, but this caller, who was to store the
			// answer, left before taking it (its deadline passed at the
			// hand-over): callers that shared it are served it, and no
			// older decision of the token may be served after it. (An
			// answer read but not used was purged for in post.)
			c.purge(cl.ID)
		}
		w.Close()
		return nil, false, nil, out.Err
	}
	if w != nil {
		w.answered = true // closed unwritten, it purges (Writer)
	}
	return out.Value.data, out.Value.storable, w, nil
}

// digestsOf returns the digest of the identity of the call's token
// (identityDigest) and its own digest on the invalidation channel
// (tokenDigest; zero without an Invalidator), for its flights and its
// retirement. The client's own token's were made when it was set; a
// per-call token's are made here, on the way to the server.
func (c *Core) digestsOf(cl *Call) (identity, digest [digestBytes]byte) {
	if cl.Token != nil {
		return cl.Token.identity, cl.Token.digest
	}
	identity = identityDigest(cl.ID.Token)
	if c.replicas != nil {
		digest = tokenDigest(cl.ID.Token)
	}
	return identity, digest
}

// BatchSize returns the most items one request carries (WithBatchSize).
func (c *Core) BatchSize() int { return c.batch }

// MaxParallelChunks bounds the requests one call has in flight.
const MaxParallelChunks = transport.MaxParallelChunks

// Batches splits n items into chunks of the batch size (WithBatchSize) and
// runs run(start, end) for each. One chunk runs on the caller's goroutine;
// several run in parallel, at most MaxParallelChunks at a time, unless
// sequential is set: then they run in order until one reports stop or an
// error. run's error is one that concerns the whole call (a refused token,
// Refusal); Batches returns the first in the order of the chunks.
//
// A chunk's request runs user code (the RoundTripper of WithHTTPClient,
// the telemetry SDK, the logger). A panic on a chunk's goroutine, where
// nothing could recover it and the process would end, is recovered
// (safego): no chunk starts after it, the chunks under way end as they
// would (callers sharing a panicked chunk's request fail closed: Flights),
// and once they have, Batches raises the first panic again on the
// caller's goroutine, where it goes on as it does from a call of one
// chunk (the middleware and the gRPC interceptors recover it and refuse
// the request).
func (c *Core) Batches(n int, sequential bool, run func(start, end int) (stop bool, err error)) error {
	if n <= c.batch {
		_, err := run(0, n)
		return err
	}
	if sequential {
		for start := 0; start < n; start += c.batch {
			if stop, err := run(start, min(start+c.batch, n)); stop || err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, (n+c.batch-1)/c.batch)
	slots := make(chan struct{}, MaxParallelChunks) // one per chunk running
	var (
		wg       sync.WaitGroup
		panicMu  sync.Mutex
		panicked *safego.Panic // the first chunk's panic
	)
	for start := 0; start < n; start += c.batch {
		slots <- struct{}{} // waits for a running chunk to end
		panicMu.Lock()
		stop := panicked != nil
		panicMu.Unlock()
		if stop {
			<-slots
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			p := safego.Call(func() { _, errs[start/c.batch] = run(start, min(start+c.batch, n)) })
			if p != nil {
				panicMu.Lock()
				if panicked == nil {
					panicked = p
				}
				panicMu.Unlock()
			}
		})
	}
	wg.Wait()
	panicked.Raise()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Refusal reports whether err concerns a whole call rather than the
// server's health: a refused token or DPoP proof (a 401, or a 400 or 403
// naming invalid_token).
func Refusal(err error) bool {
	return errors.Is(err, transport.ErrUnauthorized) || errors.Is(err, transport.ErrProofRejected)
}

// Exchange runs the exchanges of a call that is neither cached nor
// coalesced (pep's Organizations and Verify, authzen's searches): it gets
// the call's credential, bounds ctx by the client's timeout, and runs send
// under it with a Poster, which posts with the credential (post: a
// refused token is handled there).
func (c *Core) Exchange(ctx context.Context, cl *Call, send func(ctx context.Context, post Poster) error) error {
	cred, err := c.Credential(cl)
	if err != nil {
		return err
	}
	ctx, cancel := c.Bound(ctx, cl)
	defer cancel()
	return send(ctx, func(url string, body []byte, header http.Header) ([]byte, error) {
		return c.post(ctx, cl, cred, url, body, header)
	})
}

// Poster posts body to url for a call (Exchange).
type Poster func(url string, body []byte, header http.Header) ([]byte, error)

// Flights lets identical concurrent requests (same token, same body) share
// one request: the coalescing of the call wrapper. The first caller, the leader, sends the request
// on its own goroutine under its own context; the others wait for its
// outcome, each only until its own context ends. So every caller is bounded
// by its own deadline (rule 10) and a flight needs no goroutine of its own.
//
// A flight that failed because its leader's context ended (the leader
// cancelled, or its deadline was shorter) says nothing about the gateway: a
// waiter that still has time then sends the request itself, without
// sharing, so that other callers giving up can never deny it.
//
// A flight is joined only before its leader's deadline, read on the
// monotonic clock when a caller arrives. A flight's answer may have been
// made at any time since its request was sent; while the process runs,
// that is within the leader's deadline of now, but a process frozen (a
// frozen container, SIGSTOP) with a flight under way can wake with
// its answer an hour old. A caller that begins after the deadline sends
// its own request.
//
// An outcome is handed to each caller only while that caller's own
// deadline has not passed, read on the clock at the hand-over (Late): the
// leader's after its request and the decoding of its answer, each waiter's
// when it wakes. The same freeze can leave a context's timer unfired when
// the answer arrives; and a waiter's deadline may be earlier than the
// leader's. A caller out of time gets the Cause of a passed deadline
// (ErrUnavailable, context.DeadlineExceeded) instead of the value.
//
// K is the key that identifies identical requests; it must hold everything
// that makes two requests differ (the full credential, the body).
type Flights[K comparable, T any] struct {
	mu sync.Mutex
	m  map[K]*flight[T]
	// WaitHook, when set, runs each time a caller has joined a flight (as
	// its leader or a waiter) and is about to wait for it: a test seam.
	WaitHook func()
}

type flight[T any] struct {
	// done is made by the first waiter (a flight nobody joins, as most
	// are, needs none) and closed by the leader once out is set; it is
	// read and made under Flights.mu.
	done chan struct{}
	out  *Outcome[T] // set before done is closed
	// deadline is the leader's, if its context has one: past it, the
	// flight is not joined.
	deadline    time.Time
	hasDeadline bool
}

// Outcome is the outcome of one request: a value, or the error that is
// the Cause of every decision the request was for. It may be shared by
// coalesced callers and is never modified once made.
type Outcome[T any] struct {
	Value T
	Err   error
	// leaderGone marks a failure caused by the context of the caller that
	// sent the request ending, not by the server.
	leaderGone bool
}

// Do returns the outcome of the request identified by key, running send
// itself unless an identical one is in flight and join is set (a caller
// that must not be given an answer to a request sent before it began
// leads a flight of its own, which later callers join). shared reports that the
// outcome came from another caller's request. p names the server in the
// Cause of a caller that left before the outcome came or whose deadline
// passed before it was handed over, or of a leader's request that ended
// without one (a panic on its goroutine).
func (f *Flights[K, T]) Do(ctx context.Context, p transport.Peer, key K, join bool, send func() *Outcome[T]) (out *Outcome[T], shared bool) {
	f.mu.Lock()
	fl, inFlight := f.m[key]
	if inFlight && (!join || fl.hasDeadline && !time.Now().Before(fl.deadline)) {
		inFlight = false // not to be joined, or too old: this caller leads a new flight
	}
	var done chan struct{}
	if inFlight {
		if fl.done == nil {
			fl.done = make(chan struct{})
		}
		done = fl.done
	} else {
		fl = &flight[T]{}
		fl.deadline, fl.hasDeadline = ctx.Deadline()
		if f.m == nil {
			f.m = make(map[K]*flight[T])
		}
		f.m[key] = fl
	}
	f.mu.Unlock()
	if f.WaitHook != nil {
		f.WaitHook()
	}

	if !inFlight {
		defer func() {
			if fl.out == nil { // send panicked: the waiters fail closed
				fl.out = &Outcome[T]{Err: p.NoAnswer()}
			}
			f.mu.Lock()
			if f.m[key] == fl { // not replaced by a newer flight
				delete(f.m, key)
			}
			done := fl.done
			f.mu.Unlock()
			if done != nil {
				close(done)
			}
		}()
		fl.out = lead(ctx, send)
		return inTime(ctx, p, fl.out), false
	}

	select {
	case <-done:
	case <-ctx.Done():
		return &Outcome[T]{Err: p.Unavailable(ctx.Err())}, false
	}
	if fl.out.leaderGone && transport.Late(ctx) == nil {
		return inTime(ctx, p, lead(ctx, send)), false
	}
	return inTime(ctx, p, fl.out), true
}

// Retire makes the flights whose keys match unjoinable: a caller that
// comes after leads a new flight; their leaders and those already waiting
// are not disturbed.
func (f *Flights[K, T]) Retire(match func(K) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.m {
		if match(k) {
			delete(f.m, k)
		}
	}
}

// lead sends the request and marks an outcome that failed because the
// leader's own context ended, or its deadline passed (Late).
func lead[T any](ctx context.Context, send func() *Outcome[T]) *Outcome[T] {
	out := send()
	if out.Err != nil && transport.Late(ctx) != nil {
		out.leaderGone = true
	}
	return out
}

// inTime returns out for a caller whose deadline has not passed, read on
// the clock now: the moment out becomes the caller's decisions. A caller
// out of time gets the Cause of a passed deadline in place of a value; an
// outcome that is an error already fails closed and is returned as it is.
// out itself, which other callers may share, is not changed.
func inTime[T any](ctx context.Context, p transport.Peer, out *Outcome[T]) *Outcome[T] {
	if out.Err != nil {
		return out
	}
	if late := transport.Late(ctx); late != nil {
		return &Outcome[T]{Err: p.Unavailable(late)}
	}
	return out
}
