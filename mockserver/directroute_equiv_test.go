package mockserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attackFixture: realm acme with a client whose permissions depend on roles,
// groups and organization roles, and a second realm globex.
func attackFixture() Fixture {
	return Fixture{Realms: []FixtureRealm{
		{
			Name:   "acme",
			Roles:  []FixtureRole{{Name: "viewer"}, {Name: "editor"}, {Name: "approver"}},
			Groups: []FixtureGroup{{Name: "finance", Roles: []string{"approver"}}},
			Users: []FixtureUser{
				{Username: "admin", Password: "admin", Roles: []string{"realm-admin"}},
				{Username: "alice", Password: "alice", Roles: []string{"viewer"}},
				{Username: "bob", Password: "bob", Groups: []string{"finance"}},
				{Username: "carol", Password: "carol"},
			},
			Clients: []FixtureClient{{
				ClientID: "orders-api", Secret: "orders-secret", WebOrigins: []string{"https://app.example"},
				Resources: []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}},
					{Name: "invoices", Scopes: []string{"approve"}}},
				Permissions: []FixturePermission{
					{Name: "viewers read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
					{Name: "editors write", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"editor"}},
					{Name: "finance approves", Resource: "invoices", Scopes: []string{"approve"}, Groups: []string{"finance"}},
				},
			}},
			Organizations: []FixtureOrganization{
				{Name: "Acme EU", Alias: "eu", Roles: []string{"editor"},
					Departments: []FixtureDepartment{{Name: "Sales", Alias: "sales"}}},
			},
		},
		{Name: "globex", Users: []FixtureUser{{Username: "gina", Password: "gina"}}},
	}}
}

