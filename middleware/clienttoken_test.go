package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestClientTokenClearedIsNoDecision: a service that checks with its own
// token refreshes it as ClearToken then SetToken. A request that arrives
// in between, when the client has no token, is not the caller's doing
// and not a server error: it gets the unavailable answer (403 by default,
// what WithUnavailableHandler picks otherwise: 503 here), never 500 and
// never 401, and the protected handler does not run. Once the token is
// set again, requests go through. The same for Require with
// WithClientToken (pep) and for RequireAuthZEN, whose credential is the
// PEP's own.
func TestClientTokenClearedIsNoDecision(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	for _, tc := range []struct {
		name string
		// protect returns h behind the middleware under test, with opts,
		// and functions that clear and set the service's own token.
		protect func(t *testing.T, h http.Handler, opts ...middleware.Option) (guarded http.Handler, clear, set func())
	}{
		{"Require with WithClientToken", func(t *testing.T, h http.Handler, opts ...middleware.Option) (http.Handler, func(), func()) {
			c := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
			token := gw.Token("shop", "ann") // the service's own: may read orders
			c.SetToken(token)
			mw := middleware.Require(c, "orders", "read").With(append([]middleware.Option{middleware.WithClientToken()}, opts...)...)
			return mw(h), c.ClearToken, func() { c.SetToken(token) }
		}},
		{"RequireAuthZEN", func(t *testing.T, h http.Handler, opts ...middleware.Option) (http.Handler, func(), func()) {
			c, err := hangguard.NewAuthZEN(gw.URL+"/realms/shop", authzen.WithHTTPClient(gw.Client()), authzen.WithCache(0, 0, 0))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			token := gw.Token("shop", "service-account-orders-api")
			c.SetToken(token)
			mw := middleware.RequireAuthZEN(c, headerSubject, orderTarget, opts...)
			return mw(h), c.ClearToken, func() { c.SetToken(token) }
		}},
	} {
		for _, answer := range []struct {
			name   string
			opts   []middleware.Option
			status int
		}{
			{"by default", nil, http.StatusForbidden},
			{"with ServiceUnavailable", []middleware.Option{middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second))}, http.StatusServiceUnavailable},
		} {
			t.Run(tc.name+"/"+answer.name, func(t *testing.T) {
				t.Parallel()
				ran := 0
				guarded, clearToken, setToken := tc.protect(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					ran++
					_, _ = io.WriteString(w, "order 1")
				}), answer.opts...)
				h := http.NewServeMux()
				h.Handle("/orders/{id}", guarded)

				rec := azServe(h, http.MethodGet, "/orders/1", "ann")
				require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

				clearToken()
				rec = azServe(h, http.MethodGet, "/orders/1", "ann")
				assert.Equal(t, answer.status, rec.Code, "the service without its token")
				assert.Empty(t, rec.Header().Get("WWW-Authenticate"), "not the caller's token at fault")
				errorBody(t, rec.Body.String())
				assert.Equal(t, 1, ran, "the protected handler ran without a decision")

				setToken()
				rec = azServe(h, http.MethodGet, "/orders/1", "ann")
				require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			})
		}
	}
}

// TestRevokedClientTokenIsRefusedThroughANonceResend: a-fix15 F4
// (middleware, WithClientToken). The service's own DPoP token
// is revoked. The gateway checks the nonce first (a 400 with a new nonce
// and a body holding a raw tab: unclear, no invalid_token), then, on the
// resend, refuses the token (401 DPoP error="invalid_token"). The client
// drops the resend's refusal for the first 400 ("only a 2xx clears an
// unclear answer"), which refuses nothing: the token is not retired, and
// every caller, with no credential at all, is served the revoked token's
// cached GRANT on the read route. A resent answer keeps the more severe
// reading: the resend's refusal retires the token.
func TestRevokedClientTokenIsRefusedThroughANonceResend(t *testing.T) {
	t.Parallel()
	var revoked atomic.Bool
	var sent atomic.Int32
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !revoked.Load() {
			_, _ = io.WriteString(w, `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`)
			return
		}
		if !strings.Contains(string(body), "write") || sent.Add(1) > 1 {
			w.Header().Set("WWW-Authenticate", `DPoP algs="ES256", error="invalid_token", error_description="revoked"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_token"}`)
			return
		}
		w.Header().Set("DPoP-Nonce", "n-1")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "{\"error\":\"Bad Request\",\"message\":\"nonce\trequired\"}")
	})
	c := testkit.Must(hangguard.NewPep(g.URL, "shop", "orders-api", pep.WithHTTPClient(g.Client()), pep.WithRetry(0, 0, 0)))(t)
	t.Cleanup(func() { _ = c.Close() })
	c.SetDPoPToken("service-dpop-token", testkit.Must(dpop.GenerateKey())(t))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "order 1") })
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", middleware.Require(c, "orders", "read").With(middleware.WithClientToken())(ok))
	mux.Handle("POST /orders/{id}", middleware.Require(c, "orders", "write").With(middleware.WithClientToken())(ok))
	do := func(method string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, "/orders/1", nil))
		return rec.Code
	}
	require.Equal(t, http.StatusOK, do(http.MethodGet))

	revoked.Store(true)
	assert.NotEqual(t, http.StatusOK, do(http.MethodPost))
	require.Equal(t, int32(2), sent.Load(), "the write was resent once, and its resend refused the token")
	assert.NotEqual(t, http.StatusOK, do(http.MethodGet), "the revoked service token's cached GRANT is served to an anonymous caller")
}
