package pep_test

// A question holding a string that is not valid UTF-8 is refused before
// anything is sent, cached or coalesced (a-dpop9 F2b): encoding/json would
// send it as another question, U+FFFD for each invalid byte, and the cache
// would serve that question's answer for every spelling coerced alike.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/fastcheck"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// notUTF8 is a string that is not valid UTF-8, as the attacker sent it.
const notUTF8 = "/orders/\xff"

// TestQuestionsNotValidUTF8AreRefused: for every string a question
// carries, through Check, CheckMany, ListGranted and the middleware's
// fast path, a value that is not valid UTF-8 is refused with
// ErrInvalidArgument and an error naming the field, and nothing reaches
// the reference server or the cache.
func TestQuestionsNotValidUTF8AreRefused(t *testing.T) {
	t.Parallel()
	g, c := startWithAlice(t)
	ctx := func(rc pep.RequestContext) pep.CallOption { return pep.WithRequestContext(rc) }
	check := func(resource, scope string, opts ...pep.CallOption) func() error {
		return func() error {
			d, err := c.Check(t.Context(), resource, scope, opts...)
			assert.False(t, d.Allowed())
			return err
		}
	}
	checkMany := func(rs []pep.Resource, opts ...pep.CallOption) func() error {
		return func() error {
			res, err := c.CheckMany(t.Context(), rs, opts...)
			assert.False(t, res.Allowed())
			return err
		}
	}
	list := func(rs []pep.Resource, opts ...pep.CallOption) func() error {
		return func() error {
			perms, err := c.ListGranted(t.Context(), rs, opts...)
			assert.Empty(t, perms)
			return err
		}
	}
	fast := func(q fastcheck.Query) func() error {
		return func() error {
			q.Own = true
			var res pep.Result
			err := fastcheck.Check(t.Context(), c, q, &res)
			assert.False(t, res.Allowed())
			return err
		}
	}
	route := func(resource string, scopes ...string) any {
		rt := fastcheck.Prepare(resource, scopes)
		assert.Nil(t, rt, "a route was made of names JSON cannot carry")
		return rt
	}
	orders := []pep.Resource{{Name: "orders", Scopes: []string{"read"}}}
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"Check resource", check("orders\xff", "read"), "the resource name is not valid UTF-8"},
		{"Check scope", check("orders", "read\xfe"), "the scope is not valid UTF-8"},
		{"Check resource with a context", check("\xe2\x82", "read", ctx(pep.RequestContext{Method: "GET"})), "the resource name is not valid UTF-8"},
		{"request context method", check("orders", "read", ctx(pep.RequestContext{Method: "GE\xffT"})), "the request context's Method is not valid UTF-8"},
		{"request context path", check("orders", "read", ctx(pep.RequestContext{Method: "GET", Path: notUTF8})), "the request context's Path is not valid UTF-8"},
		{"request context body", check("orders", "read", ctx(pep.RequestContext{Body: "{\"a\":\"\xff\"}"})), "the request context's Body is not valid UTF-8"},
		{"request context header name", check("orders", "read", ctx(pep.RequestContext{Headers: map[string]string{"X-\xff": "1"}})), "a header name of the request context is not valid UTF-8"},
		{"request context header value", check("orders", "read", ctx(pep.RequestContext{Headers: map[string]string{"X-Tenant": "e\xffu"}})), "a header value of the request context is not valid UTF-8"},
		{"CheckMany resource", checkMany([]pep.Resource{orders[0], {Name: "inv\xffoices", Scopes: []string{"read"}}}), "resource 1's name is not valid UTF-8"},
		{"CheckMany scope", checkMany([]pep.Resource{{Name: "orders", Scopes: []string{"read", "wr\xffite"}}}), "resource 0 has a scope that is not valid UTF-8"},
		{"CheckMany request context", checkMany(orders, ctx(pep.RequestContext{Path: notUTF8})), "the request context's Path is not valid UTF-8"},
		{"ListGranted resource", list([]pep.Resource{{Name: "orders\xff"}}), "resource 0's name is not valid UTF-8"},
		{"ListGranted scope", list([]pep.Resource{{Name: "*", Scopes: []string{"\xff"}}}), "resource 0 has a scope that is not valid UTF-8"},
		{"ListGranted request context", list(nil, ctx(pep.RequestContext{Method: "GET", Path: notUTF8})), "the request context's Path is not valid UTF-8"},
		{"middleware resource", fast(fastcheck.Query{Resource: "orders\xff", Scopes: []string{"read"}, Method: "GET", Path: "/"}), "resource 0's name is not valid UTF-8"},
		{"middleware scope", fast(fastcheck.Query{Resource: "orders", Scopes: []string{"read\xff"}, Method: "GET", Path: "/"}), "resource 0 has a scope that is not valid UTF-8"},
		{"middleware route", fast(fastcheck.Query{Route: route("orders", "read\xff"), Resource: "orders", Scopes: []string{"read\xff"}, Method: "GET", Path: "/"}), "resource 0 has a scope that is not valid UTF-8"},
		{"middleware path", fast(fastcheck.Query{Resource: "orders", Scopes: []string{"read"}, Method: "GET", Path: notUTF8}), "the request context's Path is not valid UTF-8"},
		{"middleware path on a route", fast(fastcheck.Query{Route: fastcheck.Prepare("orders", []string{"read"}), Method: "GET", Path: notUTF8}), "the request context's Path is not valid UTF-8"},
		{"middleware method", fast(fastcheck.Query{Resource: "orders", Scopes: []string{"read"}, Method: "G\xffT", Path: "/"}), "the request context's Method is not valid UTF-8"},
	}
	// The same questions with valid strings are cached: what a refusal
	// leaves out is not a cache that was never there.
	checked(t, c, "orders", "read", pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: "/orders/\uFFFD"}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, sent := c.Stats(), g.count()
			err := tt.call()
			require.ErrorIs(t, err, pep.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.field)
			assert.Contains(t, err.Error(), "pass text as UTF-8")
			assert.NotContains(t, err.Error(), "\xff")
			assert.NotContains(t, err.Error(), `\xff`)
			after := c.Stats()
			assert.Equal(t, sent, g.count(), "the question reached the gateway")
			assert.Equal(t, before.GatewayRequests, after.GatewayRequests, "the question was sent")
			assert.Equal(t, before.CacheEntries, after.CacheEntries, "the question was cached")
		})
	}
}

