package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestCachedRequestAllocatesLittle serves a request whose decision the
// client has cached, against the reference server, and counts what the
// middleware allocates on top of the handler alone: the request copy that
// carries the decision and its new context, in one allocation (two, the
// context and the copy, before they were made one). It used to build the
// token's context, the option, the resources slice and the request
// context's JSON per request: 15 to 17 more.
func TestCachedRequestAllocatesLittle(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := newPep(t, gw, "shop", "orders-api")
	own := newPep(t, gw, "shop", "orders-api")
	tok := gw.Token("shop", "ann")
	own.SetToken(tok)

	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/42", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	allocs := func(h http.Handler) float64 {
		serve := func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		}
		serve() // the decision is cached from here on
		return testing.AllocsPerRun(100, serve)
	}
	handler := allocs(orderHandler)
	tests := []struct {
		name string
		h    http.Handler
	}{
		{"the caller's token", middleware.Require(client, "orders", "read")(orderHandler)},
		{"the client's own token", middleware.Require(own, "orders", "read").With(middleware.WithClientToken())(orderHandler)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			protected := allocs(tt.h)
			t.Logf("handler %.0f allocations, protected %.0f", handler, protected)
			assert.LessOrEqual(t, protected-handler, 1.0)
		})
	}
	assert.Equal(t, uint64(1), client.Stats().GatewayRequests, "one request, then the cache")
}

// viaCheckMany hides a *pep.Client behind another type, so that the
// middleware asks it through CheckMany, as it asks any Checker.
type viaCheckMany struct{ *pep.Client }

// TestFastPathAnswersAndCountsAsCheckMany sends the same requests through
// two clients of the reference server, one asked the way the middleware
// asks a *pep.Client and one through the public CheckMany, and requires
// the same answers, the same decisions in the handler's context and the
// same counters, cache misses and hits included: with RequireFunc, whose
// function pep is asked about per request, and with Require, whose
// question pep prepares once (its pairs and the constant part of their
// cache keys) and whose one-pair hits it counts as Check's.
func TestFastPathAnswersAndCountsAsCheckMany(t *testing.T) {
	for _, tc := range []struct {
		name  string
		guard func(c middleware.Checker, scopes []string) middleware.Middleware
	}{
		{"RequireFunc", func(c middleware.Checker, scopes []string) middleware.Middleware {
			return middleware.RequireFunc(c, middleware.Static("orders", scopes...))
		}},
		{"Require", func(c middleware.Checker, scopes []string) middleware.Middleware {
			return middleware.Require(c, "orders", scopes...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { fastPathAnswersAndCounts(t, tc.guard) })
	}
}

func fastPathAnswersAndCounts(t *testing.T, guard func(middleware.Checker, []string) middleware.Middleware) {
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	newClient := func() *pep.Client {
		c := newPep(t, gw, "shop", "orders-api")
		return c
	}
	fast, slow := newClient(), newClient()
	tokens := map[string]string{"ann": gw.Token("shop", "ann"), "cat": gw.Token("shop", "cat")}
	type seen struct {
		status  int
		decided bool
		res     pep.Result
	}
	serve := func(c middleware.Checker, user, method, path string, scopes ...string) seen {
		var s seen
		h := guard(c, scopes)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.res, s.decided = middleware.DecisionFromContext(r.Context())
		}))
		h = middleware.Middleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r)
				if !s.decided { // a refusal: its handler reads the context too
					s.res, s.decided = middleware.DecisionFromContext(r.Context())
				}
			})
		})(h)
		req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		if user != "" {
			req.Header.Set("Authorization", "Bearer "+tokens[user])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		s.status = w.Code
		return s
	}
	steps := []struct {
		user, method, path string
		scopes             []string
	}{
		{"ann", "GET", "/orders/1", []string{"read"}},          // miss, GRANT
		{"ann", "GET", "/orders/1", []string{"read"}},          // hit
		{"ann", "GET", "/orders/1", []string{"read", "read"}},  // a repeated scope is asked once
		{"ann", "GET", "/orders/2", []string{"read"}},          // another path is another context
		{"ann", "PUT", "/orders/1", []string{"read", "write"}}, // miss, DENY for write
		{"ann", "PUT", "/orders/1", []string{"read", "write"}}, // both cached
		{"cat", "PUT", "/orders/1", []string{"read", "write"}}, // another token shares nothing
		{"cat", "DELETE", "/orders/1", []string{"delete"}},
		{"cat", "POST", "/orders/1", []string{"delete", "read"}}, // one cached, one not
		{"", "GET", "/orders/1", []string{"read"}},               // no token: never asked
		// keys longer than a lookup builds on its stack, and a request
		// context keyed by its digest: a miss, then a hit, each
		{"ann", "GET", "/orders/" + strings.Repeat("k", 150), []string{"read"}},
		{"ann", "GET", "/orders/" + strings.Repeat("k", 150), []string{"read"}},
		{"ann", "GET", "/orders/" + strings.Repeat("d", 600), []string{"read", "write"}},
		{"ann", "GET", "/orders/" + strings.Repeat("d", 600), []string{"read", "write"}},
	}
	for i, st := range steps {
		got := serve(fast, st.user, st.method, st.path, st.scopes...)
		want := serve(viaCheckMany{slow}, st.user, st.method, st.path, st.scopes...)
		require.Equal(t, want, got, "step %d: %+v", i, st)
		f, s := fast.Stats(), slow.Stats()
		require.Equal(t, s, f, "step %d: %+v", i, st)
	}
	assert.NotZero(t, fast.Stats().CacheHits)
}

// TestBearerTokenMatchesTheGrammar compares BearerToken's reading of
// tokens, at every length around the eight bytes it checks at a step and
// with every byte in every position, with RFC 6750's b64token grammar.
func TestBearerTokenMatchesTheGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)
	// One request for the 100,000 tokens, its header set anew for each:
	// BearerToken reads only the header.
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	check := func(tok string) {
		t.Helper()
		r.Header.Set("Authorization", "Bearer "+tok)
		got, err := middleware.BearerToken(r)
		if grammar.MatchString(tok) {
			if err != nil || got != tok {
				t.Fatalf("BearerToken refused the b64token %q: %v", tok, err)
			}
			return
		}
		if err == nil {
			t.Fatalf("BearerToken took %q, which is not a b64token", tok)
		}
	}
	base := "abcdefghijklmnopqrstu-._~+/XYZ0189"
	for n := 1; n <= 20; n++ {
		for pos := range n {
			for c := range 256 {
				if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0 {
					continue // cut or refused by the header itself
				}
				b := []byte(base[:n])
				b[pos] = byte(c)
				check(string(b))
				check(string(b) + "==")
			}
		}
		check(base[:n] + "=")
		check(base[:n] + "=a")
		check("=" + base[:n])
	}
}
