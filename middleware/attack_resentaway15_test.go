package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// a-fix15 F4 (middleware, WithClientToken): the service's own DPoP token
// is revoked. The gateway checks the nonce first (a 400 with a new nonce
// and a body holding a raw tab: unclear, no invalid_token), then, on the
// resend, refuses the token (401 DPoP error="invalid_token"). The client
// drops the resend's refusal for the first 400 ("only a 2xx clears an
// unclear answer"), which refuses nothing: the token is not retired, and
// every caller, with no credential at all, is served the revoked token's
// cached GRANT on the read route.
func TestAttackMiddlewareServesRevokedClientToken(t *testing.T) {
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
