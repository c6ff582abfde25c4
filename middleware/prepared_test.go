package middleware_test

// Require's prepared route (fastcheck.Prepare) against the per-request
// question (RequireFunc, CheckMany), with names and paths chosen to break
// the key's constant start: JSON-escapable and non-ASCII bytes, names whose
// lengths run together, keys on both sides of the route's 128-byte stack
// buffer and of the 512-byte exact context, two guards on one client,
// purges, ClearToken and SetToken.

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// Names that run together: ("ab","c") and ("a","bc") share their bytes.
var preparedLong = strings.Repeat("r", 100)

var preparedFixture = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  "odd",
	Roles: []mockserver.FixtureRole{{Name: "r1"}, {Name: "r2"}},
	Users: []mockserver.FixtureUser{
		{Username: "uno", Roles: []string{"r1"}},
		{Username: "dos", Roles: []string{"r2"}},
	},
	Clients: []mockserver.FixtureClient{{
		ClientID: "odd-api", Secret: "s3cret",
		Resources: []mockserver.FixtureResource{
			{Name: "ab", Scopes: []string{"c"}},
			{Name: "a", Scopes: []string{"bc"}},
			{Name: `q"u<o>&t\e`, Scopes: []string{"r\u00e9ad", "wr\"ite"}},
			{Name: "\u00fcn\u00efc\u00f6de\u2028", Scopes: []string{"read"}},
			{Name: preparedLong, Scopes: []string{"s", strings.Repeat("t", 20)}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "p1", Resource: "ab", Scopes: []string{"c"}, Roles: []string{"r1"}},
			{Name: "p2", Resource: "a", Scopes: []string{"bc"}, Roles: []string{"r2"}},
			{Name: "p3", Resource: `q"u<o>&t\e`, Scopes: []string{"r\u00e9ad"}, Roles: []string{"r1"}},
			{Name: "p4", Resource: `q"u<o>&t\e`, Scopes: []string{"wr\"ite"}, Roles: []string{"r2"}},
			{Name: "p5", Resource: "\u00fcn\u00efc\u00f6de\u2028", Scopes: []string{"read"}, Roles: []string{"r1"}, Methods: []string{"GET"}},
			{Name: "p6", Resource: preparedLong, Scopes: []string{"s"}, Roles: []string{"r1"}},
			{Name: "p7", Resource: preparedLong, Scopes: []string{strings.Repeat("t", 20)}, Roles: []string{"r2"}},
		},
	}},
}}}

