package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// MaxBody is the most of a response body a client reads; a 200 body that
// is longer fails closed.
const MaxBody = 1 << 20

// Observer is told of every request an Exchanger sends: the client's
// telemetry (spans and metrics).
type Observer interface {
	StartRequest(ctx context.Context, url, breaker string) (context.Context, trace.Span)
	ActiveAdd(ctx context.Context, n int64)
	EndRequest(ctx context.Context, span trace.Span, start time.Time, status, retries int, err error)
}

// Exchanger sends a client's requests: through its circuit breaker, then
// the chain of retries, credential and base transport, reading the answer
// through the body limit. It is configured once and then safe for
// concurrent use.
type Exchanger struct {
	Peer    Peer
	Base    http.RoundTripper
	Retry   RetryPolicy
	Nonces  NonceStore
	Breaker *Breaker
	Logger  *slog.Logger
	Observe Observer
	// Sent counts the requests sent, every retry and DPoP nonce resend
	// included.
	Sent atomic.Uint64
	// OwnsBase says that Base was made for this Exchanger
	// (NewDefaultTransport), so that Close closes its idle connections. A
	// transport the user gave is the user's to close.
	OwnsBase bool

	// closed is set by Close; active counts the requests under way (Post,
	// Fetch), so that the last one to end after Close closes the
	// connections it leaves idle.
	closed atomic.Bool
	active atomic.Int64

	// posts holds the parsed request of each URL posted to (newPost), at
	// most maxPostURLs of them; urls counts them.
	posts sync.Map // string -> *http.Request
	urls  atomic.Int32
}

// maxPostURLs bounds the URLs whose parsed requests an Exchanger keeps. A
// client posts to a few fixed endpoints; a URL past the bound is parsed
// for every request.
const maxPostURLs = 16

// Post sends one POST of body to url with cred, passing the circuit
// breaker and reporting the outcome to it, and returns the body of a 200
// answer. header, when not nil, adds headers to the request. ownDeadline
// says that ctx's deadline is the client's own timeout rather than an
// earlier one of the caller's: only then does running out of time say
// something about the server.
//
// No answer is returned once ctx's deadline has passed, read on the clock
// when the body has been read (Late), even before ctx's timer fires: a
// process frozen while its request was answered wakes with its timers
// unfired. Such an answer is an ErrUnavailable Cause that matches
// context.DeadlineExceeded, a failure for the breaker only when the
// deadline was the client's own.
//
// Other outcomes are errors that serve as fail-closed Causes:
// ErrCircuitOpen, ErrUnavailable for transport failures and timeouts,
// *ResponseError for other statuses and over-long bodies, *CredentialError
// when cred could not be attached, ErrClosed after Close (nothing is
// sent), ErrTokenChanged when cred is a Held
// credential released before an attempt or before its 200 answer was
// used. None of their texts holds anything of the token.
//
// settled, when not nil, is set to the answer's error (nil for a 200 whose
// body is used) as soon as the answer is decided, before any user code
// runs after it: the request span's end and the duration metric, the
// Debug log line, the body's Close, the breaker's log line. A panic of
// that code leaves Post without a return value; the caller reads settled
// in a defer to handle the answer all the same (a 401's refusal of the
// token, above all).
func (x *Exchanger) Post(ctx context.Context, cred Credential, url string, body []byte, header http.Header, ownDeadline bool, settled *error) ([]byte, error) {
	if err := x.enter(); err != nil {
		return nil, err
	}
	defer x.leave()
	ok, probe := x.Breaker.allow()
	if !ok {
		return nil, x.Peer.Err(ErrCircuitOpen)
	}
	// The breaker hears of every request it let through, on every way
	// out: a panic under send (the user's RoundTripper, telemetry SDK or
	// logger), recovered by the caller, is a neutral outcome, so that a
	// half-open probe is never left reserved (every later call refused).
	o := outcomeNeutral
	defer func() { x.Breaker.done(probe, o) }()
	data, o, err := x.send(ctx, cred, url, body, header, ownDeadline, settled)
	return data, err
}

