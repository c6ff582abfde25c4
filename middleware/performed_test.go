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
// as the GET it performs: a caller who may GET may HEAD, from the GET's
// cached decision, and a permission without GET gives no HEAD.
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
			mux := http.NewServeMux()
			mux.Handle("GET /orders/{id}", middleware.Require(client, "orders", "write")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "order "+r.PathValue("id"))
			})))
			dan := gw.Token("shop", "dan")
			serve := func(method string) int {
				req := httptest.NewRequestWithContext(t.Context(), method, "/orders/42", nil)
				req.Header.Set("Authorization", "Bearer "+dan)
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, req)
				return rec.Code
			}
			require.Equal(t, tc.want, serve(http.MethodGet), "GET")
			asked := client.Stats().GatewayRequests
			require.Equal(t, tc.want, serve(http.MethodHead), "HEAD, which the GET route serves")
			require.Equal(t, asked, client.Stats().GatewayRequests, "HEAD is the GET's question: answered from its cached decision")
		})
	}
}

// TestRelativePathIsCheckedAsTheAbsoluteOne: http.StripPrefix("/api/",
// ...), net/http's own idiom, leaves a path without its leading slash,
// which ServeMux and FileServer serve as the absolute path: the middleware
// checks it as that (the same question as the absolute path's), with the
// same canonical-form rules, and still refuses "*".
func TestRelativePathIsCheckedAsTheAbsoluteOne(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
	guard := middleware.Require(client, "orders", "read")(reached)
	ann := gw.Token("shop", "ann")
	serve := func(h http.Handler, path string) answer {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		req.URL.Path = path
		req.Header.Set("Authorization", "Bearer "+ann)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return answer{status: rec.Code, body: rec.Body.String()}
	}
	stripped := http.StripPrefix("/api/", guard)
	got := serve(stripped, "/api/orders/42")
	require.Equal(t, http.StatusOK, got.status, got.body)
	asked := client.Stats().GatewayRequests
	require.Equal(t, http.StatusOK, serve(guard, "/orders/42").status)
	require.Equal(t, asked, client.Stats().GatewayRequests, "orders/42 was checked as /orders/42: the same cached question")
	require.Equal(t, http.StatusOK, serve(stripped, "/api/").status, "the empty path is checked as /")

	for _, path := range []string{"/api/orders/./42", "/api/../orders/42", "/api/orders//42", "/api/./orders"} {
		got := serve(stripped, path)
		require.Equalf(t, http.StatusBadRequest, got.status, "%s: %s", path, got.body)
	}
	require.Equal(t, http.StatusBadRequest, serve(guard, "*").status, "OPTIONS * names no resource's path")
}
