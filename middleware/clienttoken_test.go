package middleware_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
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
