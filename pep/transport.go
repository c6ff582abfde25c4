package pep

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

// The client's HTTP stack is three RoundTripper layers, outermost first:
//
//	retryTransport   retries with backoff (go-retryablehttp)
//	tokenTransport   clones each attempt and attaches the credential
//	base             the caller's transport, or http.DefaultTransport
//
// Between retryTransport and tokenTransport sits an *http.Client (a copy of
// the caller's, as go-retryablehttp needs one) whose CheckRedirect stops at
// the first response, so a 3xx reaches the client, which denies.

// newTransport builds the layers from the validated configuration.
func newTransport(cfg *config, sent, retries *atomic.Uint64, logger *slog.Logger) http.RoundTripper {
	hc := *cfg.httpClient // copy: the caller's client is never changed
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &tokenTransport{base: base, sent: sent, nonces: &nonceStore{}}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	hc.Jar = nil // cookies would carry one caller's session into another's request
	return &retryTransport{
		client:  &hc,
		max:     cfg.retryMax,
		minWait: cfg.retryMin,
		maxWait: cfg.retryMaxWait,
		logger:  logger,
		retries: retries,
	}
}

// callStateKey is the context key of the per-request callState, the way the
// client hands the credential of a call down to tokenTransport.
type callStateKey struct{}

// callState is what tokenTransport needs to know about the gateway request
// an attempt belongs to; all attempts of one request share it.
type callState struct {
	cred credential
	// nonceRetried is set once a DPoP nonce challenge was answered, so that
	// a request is re-sent for a nonce at most once, whatever the retries.
	nonceRetried atomic.Bool
}

func withCallState(ctx context.Context, cs *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, cs)
}

// errNoCredential means a request reached tokenTransport without a
// credential; it is a programming error inside the package.
var errNoCredential = errors.New("pep: internal error: request without credential")

// credentialError wraps a failure to attach the credential (for example to
// sign a proof). It is the client's fault, not the gateway's: it is not
// retried and does not count against the breaker.
type credentialError struct{ err error }

