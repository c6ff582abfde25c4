package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// A request whose caller gave up (cancelled, or its deadline passed) is
// never handed to the protected handler, even when the client grants it
// from its cache, which reads neither: it gets the outage answer (the
// unavailable handler), as when it gave up before the decision came. Both
// guards, Require(Func)'s and RequireAuthZEN's (and the adapters that run them).
// (The handler used to run for such a request on a cached grant.)
func TestGaveUpCallerIsNeverHandedOver(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	az, err := hangguard.NewAuthZEN(gw.URL+"/realms/shop", authzen.WithRetry(0, 0, 0), authzen.WithBreaker(0, 0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = az.Close() })
	az.SetToken(gw.Token("shop", "service-account-orders-api"))

	unavailable := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	guards := []struct {
		name    string
		m       middleware.Middleware
		request func(*http.Request)
	}{
		{"RequireFunc", middleware.RequireFunc(env.Client, func(*http.Request) (string, []string) { return "orders", []string{"read"} },
			middleware.WithUnavailableHandler(unavailable)),
			func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+env.Tokens["ann"]) }},
		{"RequireAuthZEN", middleware.RequireAuthZEN(az, headerSubject,
			func(*http.Request) (authzen.Action, authzen.Resource) {
				return authzen.Action{Name: "read"}, authzen.Resource{Type: "orders", ID: "1"}
			}, middleware.WithUnavailableHandler(unavailable)),
			func(r *http.Request) { r.Header.Set(userHeader, "ann") }},
	}
	for _, g := range guards {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			ran := 0
			h := g.m(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				ran++
				w.WriteHeader(http.StatusOK)
			}))
			serve := func(ctx context.Context) int {
				r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/orders/1", nil)
				g.request(r)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			require.Equal(t, http.StatusOK, serve(t.Context()), "granted, and cached")
			require.Equal(t, 1, ran)

			cancelled, cancel := context.WithCancel(t.Context())
			cancel()
			expired, cancelExpired := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancelExpired)
			for _, tc := range []struct {
				name string
				ctx  context.Context
			}{{"cancelled", cancelled}, {"deadline passed", expired}} {
				t.Run(tc.name, func(t *testing.T) {
					require.Equal(t, http.StatusServiceUnavailable, serve(tc.ctx), "the outage answer")
					require.Equal(t, 1, ran, "the handler never runs for a caller who gave up")
				})
			}
			require.Equal(t, http.StatusOK, serve(t.Context()), "a caller who waits is served")
		})
	}
}
