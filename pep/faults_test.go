package pep_test

// The fault matrix: the client against a gateway that misbehaves in every
// way the network and a broken deployment can, each built here on a real
// loopback server. Every failing case must end in a DENY with a Cause that
// says why (ErrUnavailable for transport failures and timeouts, a
// *ResponseError for unusable answers), a nil error, nothing cached, and a
// return within the caller's deadline. Run it under the race detector:
//
//	go test -race -run '^TestFaultMatrix$' -v ./pep

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

const (
	faultToken = "fault-token.eyJzdWIiOiJmYXVsdCJ9.c2lnbmF0dXJl"
	// faultGrant grants the pair every case asks for.
	faultGrant = `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`
	// faultDeadline is the caller's deadline in every case; the slow
	// gateways hold on past it.
	faultDeadline = 300 * time.Millisecond
	// faultMargin is how late after its deadline a call may return: the
	// scheduling slack of a loaded machine under -race, not a performance
	// bound.
	faultMargin = 2 * time.Second
)

// faultGateway is a loopback gateway whose authorize endpoint is answered by
// a handler of the test. closing is closed before the server shuts down,
// so that handlers holding a request open let go of it.
type faultGateway struct {
	*httptest.Server
	closing  chan struct{}
	requests atomic.Int64
}

func newFaultGateway(t *testing.T, h func(g *faultGateway, w http.ResponseWriter, r *http.Request)) *faultGateway {
	t.Helper()
	g := &faultGateway{closing: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		h(g, w, r)
	}))
	t.Cleanup(g.Close)
	t.Cleanup(func() { close(g.closing) }) // runs first
	return g
}

// hold blocks until the client gives up on r or the test ends.
func (g *faultGateway) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-g.closing:
	}
}

// faultAnswer writes status, content type and body.
func faultAnswer(w http.ResponseWriter, status int, contentType, body string) {
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// faultSequence answers request n (from 1) with answers[n-1] and every
// later one with the last answer.
func faultSequence(answers ...func(w http.ResponseWriter)) func(*faultGateway, http.ResponseWriter, *http.Request) {
	var mu sync.Mutex
	n := 0
	return func(_ *faultGateway, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		i := min(n, len(answers)-1)
		n++
		mu.Unlock()
		answers[i](w)
	}
}

func faultStatus(status int, header http.Header) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for k, v := range header {
			w.Header()[k] = v
		}
		faultAnswer(w, status, "application/json", `{"error":"`+http.StatusText(status)+`","message":"injected"}`)
	}
}

func faultOK(w http.ResponseWriter) { faultAnswer(w, http.StatusOK, "application/json", faultGrant) }

// faultUnavailable checks the Cause of a transport failure or timeout.
func faultUnavailable(also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		require.ErrorIs(t, cause, pep.ErrUnavailable)
		assert.NotErrorIs(t, cause, pep.ErrCircuitOpen)
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
		var re *pep.ResponseError
		assert.False(t, errors.As(cause, &re), "a transport failure is not a gateway answer: %v", cause)
	}
}

// faultResponse checks the Cause of an unusable gateway answer.
func faultResponse(status int, also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		var re *pep.ResponseError
		require.ErrorAs(t, cause, &re)
		assert.Equal(t, status, re.StatusCode)
		assert.Equal(t, status >= 500, errors.Is(cause, pep.ErrUnavailable))
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
	}
}

// redirectTarget is a second server a gateway redirects to; it would grant
// everything, and records what reached it.
type redirectTarget struct {
	*httptest.Server
	mu             sync.Mutex
	requests       int
	authorizations []string
}

func newRedirectTarget(t *testing.T) *redirectTarget {
	t.Helper()
	rt := &redirectTarget{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		rt.requests++
		if a := r.Header.Get("Authorization"); a != "" {
			rt.authorizations = append(rt.authorizations, a)
		}
		rt.mu.Unlock()
		faultOK(w)
	}))
	t.Cleanup(rt.Close)
	return rt
}

// redirectingTo answers every request with status and a Location on target.
func redirectingTo(target *redirectTarget, status int) func(*faultGateway, http.ResponseWriter, *http.Request) {
	return func(_ *faultGateway, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, status)
	}
}