// TestDirectRouteAnswersAsServeMux sends the same odd requests to the
// server's handler with and without its direct routes (HandleDirect) and
// requires byte-identical answers: the direct route must skip nothing
// ServeMux's route applied (405/Allow, 404, path checks, query check,
// CORS, body and content-type checks, authentication).
func TestDirectRouteAnswersAsServeMux(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	s := mustNew(t, WithFixture(attackFixture()), WithIssuer("http://srv.test"), WithClock(func() time.Time { return now }), es256Tokens)
	withDirect := s.routes().(mux)
	without := s.routes().(mux)
	*without.direct = nil
	hDirect := s.withCORS(readBodyFirst(withDirect))
	hPlain := s.withCORS(readBodyFirst(without))

	alice := mustIssue(t, s, "acme", "alice")
	gina := mustIssue(t, s, "globex", "gina")

	paths := []string{
		"/realms/acme/authorization-decision-provider/authorize",
		"/realms/globex/authorization-decision-provider/authorize",
		"/realms/nope/authorization-decision-provider/authorize",
		"/realms/ACME/authorization-decision-provider/authorize",
		"/realms/acme/authorization-decision-provider/authorize/",
		"/realms/acme/authorization-decision-provider/Authorize",
		"/realms/acme/authorization-decision-provider/authorize/x",
		"/realms/acme//authorization-decision-provider/authorize",
		"/realms/acme/./authorization-decision-provider/authorize",
		"/realms/x/../acme/authorization-decision-provider/authorize",
		"/realms/a%2Fb/authorization-decision-provider/authorize",
		"/realms/ac%6De/authorization-decision-provider/authorize",
		"/realms/a b/authorization-decision-provider/authorize",
		"/realms/é/authorization-decision-provider/authorize",
		"/realms/acme/authorization-decision-provider/authorize?x=1",
		"/realms/acme/authorization-decision-provider/authorize?x=%zz",
		"/realms/acme/authorization-decision-provider/authorize?",
		"/realms/acme/authorization-decision-provider/authorize#frag",
		"/realms/acme/authorization-decision-provider/get-organizations",
		"/realms/master/authorization-decision-provider/authorize",
		"/realms/{realm}/authorization-decision-provider/authorize",
		"/realms/acme/authorization-decision-provider",
	}
	methods := []string{"POST", "GET", "HEAD", "PUT", "OPTIONS", "post", "DELETE"}
	bodies := []string{
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]}],"context":{}}`,
		`{"clientId":"orders-api","resources":[{"name":"*"}],"context":{"attributes":{"method":"GET","path":"/x"}}}`,
		`{"clientId":"orders-api","resources":[],"context":{}}`,
		`{"clientId":"orders-api"}`,
		`not json`,
		``,
	}
	type variant struct {
		name string
		set  func(r *http.Request)
	}
	variants := []variant{
		{"alice", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+alice) }},
		{"gina", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+gina) }},
		{"none", func(*http.Request) {}},
		{"alice-origin", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+alice)
			r.Header.Set("Origin", "https://app.example")
		}},
		{"alice-evil-origin", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+alice)
			r.Header.Set("Origin", "https://evil.example")
		}},
		{"preflight", func(r *http.Request) {
			r.Header.Set("Origin", "https://app.example")
			r.Header.Set("Access-Control-Request-Method", "POST")
		}},
		{"alice-text", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+alice)
			r.Header.Set("Content-Type", "text/plain")
		}},
		{"alice-two-ct", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+alice)
			r.Header.Add("Content-Type", "application/json")
		}},
		{"dpop-scheme", func(r *http.Request) { r.Header.Set("Authorization", "DPoP "+alice) }},
		{"lower-scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer   "+alice+"  ") }},
		{"raw-lower-key", func(r *http.Request) { r.Header["authorization"] = []string{"Bearer " + alice} }},
	}
	// Every (path, method, variant) is sent, each with one body, chosen so
	// that every body meets every path, every method and every variant:
	// all pairs, a sixth of the whole product.
	n := 0
	for pi, p := range paths {
		for mi, m := range methods {
			for vi, v := range variants {
				b := bodies[(pi+mi+vi)%len(bodies)]
				mk := func() *http.Request {
					var body io.Reader = http.NoBody
					if b != "" {
						body = strings.NewReader(b)
					}
					r := httptest.NewRequest("POST", "http://srv.test/", body)
					r.Method = m
					u, err := url.ParseRequestURI(p)
					if err != nil {
						u = &url.URL{Path: p}
					}
					r.URL = u
					r.RequestURI = p
					r.Header.Set("Content-Type", "application/json")
					v.set(r)
					return r
				}
				a, z := httptest.NewRecorder(), httptest.NewRecorder()
				hDirect.ServeHTTP(a, mk())
				hPlain.ServeHTTP(z, mk())
				n++
				what := fmt.Sprintf("%s %s [%s] body=%q", m, p, v.name, b)
				require.Equal(t, z.Code, a.Code, "%s: status\nplain: %s\ndirect: %s", what, z.Body, a.Body)
				require.Equal(t, z.Header(), a.Header(), "%s: header", what)
				require.True(t, bytes.Equal(z.Body.Bytes(), a.Body.Bytes()), "%s: body\nplain: %s\ndirect: %s", what, z.Body, a.Body)
			}
		}
	}
	t.Logf("%d request pairs compared", n)
}

// TestDirectRouteSetsPatternAndPathValue: a middleware around the server
// that reads, after the handler, the request's Pattern and its path values
// (as Go 1.22+ metrics and per-tenant accounting middleware do: ServeMux
// sets both on the request it was given) sees a decision's realm as it
// sees every other route's. The attack on the first direct route found
// the pattern set with the realm's path value empty.
func TestDirectRouteSetsPatternAndPathValue(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	s := mustNew(t, WithFixture(attackFixture()), WithIssuer("http://srv.test"), WithClock(func() time.Time { return now }), es256Tokens)
	inner := readBodyFirst(s.routes()) // what New serves (no CORS origins: withCORS is h)
	alice := mustIssue(t, s, "acme", "alice")
	for _, tt := range []struct{ path, body string }{
		{"/realms/acme/authorization-decision-provider/get-organizations", `{"clientId":"orders-api"}`},
		{"/realms/acme/authorization-decision-provider/authorize", `{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{}}`},
	} {
		r := httptest.NewRequest("POST", "http://srv.test"+tt.path, strings.NewReader(tt.body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+alice)
		w := httptest.NewRecorder()
		inner.ServeHTTP(w, r)
		require.Equal(t, 200, w.Code, w.Body.String())
		require.Contains(t, r.Pattern, "{realm}", tt.path)
		assert.Equal(t, "acme", r.PathValue("realm"), "%s: pattern %q but no realm path value", tt.path, r.Pattern)
	}
}