// TestRequestContextSentVerbatim: the attacker's gateway grants only the
// path "/orders/\uFFFD", what encoding/json makes of "/orders/\xff". The
// client refuses "/orders/\xff" and "/orders/\xfe" without asking (before
// the fix the first was granted and the second served that grant from the
// cache), while valid non-ASCII paths, U+FFFD itself among them, reach the
// gateway byte for byte and are granted or denied as asked.
func TestRequestContextSentVerbatim(t *testing.T) {
	t.Parallel()
	type asked struct{ path, resource, scope string }
	got := make(chan asked, 16)
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Resources []struct {
				Name   string   `json:"name"`
				Scopes []string `json:"scopes"`
			} `json:"resources"`
			Context struct {
				Attributes struct {
					Path string `json:"path"`
				} `json:"attributes"`
			} `json:"context"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		res, scope := "", ""
		if len(req.Resources) == 1 && len(req.Resources[0].Scopes) == 1 {
			res, scope = req.Resources[0].Name, req.Resources[0].Scopes[0]
		}
		got <- asked{req.Context.Attributes.Path, res, scope}
		status := "DENY"
		if req.Context.Attributes.Path == "/orders/\uFFFD" { // the only path the policy grants
			status = "GRANT"
		}
		out, _ := json.Marshal(map[string]any{"status": status, "permissions": []map[string]string{{"resource": res, "scope": scope, "status": status}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(g.Client()))
	c.SetToken(aliceToken)
	tests := []struct {
		name, resource, path string
		refused, allowed     bool
	}{
		{"an invalid byte", "orders", "/orders/\xff", true, false},
		{"another invalid byte coerced alike", "orders", "/orders/\xfe", true, false},
		{"a truncated sequence", "orders", "/orders/\xe2\x82", true, false},
		{"U+FFFD itself", "orders", "/orders/\uFFFD", false, true},
		{"an accent", "orders", "/orders/é", false, false},
		{"an emoji", "orders", "/orders/\U0001F512", false, false},
		{"a non-ASCII resource", "bestellungen-ü", "/orders/1", false, false},
		{"a resource that is U+FFFD", "\uFFFD", "/orders/\uFFFD", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for len(got) > 0 { // what an earlier row sent, when it failed
				<-got
			}
			for _, call := range []func(context.Context) (bool, error){
				func(ctx context.Context) (bool, error) {
					d, err := c.Check(ctx, tt.resource, "read", pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: tt.path}))
					return d.Allowed(), err
				},
				func(ctx context.Context) (bool, error) { // the middleware's way
					var res pep.Result
					err := fastcheck.Check(ctx, c, fastcheck.Query{Own: true, Resource: tt.resource, Scopes: []string{"read"}, Method: "GET", Path: tt.path}, &res)
					return res.Allowed(), err
				},
			} {
				allowed, err := call(t.Context())
				assert.Equal(t, tt.allowed, allowed)
				if tt.refused {
					require.ErrorIs(t, err, pep.ErrInvalidArgument)
					require.Empty(t, got, "a refused question was sent")
					continue
				}
				require.NoError(t, err)
				select {
				case a := <-got:
					require.Equal(t, asked{tt.path, tt.resource, "read"}, a, "the gateway was asked another question")
				default: // the second call's answer is cached: nothing sent
				}
			}
		})
	}
	assert.Equal(t, 5, c.Stats().CacheEntries, "only the valid questions are cached")
}

// TestNewRefusesAClientIDNotValidUTF8: the client ID goes into every
// request's JSON; New refuses one that JSON would change.
func TestNewRefusesAClientIDNotValidUTF8(t *testing.T) {
	t.Parallel()
	_, err := hangguard.NewPep("https://gateway.example.com", testRealm, "orders-\xff")
	require.ErrorContains(t, err, "pep: the client ID is not valid UTF-8")
}