func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	padding := strings.Repeat("x", 1<<20)
	type faultCase struct {
		name string
		// gateway starts the misbehaving gateway and returns its URL.
		gateway func(t *testing.T) string
		opts    []pep.Option
		// wantCause is nil for the cases that must succeed.
		wantCause    func(*testing.T, error)
		wantRequests uint64 // gateway requests the call makes, retries included
		// after runs once the call has returned.
		after func(t *testing.T)
		// deadline replaces faultDeadline for a case whose point is not
		// time: reading a megabyte under -race on a loaded machine can
		// take longer than faultDeadline, and the case would test that.
		deadline time.Duration
	}
	with := func(h func(*faultGateway, http.ResponseWriter, *http.Request)) func(t *testing.T) string {
		return func(t *testing.T) string { return newFaultGateway(t, h).URL }
	}
	answer := func(status int, contentType, body string) func(t *testing.T) string {
		return with(func(_ *faultGateway, w http.ResponseWriter, _ *http.Request) {
			faultAnswer(w, status, contentType, body)
		})
	}

	cases := []faultCase{
		{
			name: "connection refused",
			gateway: func(t *testing.T) string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				addr := ln.Addr().String()
				require.NoError(t, ln.Close())
				return "http://" + addr
			},
			wantCause:    faultUnavailable(),
			wantRequests: 3, // connection errors are retried
		},
		{
			name: "connection closed before any answer",
			gateway: with(func(_ *faultGateway, w http.ResponseWriter, _ *http.Request) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			}),
			wantCause:    faultUnavailable(),
			wantRequests: 3,
		},
		{
			name: "connection reset mid-body",
			gateway: with(func(_ *faultGateway, w http.ResponseWriter, _ *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n" +
					faultGrant[:len(faultGrant)/2])
				_ = buf.Flush()
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // close with a RST
				}
				_ = conn.Close()
			}),
			wantCause:    faultUnavailable(),
			wantRequests: 1, // the answer had begun: a body failure is not retried
		},
		{
			name: "headers slower than the deadline",
			gateway: with(func(g *faultGateway, _ http.ResponseWriter, r *http.Request) {
				g.hold(r)
			}),
			wantCause:    faultUnavailable(context.DeadlineExceeded),
			wantRequests: 1, // a timeout is not retried
		},
		{
			name: "body trickles past the deadline",
			gateway: with(func(g *faultGateway, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, faultGrant[:len(faultGrant)-1])
				rc := http.NewResponseController(w)
				_ = rc.Flush()
				tick := time.NewTicker(5 * time.Millisecond) // the gateway's pace, not the test's synchronisation
				defer tick.Stop()
				for {
					select {
					case <-r.Context().Done():
						return
					case <-g.closing:
						return
					case <-tick.C:
						if _, err := io.WriteString(w, " "); err != nil || rc.Flush() != nil {
							return
						}
					}
				}
			}),
			wantCause:    faultUnavailable(context.DeadlineExceeded),
			wantRequests: 1,
		},
		{
			name:         "body over the 1 MiB limit",
			gateway:      answer(http.StatusOK, "application/json", faultGrant[:len(faultGrant)-1]+`,"pad":"`+padding+`"}`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
			deadline:     10 * time.Second,
		},
		{
			name: "endless body",
			gateway: with(func(g *faultGateway, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"status":"GRANT","permissions":[`)
				chunk := strings.Repeat(`{"resource":"orders","scope":"read","status":"GRANT"},`, 1000)
				for {
					select {
					case <-r.Context().Done():
						return
					case <-g.closing:
						return
					default:
					}
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
			}),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			// Documented behaviour: the client decides by status and body
			// and does not check Content-Type, so a 200 whose body is a
			// valid decision is used whatever its content type.
			name:         "wrong content type with a valid decision body",
			gateway:      answer(http.StatusOK, "text/html; charset=utf-8", faultGrant),
			wantRequests: 1,
		},
		{
			name:         "no content type with a valid decision body",
			gateway:      answer(http.StatusOK, "", faultGrant),
			wantRequests: 1,
		},
		{
			name:         "HTML maintenance page with 200",
			gateway:      answer(http.StatusOK, "text/html", `<html><body>maintenance</body></html>`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			name:         "GRANT with an empty permissions list",
			gateway:      answer(http.StatusOK, "application/json", `{"status":"GRANT","permissions":[]}`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			name:         "GRANT without permissions",
			gateway:      answer(http.StatusOK, "application/json", `{"status":"GRANT"}`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			name: "conflicting duplicates",
			gateway: answer(http.StatusOK, "application/json", `{"status":"GRANT","permissions":[`+
				`{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"read","status":"DENY"}]}`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			name:         "200 with an error body",
			gateway:      answer(http.StatusOK, "application/json", `{"error":"Forbidden","message":"not allowed"}`),
			wantCause:    faultResponse(http.StatusOK, pep.ErrMalformedResponse),
			wantRequests: 1,
		},
		{
			name:         "500",
			gateway:      with(faultSequence(faultStatus(http.StatusInternalServerError, nil))),
			wantCause:    faultResponse(http.StatusInternalServerError),
			wantRequests: 1, // 500 is never retried
		},
		{
			name:         "500 with a body over the limit",
			gateway:      answer(http.StatusInternalServerError, "text/plain", padding+padding),
			deadline:     10 * time.Second,
			wantCause:    faultResponse(http.StatusInternalServerError),
			wantRequests: 1,
		},
		{
			name:         "502 after the retries",
			gateway:      with(faultSequence(faultStatus(http.StatusBadGateway, nil))),
			wantCause:    faultResponse(http.StatusBadGateway),
			wantRequests: 3,
		},
		{
			name:         "502 then success",
			gateway:      with(faultSequence(faultStatus(http.StatusBadGateway, nil), faultOK)),
			wantRequests: 2,
		},
		{
			name: "429 with Retry-After: 0, then success",
			gateway: with(faultSequence(
				faultStatus(http.StatusTooManyRequests, http.Header{"Retry-After": {"0"}}), faultOK)),
			wantRequests: 2,
		},
		{
			name:         "429 with Retry-After beyond maxWait",
			gateway:      with(faultSequence(faultStatus(http.StatusTooManyRequests, http.Header{"Retry-After": {"120"}}), faultOK)),
			opts:         []pep.Option{pep.WithRetry(2, time.Millisecond, time.Second)},
			wantCause:    faultResponse(http.StatusTooManyRequests),
			wantRequests: 1,
		},
		{
			name:         "429 with Retry-After beyond the caller's deadline",
			gateway:      with(faultSequence(faultStatus(http.StatusTooManyRequests, http.Header{"Retry-After": {"5"}}), faultOK)),
			opts:         []pep.Option{pep.WithRetry(2, time.Millisecond, 10*time.Second)},
			wantCause:    faultResponse(http.StatusTooManyRequests),
			wantRequests: 1,
		},
	}
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var target *redirectTarget
		cases = append(cases, faultCase{
			name: "redirect " + http.StatusText(status) + " to another host",
			gateway: func(t *testing.T) string {
				target = newRedirectTarget(t)
				return newFaultGateway(t, redirectingTo(target, status)).URL
			},
			wantCause:    faultResponse(status),
			wantRequests: 1,
			after: func(t *testing.T) {
				target.mu.Lock()
				defer target.mu.Unlock()
				assert.Zero(t, target.requests, "the redirect was followed")
				assert.Empty(t, target.authorizations, "the token reached another host")
			},
		})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.gateway(t)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			opts := append([]pep.Option{
				pep.WithHTTPClient(&http.Client{Transport: tr}),
				pep.WithRetry(2, time.Millisecond, 2*time.Millisecond),
			}, tc.opts...)
			c, err := pep.New(url, testRealm, testClient, opts...)
			require.NoError(t, err)
			c.SetToken(faultToken)

			deadline := faultDeadline
			if tc.deadline > 0 {
				deadline = tc.deadline
			}
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			due, _ := ctx.Deadline()
			d, err := c.Check(ctx, "orders", "read")
			returned := time.Now()

			require.NoError(t, err, "a misbehaving gateway is not the caller's error")
			assert.True(t, returned.Before(due.Add(faultMargin)),
				"returned %v after the caller's deadline", returned.Sub(due))
			assert.Equal(t, tc.wantRequests, c.Stats().GatewayRequests)
			assert.False(t, d.Cached)
			if tc.after != nil {
				tc.after(t)
			}
			if tc.wantCause == nil {
				requireGatewayDecision(t, d, pep.Grant)
				assert.Equal(t, 1, c.Stats().CacheEntries, "a gateway GRANT is cached")
				return
			}
			t.Logf("cause: %v", d.Cause)
			assert.False(t, d.Allowed())
			assert.Equal(t, pep.Deny, d.Status)
			require.Error(t, d.Cause)
			tc.wantCause(t, d.Cause)
			assert.NotContains(t, d.Cause.Error(), faultToken)
			s := c.Stats()
			assert.Zero(t, s.CacheEntries, "a fail-closed denial is never cached")
			assert.Equal(t, uint64(1), s.FailClosed)
		})
	}
}
