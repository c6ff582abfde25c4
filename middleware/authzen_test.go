package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// userHeader names the caller in these tests, as an authenticating proxy
// in front of the service would.
const userHeader = "X-Authenticated-User"

func headerSubject(r *http.Request) (authzen.Subject, error) {
	u := r.Header.Get(userHeader)
	if u == "" {
		return authzen.Subject{}, errors.New("no authenticated user")
	}
	return authzen.Subject{Type: "user", ID: u}, nil
}

// orderTarget maps GET to read, POST to write and DELETE to delete, on the
// order named by the path.
func orderTarget(r *http.Request) (authzen.Action, authzen.Resource) {
	scope := map[string]string{http.MethodGet: "read", http.MethodPost: "write", http.MethodDelete: "delete"}[r.Method]
	return authzen.Action{Name: scope}, authzen.Resource{Type: "orders", ID: r.PathValue("id")}
}

// azApp is the shop's orders service behind RequireAuthZEN, whose PDP is
// the reference server's AuthZEN API; pepToken is the service's own
// credential ("" for none).
func azApp(t *testing.T, gw *mockservertest.Server, pepToken string, opts ...middleware.Option) (http.Handler, *authzen.Client) {
	t.Helper()
	c := testkit.Must(hangguard.NewAuthZEN(gw.URL+"/realms/shop", authzen.WithRetry(0, 0, 0), authzen.WithBreaker(0, 0), authzen.WithCache(0, 0, 0)))(t)
	if pepToken != "" {
		c.SetToken(pepToken)
	}
	mux := http.NewServeMux()
	mux.Handle("/orders/{id}", middleware.RequireAuthZEN(c, headerSubject, orderTarget, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := middleware.AuthZENDecisionFromContext(r.Context())
		require.True(t, ok)
		require.True(t, d.Allowed())
		_, _ = io.WriteString(w, "order "+r.PathValue("id"))
	})))
	return mux, c
}

func azServe(h http.Handler, method, path, user string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestRequireAuthZENDecides: the PDP's decisions, per caller and method,
// over real HTTP; a caller who cannot be named is 401 and sends nothing.
func TestRequireAuthZENDecides(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	h, c := azApp(t, gw, gw.Token("shop", "service-account-orders-api"))
	cases := []struct {
		name, method, path, user string
		status                   int
	}{
		{"viewer reads", http.MethodGet, "/orders/1", "ann", 200},
		{"viewer may not write", http.MethodPost, "/orders/1", "ann", 403},
		{"nobody", http.MethodGet, "/orders/1", "ben", 403},
		{"manager deletes with DELETE", http.MethodDelete, "/orders/1", "cat", 200},
		{"unknown user", http.MethodGet, "/orders/1", "zed", 403},
		{"unmapped method", http.MethodPut, "/orders/1", "cat", 403},
		{"HEAD is the GET it performs, to the target function too", http.MethodHead, "/orders/1", "ann", 200},
		{"HEAD needs what GET needs", http.MethodHead, "/orders/1", "ben", 403},
		{"dot segments", http.MethodGet, "/orders/%2e%2e", "ann", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := azServe(h, tc.method, tc.path, tc.user)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
		})
	}
	before := c.Stats().PDPRequests
	rec := azServe(h, http.MethodGet, "/orders/1", "")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, before, c.Stats().PDPRequests, "no caller, no PDP request")
}

// TestRequireAuthZENFailsClosed: an outage of the PDP gets the unavailable
// answer, and so does the service's own refused or missing credential:
// none lets a request through.
func TestRequireAuthZENFailsClosed(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	unavailable := middleware.WithUnavailableHandler(middleware.ServiceUnavailable(5 * time.Second))
	pep := gw.Token("shop", "service-account-orders-api")

	t.Run("outage", func(t *testing.T) {
		h, c := azApp(t, gw, pep, unavailable)
		require.NoError(t, c.Discover(t.Context()))
		gw.SetFaults(mockservertest.Faults{DecisionFailureRate: 1})
		defer gw.SetFaults(mockservertest.Faults{})
		rec := azServe(h, http.MethodGet, "/orders/1", "ann")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.Equal(t, "5", rec.Header().Get("Retry-After"))
		h403, _ := azApp(t, gw, pep)
		require.Equal(t, http.StatusForbidden, azServe(h403, http.MethodGet, "/orders/1", "ann").Code, "403 by default")
	})
	t.Run("the service's token refused", func(t *testing.T) {
		h, _ := azApp(t, gw, gw.Token("shop", "service-account-orders-api", mockserver.TokenLifetime(-time.Minute)), unavailable)
		require.Equal(t, http.StatusServiceUnavailable, azServe(h, http.MethodGet, "/orders/1", "ann").Code)
	})
	t.Run("a user's token as the service's", func(t *testing.T) {
		h, _ := azApp(t, gw, gw.Token("shop", "ann"), unavailable)
		require.Equal(t, http.StatusForbidden, azServe(h, http.MethodGet, "/orders/1", "ann").Code, "the PDP's 403 is a denial")
	})
	t.Run("no token", func(t *testing.T) {
		h, _ := azApp(t, gw, "", unavailable)
		require.Equal(t, http.StatusServiceUnavailable, azServe(h, http.MethodGet, "/orders/1", "ann").Code)
	})
}

// TestRequireAuthZENWiring: mistakes panic when the handler is built, and
// With works on RequireAuthZEN.
func TestRequireAuthZENWiring(t *testing.T) {
	t.Parallel()
	c := testkit.Must(hangguard.NewAuthZEN("https://pdp.example.com"))(t)
	require.PanicsWithValue(t, "middleware: the Evaluator is nil", func() { middleware.RequireAuthZEN(nil, headerSubject, orderTarget) })
	require.PanicsWithValue(t, "middleware: the subject function is nil; the target function is nil", func() { middleware.RequireAuthZEN(c, nil, nil) })
	m := middleware.RequireAuthZEN(c, headerSubject, orderTarget).With(middleware.WithUnauthorizedHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))
	require.Equal(t, http.StatusTeapot, azServe(m(http.NotFoundHandler()), http.MethodGet, "/orders/1", "").Code)
}
