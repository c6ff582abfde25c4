package pep_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/pep"
)

// fastRetry keeps retry tests quick: 2 retries, 1-2 ms apart.
var fastRetry = pep.WithRetry(2, time.Millisecond, 2*time.Millisecond)

const (
	// failDeadline is the caller's deadline in the cases of TestFailClosed
	// whose point is that deadline: their gateways hold on past it.
	failDeadline = 300 * time.Millisecond
	// failMargin is how late after its deadline a call may return: the
	// scheduling slack of a loaded machine under -race, not a performance
	// bound.
	failMargin = 2 * time.Second
	// failGuard is the caller's deadline in the other cases: a hang guard.
	// Their faults end a call without waiting for a deadline, and a short
	// one (failDeadline, as every case had) passed on a loaded machine
	// before the fault's own answer came back: a redirect or a third
	// attempt at an unreachable gateway ended as the caller's deadline.
	failGuard = time.Minute
)

// bodyHook answers every request with 200 and body.
func bodyHook(body string) gwHook {
	return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
		return true
	}
}

// TestFailClosed names every path of fail-closed rule 2 of the README (and
// 3xx, 5, 7, 10): each ends in DENY with a Cause that says why
// (ErrUnavailable for transport failures and timeouts, a *ResponseError for
// unusable answers), a nil error, nothing cached, no token in the Cause, a
// return within the caller's deadline; and the next call asks the gateway
// again. The gateway is the reference server (alice may read orders)
// wherever it can make the fault: slow decisions, a 503 for each, a 400 for
// an unknown client, a 404 for a path it does not serve; a hook in front
// of it makes the others, an address that refuses every connection
// (gatewaytest.Refusing) the unreachable one. Run it under
// the race detector. How each kind of unusable 200 is read (trailing data,
// wrong types, an error body, no permissions, statuses in another case or
// unknown, a pair listed twice or not at all) is held once, by FuzzDecode's
// seeds; the rows here keep one of each path ("unparseable body" for an
// answer refused whole, "only pairs that were not asked for" for a pair
// refused alone). Which statuses are retried is internal/transport's (TestRetrier,
// TestPostOutcomes): 503 stands here for 502 and 504.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	const asked = `{"resource":"orders","scope":"read","status":"GRANT"}`
	padding := strings.Repeat("x", 1<<20)
	type failCase struct {
		name string
		// setup returns a client holding token, with fastRetry.
		setup        func(t *testing.T) (c *pep.Client, token string)
		wantRequests uint64 // gateway requests made by one call, retries included
		wantCause    func(*testing.T, error)
		// timed says the case's point is the caller's deadline: the call
		// is made with failDeadline rather than failGuard.
		timed bool
	}
	tests := []failCase{
		{
			name: "gateway unreachable",
			setup: func(t *testing.T) (*pep.Client, string) {
				// Refused on every attempt, and no parallel test's server
				// can take the port in the meantime.
				url := "http://" + gatewaytest.Refusing(t)
				c := mustPep(t, url, testRealm, testClient, fastRetry)
				c.SetToken(faultToken)
				return c, faultToken
			},
			wantRequests: 3, // connection errors are retried
			wantCause:    wantUnavailable(),
		},
		{
			name: "connection closed before any answer",
			setup: referenceWith(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
				return true
			}),
			wantRequests: 3,
			wantCause:    wantUnavailable(),
		},
		{
			name: "connection reset mid-body",
			setup: referenceWith(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return true
				}
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n" +
					faultGrant[:len(faultGrant)/2])
				_ = buf.Flush()
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // close with a RST
				}
				_ = conn.Close()
				return true
			}),
			wantRequests: 1, // the answer had begun: a body failure is not retried
			wantCause:    wantUnavailable(),
		},
		{
			name:         "the client's timeout",
			setup:        referenceConfigured(slowDecisions, pep.WithTimeout(20*time.Millisecond)),
			wantRequests: 1, // a timeout is not retried
			wantCause:    wantUnavailable(context.DeadlineExceeded),
		},
		{
			name:         "the caller's deadline",
			setup:        referenceConfigured(slowDecisions),
			wantRequests: 1,
			wantCause:    wantUnavailable(context.DeadlineExceeded),
			timed:        true,
		},
		{
			name: "body trickles past the deadline",
			setup: referenceHeld(func(g *reference, w http.ResponseWriter, r *http.Request) {
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
			wantRequests: 1,
			wantCause:    wantUnavailable(context.DeadlineExceeded),
			timed:        true,
		},
		{
			name:         "500 is not retried",
			setup:        referenceWith(statusHook(http.StatusInternalServerError)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusInternalServerError, pep.ErrUnavailable),
		},
		{
			name: "500 with a body over the limit",
			setup: referenceWith(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				gatewaytest.Answer(http.StatusInternalServerError, "text/plain", padding+padding)(w, nil)
				return true
			}),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusInternalServerError),
		},
		{
			name:         "503 after retries",
			setup:        referenceConfigured(everyDecisionFails),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusServiceUnavailable),
		},
		{
			name:         "429 after retries",
			setup:        referenceWith(statusHook(http.StatusTooManyRequests)),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusTooManyRequests),
		},
		{
			name: "400 for an unknown client",
			setup: func(t *testing.T) (*pep.Client, string) {
				g := startReference(t)
				c := g.newClientOf(t, "no-such-client", fastRetry)
				return withAlice(t, g, c)
			},
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusBadRequest),
		},
		{
			name:         "403",
			setup:        referenceWith(statusHook(http.StatusForbidden)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusForbidden),
		},
		{
			name: "404 for a path the gateway does not serve",
			setup: func(t *testing.T) (*pep.Client, string) {
				g := startReference(t)
				c := mustPep(t, g.URL+"/no-such-prefix", testRealm, testClient, pep.WithHTTPClient(g.Client()), fastRetry)
				return withAlice(t, g, c)
			},
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusNotFound),
		},
		{
			name:         "unparseable body",
			setup:        referenceWith(bodyHook(`<html>maintenance</html>`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "only pairs that were not asked for",
			setup: referenceWith(bodyHook(`{"status":"GRANT","permissions":[` +
				`{"resource":"orders","scope":"write","status":"GRANT"},` +
				`{"resource":"order","scope":"read","status":"GRANT"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "body over the 1 MiB limit",
			// Valid JSON granting the pair, made long by whitespace.
			setup: referenceWith(bodyHook(`{"status":"GRANT","permissions":[` + asked + `]` +
				strings.Repeat(" ", 1<<20) + `}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "endless body",
			setup: referenceHeld(func(g *reference, w http.ResponseWriter, r *http.Request) {
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
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
	}
	// TestCheckRefusesCaseVariantMembers: an answer whose members another
	// reader could read otherwise (a name in another case only, two names
	// differing in case, a case-confusable letter, a duplicate inside a
	// member the client skips) is refused whole.
	for name, body := range map[string]string{
		"a status beside a non-ASCII name (long s)": `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","ſtatus":"DENY"}]}`,
		"a scope named in another case only":        `{"status":"GRANT","permissions":[{"resource":"orders","Scope":"read","status":"GRANT"}]}`,
		"two unread members differing only in case": `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","reason":"role viewer","Reason":"none"}]}`,
		"a member twice inside an unread member":    `{"status":"GRANT","permissions":[` + asked + `],"explain":{"orders":"DENY","orders":"GRANT"}}`,
	} {
		tests = append(tests, failCase{name: "TestCheckRefusesCaseVariantMembers/" + name, setup: referenceWith(bodyHook(body)),
			wantRequests: 1, wantCause: wantAnswer(http.StatusOK, pep.ErrMalformedResponse)})
	}
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		tests = append(tests, failCase{
			name:         "redirect " + http.StatusText(status) + " to another host",
			setup:        redirectingGateway(status),
			wantRequests: 1,
			wantCause:    wantAnswer(status),
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, token := tt.setup(t)
			deadline := failGuard
			if tt.timed {
				deadline = failDeadline
			}
			check := func() pep.Decision {
				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				defer cancel()
				due, _ := ctx.Deadline()
				d, err := c.Check(ctx, "orders", "read")
				returned := time.Now()
				require.NoError(t, err, "failing closed is not an error")
				assert.True(t, returned.Before(due.Add(failMargin)), "returned %v after the caller's deadline", returned.Sub(due))
				return d
			}

			d := check()
			assert.False(t, d.Allowed())
			assert.Equal(t, pep.Deny, d.Status)
			assert.False(t, d.Cached)
			require.Error(t, d.Cause)
			tt.wantCause(t, d.Cause)
			assert.NotContains(t, d.Cause.Error(), token)

			s := c.Stats()
			assert.Equal(t, tt.wantRequests, s.GatewayRequests)
			assert.Equal(t, 0, s.CacheEntries, "a fail-closed denial is never cached")
			assert.Equal(t, uint64(1), s.FailClosed)

			// The next call asks the gateway again and fails closed again.
			d = check()
			assert.False(t, d.Allowed())
			assert.False(t, d.Cached)
			assert.Equal(t, 2*tt.wantRequests, c.Stats().GatewayRequests)

			// The same holds for CheckMany.
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			r := checkedMany(t, c, ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
			assert.False(t, r.Allowed())
			assert.Equal(t, pep.Deny, r.Status)
			require.Len(t, r.Decisions, 1)
			tt.wantCause(t, r.Decisions[0].Cause)
		})
	}
}

// slowDecisions is the server configuration that holds every decision call
// for 5 s, or until the client gives up.
const slowDecisions = `{"decisionLatencyMs": 5000}`

// referenceWith returns a setup: a client of alice's on the reference
// server, with fastRetry and opts, and hook answering in the server's
// place.
func referenceWith(hook gwHook, opts ...pep.Option) func(t *testing.T) (*pep.Client, string) {
	return func(t *testing.T) (*pep.Client, string) {
		g := startReference(t)
		g.setHook(hook)
		c := g.newClient(t, append([]pep.Option{fastRetry}, opts...)...)
		return withAlice(t, g, c)
	}
}

// referenceHeld is referenceWith for a hook that answers every request and
// needs the server, to let go of a request when the test ends.
func referenceHeld(h func(g *reference, w http.ResponseWriter, r *http.Request)) func(t *testing.T) (*pep.Client, string) {
	return func(t *testing.T) (*pep.Client, string) {
		g := startReference(t)
		g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
			h(g, w, r)
			return true
		})
		c := g.newClient(t, fastRetry)
		return withAlice(t, g, c)
	}
}

// referenceConfigured returns a setup: a client of alice's on the reference
// server, configured with config, with fastRetry and opts.
func referenceConfigured(config string, opts ...pep.Option) func(t *testing.T) (*pep.Client, string) {
	return func(t *testing.T) (*pep.Client, string) {
		g := startReference(t)
		g.configure(t, config)
		c := g.newClient(t, append([]pep.Option{fastRetry}, opts...)...)
		return withAlice(t, g, c)
	}
}

// redirectingGateway answers with a redirect to a server that would grant
// everything; the test fails if that server is ever asked, or receives the
// token. The reference server never redirects: the hook does.
func redirectingGateway(status int) func(t *testing.T) (*pep.Client, string) {
	return func(t *testing.T) (*pep.Client, string) {
		target := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) { faultOK(w) }, gatewaytest.WithAuthorizations())
		t.Cleanup(func() {
			assert.Zero(t, target.Requests(), "the redirect was followed")
			assert.Empty(t, target.Authorizations(), "the token reached another host")
		})
		return referenceWith(func(w http.ResponseWriter, r *http.Request, _ int) bool {
			http.Redirect(w, r, target.URL+r.URL.Path, status)
			return true
		})(t)
	}
}

// TestContentTypeIsNotChecked: the client decides by status and body, so
// a 200 whose body is a valid decision is used whatever its content type
// says (documented behaviour).
func TestContentTypeIsNotChecked(t *testing.T) {
	t.Parallel()
	for _, contentType := range []string{"text/html; charset=utf-8", ""} {
		t.Run(contentType, func(t *testing.T) {
			t.Parallel()
			c, _ := referenceWith(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				gatewaytest.Answer(http.StatusOK, contentType, faultGrant)(w, nil)
				return true
			})(t)
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			assert.Equal(t, 1, c.Stats().CacheEntries, "a gateway GRANT is cached")
		})
	}
}

func TestCancelledContextFailsClosedWithoutRequest(t *testing.T) {
	t.Parallel()
	g, c := startWithAlice(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := checkedIn(t, c, ctx, "orders", "read")
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	require.ErrorIs(t, d.Cause, context.Canceled)
	assert.Zero(t, c.Stats().GatewayRequests)
	assert.Equal(t, 0, g.count())
}

// withAlice gives c alice's token of g, and returns both.
func withAlice(t *testing.T, g *reference, c *pep.Client) (*pep.Client, string) {
	token := g.token(t, "alice")
	c.SetToken(token)
	return c, token
}