// TestPreparedRouteMatchesCheckMany serves the same requests through
// Require (prepared route), RequireFunc (per-request question) and a
// Checker hidden behind another type (CheckMany), each with a client of
// its own, and requires the same status after every step, on every
// guard of one client sharing one cache: a route served another route's,
// another path's or another token's decision would differ.
func TestPreparedRouteMatchesCheckMany(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(preparedFixture), es256Tokens)
	toks := map[string]string{"uno": gw.Token("odd", "uno"), "dos": gw.Token("odd", "dos")}
	type route struct {
		resource string
		scopes   []string
	}
	routes := []route{
		{"ab", []string{"c"}},
		{"a", []string{"bc"}},
		{`q"u<o>&t\e`, []string{"r\u00e9ad"}},
		{`q"u<o>&t\e`, []string{"wr\"ite"}},
		{`q"u<o>&t\e`, []string{"r\u00e9ad", "wr\"ite", "r\u00e9ad"}},
		{"\u00fcn\u00efc\u00f6de\u2028", []string{"read"}},
		{preparedLong, []string{"s"}},
		{preparedLong, []string{strings.Repeat("t", 20)}},
		{preparedLong, []string{"s", strings.Repeat("t", 20)}},
	}
	kinds := []struct {
		name  string
		guard func(c *pep.Client, rt route) middleware.Middleware
	}{
		{"Require", func(c *pep.Client, rt route) middleware.Middleware {
			return middleware.Require(c, rt.resource, rt.scopes...)
		}},
		{"RequireFunc", func(c *pep.Client, rt route) middleware.Middleware {
			return middleware.RequireFunc(c, middleware.Static(rt.resource, rt.scopes...))
		}},
		{"CheckMany", func(c *pep.Client, rt route) middleware.Middleware {
			return middleware.Require(viaCheckMany{c}, rt.resource, rt.scopes...)
		}},
	}
	type guarded struct {
		c  *pep.Client
		hs []http.Handler
	}
	gs := make([]guarded, len(kinds))
	for k, kind := range kinds {
		gs[k].c = newPep(t, gw, "odd", "odd-api")
		for _, rt := range routes {
			gs[k].hs = append(gs[k].hs, kind.guard(gs[k].c, rt)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		}
	}
	// Paths around the route's stack key (128 bytes with its start) and
	// the exact context (512 bytes of JSON); escapable and non-ASCII ones.
	var paths []string
	for _, n := range []int{1, 40, 60, 70, 80, 90, 100, 470, 475, 480, 485, 490, 495, 500} {
		paths = append(paths, "/"+strings.Repeat("p", n))
	}
	paths = append(paths, "/a%22b", "/%3C%3E%26", "/\u00fc/\u2028", "/x y")
	methods := []string{"GET", "POST", "DELETE"}
	step := 0
	codes := map[int]int{}
	serve := func(user, method, path string) {
		for r := range routes {
			var got []int
			for k := range kinds {
				req := httptest.NewRequestWithContext(t.Context(), method, "/", nil)
				req.URL.Path = path
				req.Header.Set("Authorization", "Bearer "+toks[user])
				w := httptest.NewRecorder()
				gs[k].hs[r].ServeHTTP(w, req)
				got = append(got, w.Code)
			}
			require.Equal(t, []int{got[2], got[2], got[2]}, got,
				"step %d: %s %s %q as %s: Require, RequireFunc, CheckMany differ", step, method, path, routes[r], user)
			codes[got[0]]++
			step++
		}
	}
	for round := range 2 { // the second round is answered from the cache
		for _, user := range []string{"uno", "dos"} {
			for _, m := range methods {
				for _, p := range paths {
					serve(user, m, p)
				}
			}
		}
		_ = round
	}
	t.Logf("statuses: %v", codes)
	require.NotZero(t, codes[http.StatusOK])
	require.NotZero(t, codes[http.StatusForbidden])
	for k := range kinds {
		require.Equal(t, gs[2].c.Stats().GatewayRequests, gs[k].c.Stats().GatewayRequests, "%s asked the gateway otherwise", kinds[k].name)
		require.Equal(t, gs[2].c.Stats().CacheHits, gs[k].c.Stats().CacheHits, "%s hit the cache otherwise", kinds[k].name)
	}
}

// TestPreparedRouteForgetsWhatTheClientForgets: a GRANT the prepared
// route read from the cache is not served after Purge of its token,
// PurgeAll, ClearToken of the client's own token, or SetToken of another
// user's token.
func TestPreparedRouteForgetsWhatTheClientForgets(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(preparedFixture), es256Tokens)
	c := newPep(t, gw, "odd", "odd-api")
	own := newPep(t, gw, "odd", "odd-api")
	uno, dos := gw.Token("odd", "uno"), gw.Token("odd", "dos")

	caller := middleware.Require(c, "ab", "c")(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	owned := middleware.Require(own, "ab", "c").With(middleware.WithClientToken())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func(h http.Handler, tok string) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/x", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	require.Equal(t, 200, serve(caller, uno))
	require.Equal(t, 200, serve(caller, uno))
	n := c.Stats().GatewayRequests
	require.NoError(t, c.Purge(t.Context(), uno))
	require.Equal(t, 200, serve(caller, uno))
	require.Equal(t, n+1, c.Stats().GatewayRequests, "a purged token's GRANT was served from the cache")
	require.NoError(t, c.PurgeAll(t.Context()))
	require.Equal(t, 200, serve(caller, uno))
	require.Equal(t, n+2, c.Stats().GatewayRequests, "a GRANT was served from the cache after PurgeAll")
	require.Equal(t, 403, serve(caller, dos), "another token got uno's GRANT")

	own.SetToken(uno)
	require.Equal(t, 200, serve(owned, ""))
	require.Equal(t, 200, serve(owned, ""))
	own.ClearToken()
	require.NotEqual(t, 200, serve(owned, ""), "a GRANT served after ClearToken")
	own.SetToken(dos)
	require.Equal(t, 403, serve(owned, ""), "dos got uno's cached GRANT after SetToken")
	own.SetToken(uno)
	require.Equal(t, 200, serve(owned, ""))
}