// Fetch sends req, a request that carries no credential (a discovery
// document, say), through the base transport, without retries or the
// breaker. It fails with ErrClosed once the Exchanger is closed. Close the
// response's body, as with any RoundTrip.
func (x *Exchanger) Fetch(req *http.Request) (*http.Response, error) {
	if err := x.enter(); err != nil {
		closeBody(req)
		return nil, err
	}
	// The request under way is released on every way out but a
	// response, whose body's Close releases it: a panic in the base
	// transport included.
	handed := false
	defer func() {
		if !handed {
			x.leave()
		}
	}()
	resp, err := x.Base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &leaveOnClose{ReadCloser: resp.Body, x: x}
	handed = true
	return resp, nil
}

// leaveOnClose ends a Fetch when its body is closed.
type leaveOnClose struct {
	io.ReadCloser
	x    *Exchanger
	once sync.Once
}

func (b *leaveOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.x.leave)
	return err
}

// Close makes every later request fail with ErrClosed and, when the
// Exchanger owns its base transport, closes its idle connections: at once,
// and again when the last request under way ends, so that no connection is
// left open once they have. It does not wait for them. Calling it again
// does nothing more.
func (x *Exchanger) Close() {
	x.closed.Store(true)
	x.closeIdle()
}

// Closed reports whether Close was called.
func (x *Exchanger) Closed() bool { return x.closed.Load() }

// enter registers a request, or refuses it once the Exchanger is closed.
func (x *Exchanger) enter() error {
	x.active.Add(1)
	if x.closed.Load() {
		x.leave()
		return x.Peer.Err(ErrClosed)
	}
	return nil
}

// leave ends a request. The last one to end after Close closes the idle
// connections: a request under way when Close ran may have dialled a new
// one, and http.Transport closes a connection that goes idle after
// CloseIdleConnections only until the next request asks for one.
func (x *Exchanger) leave() {
	if x.active.Add(-1) == 0 && x.closed.Load() {
		x.closeIdle()
	}
}

func (x *Exchanger) closeIdle() {
	if c, ok := x.Base.(interface{ CloseIdleConnections() }); ok && x.OwnsBase {
		c.CloseIdleConnections()
	}
}