func (e *credentialError) Error() string { return "pep: cannot attach the token: " + e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

// tokenTransport attaches the call's credential to a clone of every attempt
// and delegates to base, like golang.org/x/oauth2's Transport. For a DPoP
// credential it also keeps the latest DPoP-Nonce per origin and answers a
// nonce challenge by sending the request once more with the new nonce;
// being below the retry layer, that resend is not a retry.
type tokenTransport struct {
	base   http.RoundTripper
	sent   *atomic.Uint64
	nonces *nonceStore
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	cs, _ := req.Context().Value(callStateKey{}).(*callState)
	if cs == nil || cs.cred == nil {
		closeBody(req)
		return nil, errNoCredential
	}
	if cs.cred.ident().scheme != schemeDPoP {
		return t.send(req, cs.cred, "")
	}
	from := origin(req.URL)
	used := t.nonces.get(from)
	resp, err := t.send(req, cs.cred, used)
	if err != nil {
		return resp, err
	}
	if n := resp.Header.Get("DPoP-Nonce"); n != "" {
		t.nonces.set(from, n)
	}
	fresh := nonceChallenge(resp)
	// Resend once, and never for the nonce that was just refused: a server
	// repeating it would otherwise be asked forever.
	if fresh == "" || fresh == used || req.GetBody == nil || !cs.nonceRetried.CompareAndSwap(false, true) {
		return resp, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	_ = resp.Body.Close()
	again := req.Clone(req.Context())
	again.Body = body
	return t.send(again, cs.cred, fresh)
}

// send authorizes a clone of req with cred and nonce and sends it.
func (t *tokenTransport) send(req *http.Request, cred credential, nonce string) (*http.Response, error) {
	r := req.Clone(req.Context())
	if err := cred.authorize(r, nonce); err != nil {
		closeBody(req)
		return nil, &credentialError{err: err}
	}
	t.sent.Add(1)
	return t.base.RoundTrip(r)
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// retryTransport retries failed attempts with go-retryablehttp. A
// retryablehttp.Client is made per request, inside the request's attempts,
// so that the retry policy can see the request's deadline and its own
// attempt count. Deadlines and Retry-After dates are real time, so it reads
// the wall clock rather than the client's injectable one.
type retryTransport struct {
	client           *http.Client
	max              int
	minWait, maxWait time.Duration
	logger           *slog.Logger
	retries          *atomic.Uint64
}

// attempts is the retry state of one request: one allocation holds the
// retryablehttp.Client and what its CheckRetry and Backoff share.
type attempts struct {
	t       *retryTransport
	rc      retryablehttp.Client
	retried int           // retries decided so far
	wait    time.Duration // the wait chosen by the last checkRetry
}

// RoundTrip implements http.RoundTripper. It returns the last attempt's
// response (whatever its status) or error, never a response and an error.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rreq, err := t.retryable(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	a := &attempts{t: t}
	a.rc = retryablehttp.Client{
		HTTPClient:   t.client,
		RetryMax:     t.max,
		RetryWaitMin: t.minWait,
		RetryWaitMax: t.maxWait,
		CheckRetry:   a.checkRetry,
		Backoff:      a.backoff,
		// Keep the last response instead of retryablehttp's "giving up"
		// error, so that a final 503 is reported as a 503.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		// No Logger: retryablehttp would print transport errors verbatim,
		// and their text can quote what the gateway sent. checkRetry logs
		// each retry in words of its own.
	}
	resp, err := a.rc.Do(rreq)
	if err != nil && resp != nil {
		_ = resp.Body.Close()
		resp = nil
	}
	return resp, err
}

// checkRetry is the request's retryablehttp.CheckRetry: it decides whether
// to retry and chooses the wait, within the retry budget and the deadline.
func (a *attempts) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	t := a.t
	if a.retried >= t.max || !retryable(ctx, resp, err) {
		return false, nil
	}
	w, ok := t.backoff(a.retried, resp)
	if !ok {
		t.logger.Debug("pep: not retrying: Retry-After exceeds the longest wait", "maxWait", t.maxWait)
		return false, nil
	}
	if deadline, has := ctx.Deadline(); has && time.Until(deadline) <= w {
		t.logger.Debug("pep: not retrying: the next wait would pass the deadline", "wait", w)
		return false, nil
	}
	a.retried++
	a.wait = w
	t.retries.Add(1)
	if t.logger.Enabled(ctx, slog.LevelDebug) {
		why := "the gateway answered " + strconv.Itoa(statusOf(resp))
		if err != nil {
			why = unavailable(err).Error()
		}
		t.logger.Debug("pep: retrying", "retry", a.retried, "wait", w, "reason", why)
	}
	return true, nil
}

// backoff is the request's retryablehttp.Backoff: the wait checkRetry chose.
func (a *attempts) backoff(time.Duration, time.Duration, int, *http.Response) time.Duration {
	return a.wait
}

// retryable wraps a copy of req (the caller's request is not modified)
// whose body can be replayed for every attempt. A shallow copy is enough:
// this layer replaces only the body fields, and tokenTransport clones each
// attempt before it sets headers.
func (t *retryTransport) retryable(req *http.Request) (*retryablehttp.Request, error) {
	r := req.WithContext(req.Context())
	if req.Body == nil || req.GetBody == nil {
		return retryablehttp.FromRequest(r)
	}
	rreq := &retryablehttp.Request{Request: r}
	closeBody(req) // GetBody supplies a fresh reader for every attempt
	err := rreq.SetBody(retryablehttp.ReaderFunc(func() (io.Reader, error) { return req.GetBody() }))
	// SetBody cannot see the length through GetBody's io.NopCloser and sets
	// 0, which net/http takes for "unknown": it would send the body chunked,
	// after flushing the headers in a write of their own.
	rreq.ContentLength = req.ContentLength
	return rreq, err
}

// retryable reports whether an attempt's outcome may be retried: connection
// errors and 429, 502, 503, 504. Never 500, 4xx other than 429, a cancelled
// or expired context, a certificate problem or a credential error.
func retryable(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		var (
			credErr      *credentialError
			verifyErr    *tls.CertificateVerificationError
			unknownAuth  x509.UnknownAuthorityError
			hostnameErr  x509.HostnameError
			invalidCert  x509.CertificateInvalidError
			recordHdrErr tls.RecordHeaderError
		)
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
			errors.Is(err, errNoCredential),
			errors.As(err, &credErr), errors.As(err, &verifyErr), errors.As(err, &unknownAuth),
			errors.As(err, &hostnameErr), errors.As(err, &invalidCert), errors.As(err, &recordHdrErr):
			return false
		}
		return true
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// backoff returns the wait before retry number attempt (0-based): the
// Retry-After of a 429 or 503 when it fits in maxWait (ok is false when it
// does not), otherwise minWait doubled per attempt, capped at maxWait, with
// jitter that keeps it in [d/2, d].
func (t *retryTransport) backoff(attempt int, resp *http.Response) (wait time.Duration, ok bool) {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, has := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); has {
			return d, d <= t.maxWait
		}
	}
	d := t.maxWait
	if attempt < 62 {
		if exp := t.minWait << attempt; exp > 0 && exp < t.maxWait {
			d = exp
		}
	}
	half := d / 2
	return half + rand.N(d-half+1), true
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// A number of seconds too large to represent is a wait longer than any.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(when.Sub(now), 0), true
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}
