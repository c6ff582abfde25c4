package transport

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
)

// Every request goes through three http.RoundTripper layers,
// outermost first:
//
//	retrier     retries with backoff and jitter, within the call's deadline
//	authorizer  clones each attempt and attaches the request's credential
//	base        the caller's transport, or defaultTransport
//
// The credential is bound into the chain when the chain is made for a
// request, as golang.org/x/oauth2's Transport binds its token source: it
// does not travel beside the request or in its context. There is no
// http.Client in the chain, so redirects reach the client (which denies)
// and no cookie jar is consulted.

// chain is the RoundTripper chain of one request, in one allocation: its
// retrier, whose RoundTrip sends the request and which counts its
// retries, over its authorizer.
type chain struct {
	retrier    retrier
	authorizer authorizer
}

// newChain binds cred into a chain over base: retries by policy, the
// credential attached to every attempt (with the latest DPoP nonce of
// nonces), and sent counted once per attempt sent.
func newChain(cred Credential, policy *RetryPolicy, nonces *NonceStore, base http.RoundTripper, sent *atomic.Uint64) *chain {
	ch := &chain{authorizer: authorizer{cred: cred, nonces: nonces, next: base, sent: sent}}
	ch.retrier = retrier{next: &ch.authorizer, policy: policy}
	return ch
}

// NewDefaultTransport returns the base transport of a client made without
// its own *http.Client: a copy of Go's default transport, keeping idle
// connections for the requests one call sends at once (Go's default keeps
// two per host). Over HTTPS it speaks HTTP/2 when the server offers it,
// which multiplexes those requests on one connection. Each client gets its
// own, so that its Close can close its idle connections without touching
// another client's.
func NewDefaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = defaultIdleConns
	return t
}

// MaxParallelChunks bounds the requests one call has in flight.
const MaxParallelChunks = 4

// defaultIdleConns is how many idle connections per server the default
// transport keeps: the chunks one call sends at once, for a few calls.
const defaultIdleConns = 4 * MaxParallelChunks

// RetryPolicy is a client's retry configuration, shared by its chains.
type RetryPolicy struct {
	Max              int
	MinWait, MaxWait time.Duration
	// AttemptTimeout bounds each attempt (the Timeout of the caller's
	// *http.Client); 0 means none.
	AttemptTimeout time.Duration
	Logger         *slog.Logger
	// Retries counts the retries of every chain.
	Retries *atomic.Uint64
	// Peer names the server in log lines.
	Peer Peer
}

// retrier retries a failed request: connection errors and 429, 502, 503 and
// 504, never more than policy.max times, never when the next wait would
// pass the request's deadline. Deadlines and Retry-After dates are real
// time, so it reads the wall clock rather than the client's injectable one.
type retrier struct {
	next   http.RoundTripper
	policy *RetryPolicy
	// retried counts this request's retries, for its span.
	retried int
}

// RoundTrip implements http.RoundTripper. It returns the last attempt's
// response (whatever its status) or error, never both. req's body must be
// replayable (GetBody), as http.NewRequest makes it for a byte slice.
func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	p, ctx := r.policy, req.Context()
	for attempt := 0; ; attempt++ {
		resp, err := r.attempt(req, attempt)
		if attempt >= p.Max || !retryable(ctx, resp, err) {
			return resp, err
		}
		wait, ok := p.backoff(attempt, resp)
		deadline, hasDeadline := ctx.Deadline()
		if !ok || hasDeadline && time.Until(deadline) <= wait {
			p.Logger.Debug(p.Peer.Pkg()+": not retrying: the wait would pass the deadline or exceeds the longest", "wait", wait)
			return resp, err
		}
		why := "the server answered " + strconv.Itoa(statusOf(resp))
		if err != nil {
			why = p.Peer.Unavailable(err).Error()
		} else {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBody)) // keep the connection
			_ = resp.Body.Close()
		}
		p.Retries.Add(1)
		r.retried++
		p.Logger.Debug(p.Peer.Pkg()+": retrying", "retry", attempt+1, "wait", wait, "reason", why)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// attempt sends attempt number n of req: the request itself first, a
// clone with a fresh body after, under the per-attempt timeout if any.
func (r *retrier) attempt(req *http.Request, n int) (*http.Response, error) {
	if n > 0 || r.policy.AttemptTimeout > 0 {
		ctx, cancel := req.Context(), context.CancelFunc(func() {})
		if r.policy.AttemptTimeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, r.policy.AttemptTimeout)
		}
		// The attempt's context ends on every way out but a response,
		// whose body's Close ends it: a panic under it included.
		handed := false
		defer func() {
			if !handed {
				cancel()
			}
		}()
		clone := req.Clone(ctx)
		if req.GetBody != nil && n > 0 {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			clone.Body = body
		}
		resp, err := r.next.RoundTrip(clone)
		if err != nil {
			return nil, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		handed = true
		return resp, nil
	}
	return r.next.RoundTrip(req)
}

// cancelOnClose ends an attempt's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// retryable reports whether an attempt's outcome may be retried: connection
// errors and 429, 502, 503, 504. Never 500, 4xx other than 429, a cancelled
// or expired context, a certificate problem, a credential error or a
// request that failed for its own size (requestFault).
func retryable(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		var (
			credErr      *CredentialError
			faultErr     *requestFault
			verifyErr    *tls.CertificateVerificationError
			unknownAuth  x509.UnknownAuthorityError
			hostnameErr  x509.HostnameError
			invalidCert  x509.CertificateInvalidError
			recordHdrErr tls.RecordHeaderError
		)
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
			errors.As(err, &credErr), errors.As(err, &faultErr), errors.As(err, &verifyErr), errors.As(err, &unknownAuth),
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
func (p *RetryPolicy) backoff(attempt int, resp *http.Response) (wait time.Duration, ok bool) {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, has := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); has {
			return d, d <= p.MaxWait
		}
	}
	d := p.MaxWait
	if attempt < 62 {
		if exp := p.MinWait << attempt; exp > 0 && exp < p.MaxWait {
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
