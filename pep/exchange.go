package pep

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
)

// exchange sends one POST to the gateway, passing the circuit breaker and
// reporting the outcome to it, and returns the body of a 200 answer. Other
// outcomes are errors that serve as fail-closed Causes: ErrCircuitOpen,
// ErrUnavailable for transport failures and timeouts, and *ResponseError
// for other statuses and over-long bodies. None of their texts holds
// anything of the token.
func (c *Client) exchange(ctx context.Context, cl *call, cred credential, url string, body []byte) ([]byte, error) {
	ok, probe := c.breaker.allow()
	if !ok {
		return nil, ErrCircuitOpen
	}
	data, o, err := c.send(ctx, cl, cred, url, body)
	c.breaker.done(probe, o)
	return data, err
}

// send performs the request and says what its outcome tells about the
// gateway's health (rule 11): transport failures, 502, 503 and 504 are
// failures, and so is running out of the client's own timeout; a caller's
// cancellation (a client hanging up) or earlier deadline, a credential
// that could not be attached and a 429 say nothing; any other answer shows
// a working gateway.
func (c *Client) send(ctx context.Context, cl *call, cred credential, url string, body []byte) (_ []byte, _ outcome, err error) {
	ctx, span := c.tel.startRequest(ctx, url, c.breaker.current())
	req, err := newPost(ctx, url, body)
	if err != nil {
		span.End()
		return nil, outcomeNeutral, err
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	start := time.Now()
	c.tel.activeAdd(ctx, 1)
	ch := c.newChain(cred)
	status := 0
	defer func() {
		c.tel.activeAdd(ctx, -1)
		c.tel.endRequest(ctx, span, start, status, ch.retrier.retried, err)
	}()
	debug := c.logger.Enabled(ctx, slog.LevelDebug)
	resp, err := ch.retrier.RoundTrip(req)
	if err != nil {
		var credErr *credentialError
		if errors.As(err, &credErr) {
			return nil, outcomeNeutral, credErr
		}
		cause := unavailable(err)
		c.logger.Debug("pep: gateway request failed", "url", url, "error", cause.Error())
		return nil, callerOutcome(ctx, cl), cause
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	data, err := readBody(resp.Body, resp.ContentLength)
	if debug {
		c.logger.Debug("pep: gateway answered", "url", url, "status", resp.StatusCode, "duration", time.Since(start))
	}
	if err != nil {
		return nil, callerOutcome(ctx, cl), unavailable(err)
	}
	token := cred.ident()
	switch resp.StatusCode {
	case http.StatusOK:
		if len(data) > maxBody {
			return nil, outcomeSuccess, malformed("the body exceeds %d bytes", maxBody)
		}
		return data, outcomeSuccess, nil
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, outcomeFailure, responseError(resp, data, token)
	case http.StatusTooManyRequests:
		return nil, outcomeNeutral, responseError(resp, data, token)
	}
	return nil, outcomeSuccess, responseError(resp, data, token)
}

// callerOutcome is what a request that got no answer says about the
// gateway: nothing when the caller cancelled or its own earlier deadline
// passed, a failure otherwise (the gateway could not be reached, or did not
// answer within the client's own timeout).
func callerOutcome(ctx context.Context, cl *call) outcome {
	switch err := ctx.Err(); {
	case err == nil:
		return outcomeFailure
	case errors.Is(err, context.DeadlineExceeded) && cl.ownDeadline:
		return outcomeFailure
	}
	return outcomeNeutral
}
