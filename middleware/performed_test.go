package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestHeadIsCheckedAsTheGetItPerforms: net/http's ServeMux serves a HEAD
// (curl -I) with the handler of a GET route, so the middleware checks it
// as the GET it performs, and RequireFunc's function sees GET: a caller
// who may GET may HEAD, from the GET's cached decision, and a permission
// without GET gives no HEAD. The handler still sees its HEAD.
// (RequireAuthZEN: TestRequireAuthZENDecides' HEAD rows.)
func TestHeadIsCheckedAsTheGetItPerforms(t *testing.T) {
	for _, tc := range []struct {
		allowed []string
		want    int
	}{
		{[]string{http.MethodGet}, http.StatusOK},
		{[]string{http.MethodHead}, http.StatusForbidden},
		{[]string{http.MethodPost}, http.StatusForbidden},
	} {
		t.Run(tc.allowed[0], func(t *testing.T) {
			gw := mockservertest.Start(t, mockserver.WithFixture(methodShop("dan", tc.allowed...)), es256Tokens)
			client := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
			var fnSaw, handlerSaw string
			byMethod := func(r *http.Request) (string, []string) {
				fnSaw = r.Method
				if r.Method != http.MethodGet {
					return "orders", nil // names no scope: refused
				}
				return "orders", []string{"write"}
			}
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handlerSaw = r.Method
				_, _ = io.WriteString(w, "order "+r.PathValue("id"))
			})
			dan := gw.Token("shop", "dan")
			for _, guard := range []middleware.Middleware{middleware.Require(client, "orders", "write"), middleware.RequireFunc(client, byMethod)} {
				mux := http.NewServeMux()
				mux.Handle("GET /orders/{id}", guard(handler))
				serve := func(method string) int {
					req := httptest.NewRequestWithContext(t.Context(), method, "/orders/42", nil)
					req.Header.Set("Authorization", "Bearer "+dan)
					rec := httptest.NewRecorder()
					mux.ServeHTTP(rec, req)
					return rec.Code
				}
				require.Equal(t, tc.want, serve(http.MethodGet), "GET")
				asked := client.Stats().GatewayRequests
				handlerSaw = ""
				require.Equal(t, tc.want, serve(http.MethodHead), "HEAD, which the GET route serves")
				require.Equal(t, asked, client.Stats().GatewayRequests, "HEAD is the GET's question: answered from its cached decision")
				if fnSaw != "" {
					require.Equal(t, http.MethodGet, fnSaw, "RequireFunc's function sees the method checked")
				}
				if tc.want == http.StatusOK {
					require.Equal(t, http.MethodHead, handlerSaw, "the handler sees its own method")
				}
			}
		})
	}
}

// TestPathWithoutLeadingSlashIsRefusedNamingTheMount:
// http.StripPrefix("/api/", ...) leaves a path without its leading slash,
// which readers take differently (FileServer as the absolute path,
// ServeMux redirects there, other routers match nothing): Require and
// RequireAuthZEN answer 400, ask nothing, and say which mount fixes it.
func TestPathWithoutLeadingSlashIsRefusedNamingTheMount(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
	_, azc := azApp(t, gw, gw.Token("shop", "service-account-orders-api"))
	ann := gw.Token("shop", "ann")
	for name, h := range map[string]http.Handler{
		"Require":        middleware.Require(client, "orders", "read")(reached),
		"RequireAuthZEN": middleware.RequireAuthZEN(azc, headerSubject, orderTarget)(reached),
	} {
		for _, path := range []string{"/api/orders/42", "/api/"} {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
			req.Header.Set("Authorization", "Bearer "+ann)
			req.Header.Set(userHeader, "ann")
			rec := httptest.NewRecorder()
			http.StripPrefix("/api/", h).ServeHTTP(rec, req)
			require.Equalf(t, http.StatusBadRequest, rec.Code, "%s %s", name, path)
			_, msg := errorBody(t, rec.Body.String())
			require.Contains(t, msg, `http.StripPrefix("/api", ...)`)
		}
	}
	require.Zero(t, client.Stats().GatewayRequests)
	require.Zero(t, azc.Stats().PDPRequests)
}