// send performs the request and says what its outcome tells about the
// server's health (rule 11): transport failures, 502, 503 and 504 are
// failures, and so is running out of the client's own timeout; a caller's
// cancellation (a client hanging up) or earlier deadline, a credential
// that could not be attached, a request that failed for its own size
// (requestFault: one caller's token past an HTTP/2 server's header limit)
// and a 429 say nothing; any other
// answer shows a working server. It sets *settled (when not nil) to the answer's error
// as soon as the answer is decided, before any user code runs after it
// (see Post).
func (x *Exchanger) send(ctx context.Context, cred Credential, url string, body []byte, header http.Header, ownDeadline bool, settled *error) (_ []byte, _ outcome, err error) {
	ctx, span := x.Observe.StartRequest(ctx, url, x.Breaker.Current().String())
	req, err := x.newPost(ctx, url, body, header)
	if err != nil {
		span.End()
		return nil, outcomeNeutral, err
	}
	echoable := echoable(body, req.Header)
	req = withWords(req, echoable)
	start := time.Now()
	ch := newChain(cred, &x.Retry, &x.Nonces, x.Base, &x.Sent)
	status := 0
	x.Observe.ActiveAdd(ctx, 1)
	defer func() { // on every way out, a panic included: the request is under way no more
		x.Observe.ActiveAdd(ctx, -1)
		x.Observe.EndRequest(ctx, span, start, status, ch.retrier.retried, err)
	}()
	debug := x.Logger.Enabled(ctx, slog.LevelDebug)
	resp, err := ch.retrier.RoundTrip(req)
	if err != nil {
		var (
			credErr *CredentialError
			late    *notSent
			refused *requestFault
		)
		switch {
		case errors.Is(err, ErrTokenChanged): // no attempt after the change
			x.Logger.Debug(x.Peer.String()+" request stopped: the client's token changed", "url", url)
			return nil, outcomeNeutral, x.Peer.Err(ErrTokenChanged)
		case errors.As(err, &credErr):
			credErr.who = x.Peer
			return nil, outcomeNeutral, credErr
		case errors.As(err, &late): // out of time before an attempt went out
			x.Logger.Debug(x.Peer.String()+" request not sent: the call's deadline passed or it was cancelled", "url", url)
			return nil, outcomeNeutral, x.Peer.Unavailable(late.late)
		case errors.As(err, &refused): // the request's own fault, not the server's
			cause := x.Peer.Unavailable(refused.err)
			x.Logger.Debug(x.Peer.String()+" request failed for its own size", "url", url, "error", cause.Error())
			return nil, outcomeNeutral, cause
		}
		cause := x.Peer.Unavailable(err)
		x.Logger.Debug(x.Peer.String()+" request failed", "url", url, "error", cause.Error())
		return nil, callerOutcome(ctx, ownDeadline), cause
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	data, o, late, err := x.answer(ctx, cred, resp, ownDeadline, echoable)
	if settled != nil {
		*settled = err
	}
	// User code (the logger's) from here on only: the answer is settled.
	if debug {
		x.Logger.Debug(x.Peer.String()+" answered", "url", url, "status", resp.StatusCode, "duration", time.Since(start))
		if late {
			x.Logger.Debug(x.Peer.String()+" answered after the call's deadline: the answer is not used", "url", url, "status", resp.StatusCode)
		}
	}
	return data, o, err
}

// answer reads resp's body and decides what the answer is: the body of a
// 200, or the Cause of any other status, of a body that could not be read
// or of an answer that came after the call's deadline (late). It runs no
// user code but the body's Read, so that the answer is settled before the
// user code that follows it runs (send).
//
// An answer read counts for all that makes the client safer, however late
// it came and whatever became of its body: only what could grant is
// refused for being late or cut. So a 401 is decided by its status line,
// its challenges and as much of its body as came (a DPoP request's
// nonce or proof error, or invalid_token, in the body: readAnswer),
// whatever the deadline: its token is retired and tokenExpired emitted
// (core's refused) even when the rest of the answer never came or came
// too late to use; and so is a 400 or 403 whose reading refuses the token
// (a-read17b F1). But a body the client could not finish reading (its
// own deadline, a reset, any read error) is no verdict on the token
// (a-fix15 F3: a slow gateway's proof refusal, cut, was read as unclear
// and retired a valid token): such a 401 refuses the token only when what
// came refuses it by itself (cutRefuses); otherwise the call fails
// ErrUnavailable. "Unclear" comes only from a body the server finished.
//
// echoable says that what the request sent may name invalid_token
// (echoable): the word then refuses nothing in the answer.
func (x *Exchanger) answer(ctx context.Context, cred Credential, resp *http.Response, ownDeadline, echoable bool) (_ []byte, _ outcome, late bool, _ error) {
	id := cred.Ident()
	id.Echoable = echoable
	if resp.StatusCode == http.StatusUnauthorized {
		data, err := ReadBody(resp.Body, resp.ContentLength) // its error and message, when they came
		if err != nil && !cutRefuses(resp, data, id) {
			return nil, callerOutcome(ctx, ownDeadline), false, x.Peer.Unavailable(err)
		}
		return nil, outcomeSuccess, Late(ctx) != nil, x.Peer.NewResponseError(resp, data, id)
	}
	data, err := ReadBody(resp.Body, resp.ContentLength)
	if err != nil {
		// A 400 or 403 that refuses the token in what came (its challenge,
		// the body's start) refuses it, as a 401 does: a cut body leaves a
		// refusal standing, it never hides one.
		if (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusForbidden) && cutRefuses(resp, data, id) {
			return nil, outcomeSuccess, Late(ctx) != nil, x.Peer.NewResponseError(resp, data, id)
		}
		return nil, callerOutcome(ctx, ownDeadline), false, unused(resp, x.Peer.Unavailable(err))
	}
	// A 400 or 403 refusing the token counts however late it was read, as
	// a 401 does: lateness may only stop what could grant from being used
	// (a-read17b F1: a refusal read just past the deadline, a frozen
	// process's, was dropped, and the revoked token's GRANTs stayed
	// served).
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusForbidden {
		if e := x.Peer.NewResponseError(resp, data, id); e.refused {
			return nil, outcomeSuccess, Late(ctx) != nil, e
		}
	}
	// The one place an answer is taken: none is used once the call's
	// deadline has passed, read on the clock (Late), whatever the status.
	// The context's timer may not have fired yet: the process may have
	// been frozen while the answer arrived.
	if past := Late(ctx); past != nil {
		return nil, timeOutcome(past, ownDeadline), true, unused(resp, x.Peer.Unavailable(past))
	}
	token := id
	switch resp.StatusCode {
	case http.StatusOK:
		if len(data) > MaxBody {
			return nil, outcomeSuccess, false, unused(resp, x.Peer.Malformed("the body exceeds %d bytes", MaxBody))
		}
		if released(cred) { // an answer for a token the client let go of meanwhile
			return nil, outcomeSuccess, false, x.Peer.Err(ErrTokenChanged)
		}
		return data, outcomeSuccess, false, nil
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, outcomeFailure, false, x.Peer.NewResponseError(resp, data, token)
	case http.StatusTooManyRequests:
		return nil, outcomeNeutral, false, x.Peer.NewResponseError(resp, data, token)
	}
	return nil, outcomeSuccess, false, x.Peer.NewResponseError(resp, data, token)
}

// unusedAnswer is the Cause of a 200 answer the client read but did not
// use (read after the call's deadline, cut short, or past MaxBody): the server decided,
// and the client cannot tell what (UnusedAnswer). Its text is the Cause's.
type unusedAnswer struct{ error }

func (u unusedAnswer) Unwrap() error { return u.error }

// unused marks cause as an unused answer when resp is a 200.
func unused(resp *http.Response, cause error) error {
	if resp.StatusCode != http.StatusOK {
		return cause
	}
	return unusedAnswer{cause}
}

// UnusedAnswer reports whether err is the Cause of a 200 answer read but
// not used: a decision newer than what a cache holds of its token, which
// the cache must then not serve (core's post purges it).
func UnusedAnswer(err error) bool {
	var u unusedAnswer
	return errors.As(err, &u)
}

// callerOutcome is what a request that got no answer says about the
// server: nothing when the caller cancelled or its own earlier deadline
// passed (read on the clock, Late), a failure otherwise (the server could
// not be reached, or did not answer within the client's own timeout).
func callerOutcome(ctx context.Context, ownDeadline bool) outcome {
	if late := Late(ctx); late != nil {
		return timeOutcome(late, ownDeadline)
	}
	return outcomeFailure
}

// maxTracestate bounds the tracestate and the baggage a request carries.
const maxTracestate = 512

// boundPropagated returns ctx without a tracestate or baggage past
// maxTracestate bytes: a caller's (up to 32 tracestate members of 512
// bytes with otelhttp, and baggage) would make the request as large as the
// caller likes, through this package's Inject and any propagating
// transport under it (otelhttp.NewTransport given with WithHTTPClient).
// 512 bytes is the length W3C Trace Context asks vendors to keep. A 10 KiB
// one, behind a front that closes on large headers, opened the breaker
// every caller shares (a-last10, a-last10c). The trace itself goes on.
func boundPropagated(ctx context.Context) context.Context {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && len(sc.TraceState().String()) > maxTracestate {
		ctx = trace.ContextWithSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
	}
	if b := baggage.FromContext(ctx); b.Len() > 0 && len(b.String()) > maxTracestate {
		ctx = baggage.ContextWithoutBaggage(ctx)
	}
	return ctx
}

// newPost returns a JSON POST of body to url with header added, and the
// W3C trace context of ctx when it has one. The URL is parsed once per
// Exchanger: every request to it starts as a shallow copy of the same
// parsed request and shares its *url.URL and, when nothing is added to
// them, its headers (Content-Type and Accept). Nothing changes either:
// each RoundTripper of the chain sends a clone (see authorizer), and
// headers are added here only to a copy.
func (x *Exchanger) newPost(ctx context.Context, url string, body []byte, header http.Header) (*http.Request, error) {
	parsed, ok := x.posts.Load(url)
	if !ok {
		r, err := http.NewRequest(http.MethodPost, url, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: building the request: %w", x.Peer.Pkg(), err)
		}
		// Keys in canonical form, so nothing canonicalizes them again.
		r.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
		if x.urls.Add(1) <= maxPostURLs {
			parsed, _ = x.posts.LoadOrStore(url, r)
		} else {
			parsed = r
		}
	}
	ctx = boundPropagated(ctx)
	req := parsed.(*http.Request).WithContext(ctx)
	// Inject adds headers only for a valid span context.
	if len(header) > 0 || trace.SpanContextFromContext(ctx).IsValid() {
		req.Header = req.Header.Clone()
		for k, vs := range header {
			req.Header[k] = vs
		}
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	// The body as http.NewRequest makes it: a *bytes.Reader lets the
	// transport write headers and body in one go, and GetBody replays it.
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req, nil
}

// ReadBody reads at most MaxBody+1 bytes, so that an over-long body is seen.
// A declared length (Content-Length) sizes the buffer at once instead of
// growing it by doubling, up to initialBody: memory follows the bytes that
// arrive, not what the server claims.
func ReadBody(r io.Reader, declared int64) ([]byte, error) {
	if declared < 0 {
		return io.ReadAll(io.LimitReader(r, MaxBody+1))
	}
	limited := io.LimitedReader{R: r, N: MaxBody + 1}     // on the stack: only its Read is called
	data := make([]byte, 0, min(declared, initialBody)+1) // one more byte: room to see the end without growing
	for {
		n, err := limited.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		switch {
		case err == io.EOF:
			return data, nil
		case err != nil:
			return data, err
		case len(data) == cap(data): // longer than the buffer
			data = append(data, 0)[:len(data)]
		}
	}
}

// initialBody bounds the buffer a declared length makes at once.
const initialBody = 64 << 10

// A call's deadline is read on the clock, not only through its context's
// timer. A process that was frozen (SIGSTOP, a frozen container, a starved
// container) wakes with its timers unfired: for a moment ctx.Err()
// is nil and ctx.Done() open although the deadline passed an hour ago, and
// an answer read then would be used as if it were fresh. So the steps that
// hand something to a call read its deadline themselves (Late):
//
//   - nothing is sent for a call out of time (authorizer.send, before and
//     after the credential is attached, so a slow DPoP key counts too);
//   - an answer read after the deadline is not used (Exchanger.send, after
//     the body is read): the call gets the Cause of a passed deadline;
//   - a shared outcome is handed to each caller only while that caller has
//     time (internal/core's Flights.Do), whatever the deadline of the caller
//     who sent it.

// Late returns why a call may no longer use anything: its context's error,
// or context.DeadlineExceeded once its deadline has passed, read now, even
// though the context's timer has not fired yet. The comparison is on the
// monotonic clock whenever the deadline carries a reading, as every
// deadline context.WithTimeout makes does (a client's own timeout always);
// a deadline the caller built from a wall-clock time is compared as such.
// nil while the call has time.
func Late(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// timeOutcome is what a call running out of time (late, from Late) says
// about the server: a failure only when the deadline was the client's own
// timeout (rule 11); a caller's earlier deadline or cancellation says
// nothing.
func timeOutcome(late error, ownDeadline bool) outcome {
	if ownDeadline && errors.Is(late, context.DeadlineExceeded) {
		return outcomeFailure
	}
	return outcomeNeutral
}

// BreakerState is the state of a client's circuit breaker. The zero value
// is BreakerClosed, which is also what a client without a breaker reports.
type BreakerState uint8

const (
	// BreakerClosed: requests go to the gateway.
	BreakerClosed BreakerState = iota
	// BreakerOpen: requests are denied at once with ErrCircuitOpen.
	BreakerOpen
	// BreakerHalfOpen: the cool-down is over; the next request is a probe
	// (or one is under way) whose outcome closes or reopens the breaker.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

// outcome is what one request says about the server's health.
type outcome uint8

const (
	// outcomeSuccess: the server answered (any 2xx, 3xx or 4xx).
	outcomeSuccess outcome = iota
	// outcomeFailure: a transport failure, a timeout or a 5xx.
	outcomeFailure
	// outcomeNeutral: the request failed before reaching the server for a
	// reason of the client's own (e.g. a proof could not be signed).
	outcomeNeutral
)

// Breaker is a consecutive-failure circuit breaker. A nil *Breaker is a
// disabled one: it allows everything. It is safe for concurrent use.
type Breaker struct {
	threshold int
	coolDown  time.Duration
	now       func() time.Time
	// onChange is called, without the lock held, after every transition.
	onChange func(from, to BreakerState)

	mu          sync.Mutex
	state       BreakerState
	consecutive int       // consecutive failures while closed
	openedAt    time.Time // when the breaker last opened
	probing     bool      // a half-open probe is under way
}

// NewBreaker returns a breaker that opens after threshold consecutive
// failures for coolDown, reading the time from now and calling onChange
// after every transition; nil (disabled) for threshold 0.
func NewBreaker(threshold int, coolDown time.Duration, now func() time.Time, onChange func(from, to BreakerState)) *Breaker {
	if threshold == 0 {
		return nil
	}
	return &Breaker{threshold: threshold, coolDown: coolDown, now: now, onChange: onChange}
}

// allow reports whether a request may go to the server now. probe is true
// for the single request let through after the cool-down, which allow
// reserves: its outcome must be reported to done with probe set, on every
// way out, a panic included (a defer), or every later request is refused.
func (b *Breaker) allow() (ok, probe bool) {
	if b == nil {
		return true, false
	}
	b.mu.Lock()
	from := b.state
	switch b.state {
	case BreakerClosed:
		b.mu.Unlock()
		return true, false
	case BreakerOpen:
		if b.now().Sub(b.openedAt) < b.coolDown {
			b.mu.Unlock()
			return false, false
		}
		b.state = BreakerHalfOpen
	}
	// Half-open: exactly one probe at a time.
	if b.probing {
		b.mu.Unlock()
		return false, false
	}
	b.probing = true
	b.mu.Unlock()
	// The report runs the user's logger: should it panic, the probe it
	// reserved is released, neutral, before the panic goes on.
	reported := false
	defer func() {
		if !reported {
			b.done(true, outcomeNeutral)
		}
	}()
	b.changed(from, BreakerHalfOpen)
	reported = true
	return true, true
}

// done records the outcome of a request that allow let through. It must
// be called for every such request however it ends (a defer): a panic
// under the request is outcomeNeutral.
func (b *Breaker) done(probe bool, o outcome) {
	if b == nil {
		return
	}
	b.mu.Lock()
	from := b.state
	switch {
	case probe:
		b.probing = false
		switch o {
		case outcomeSuccess:
			b.state, b.consecutive = BreakerClosed, 0
		case outcomeFailure:
			b.state, b.openedAt = BreakerOpen, b.now()
		}
		// A neutral probe leaves the breaker half-open for the next one.
	case b.state == BreakerClosed:
		switch o {
		case outcomeSuccess:
			b.consecutive = 0
		case outcomeFailure:
			b.consecutive++
			if b.consecutive >= b.threshold {
				b.state, b.openedAt, b.consecutive = BreakerOpen, b.now(), 0
			}
		}
		// Requests that were already under way when the breaker opened
		// do not change it; only the probe decides.
	}
	to := b.state
	b.mu.Unlock()
	b.changed(from, to)
}

func (b *Breaker) changed(from, to BreakerState) {
	if from != to && b.onChange != nil {
		b.onChange(from, to)
	}
}

// Current reports the state; an open breaker whose cool-down is over is
// reported half-open, since the next request will be a probe.
func (b *Breaker) Current() BreakerState {
	if b == nil {
		return BreakerClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.now().Sub(b.openedAt) >= b.coolDown {
		return BreakerHalfOpen
	}
	return b.state
}
