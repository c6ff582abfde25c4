package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// shop is a realm where ann may read orders, cat may also write them and
// delete them, but only with DELETE, and ben may do nothing. Nobody may read
// invoices.
var shop = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  "shop",
	Roles: []mockserver.FixtureRole{{Name: "viewer"}, {Name: "manager"}},
	Users: []mockserver.FixtureUser{
		{Username: "ann", Roles: []string{"viewer"}},
		{Username: "ben"},
		{Username: "cat", Roles: []string{"viewer", "manager"}},
	},
	Clients: []mockserver.FixtureClient{{
		ClientID: "orders-api", Secret: "s3cret",
		Resources: []mockserver.FixtureResource{
			{Name: "orders", Scopes: []string{"read", "write", "delete"}},
			{Name: "invoices", Scopes: []string{"read"}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "viewers read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
			{Name: "managers write", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"manager"}},
			{Name: "managers delete with DELETE", Resource: "orders", Scopes: []string{"delete"}, Roles: []string{"manager"}, Methods: []string{"DELETE"}},
		},
	}},
}}}

// es256Tokens makes a test's reference server sign access tokens ES256,
// with the P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key made on the realm's first
// token, 70 to 110 ms of CPU under -race per server. The middleware never
// looks inside the token, so no test that uses it is about the algorithm;
// the examples run on the default server. Each server still makes keys of
// its own: a key shared between servers would make one accept another's
// tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// newPep returns a client of gw's realm for clientID, with the hang guard
// (hangguard.NewPep) and opts, closed when the test ends.
func newPep(t *testing.T, gw *mockservertest.Server, realm, clientID string, opts ...pep.Option) *pep.Client {
	t.Helper()
	c := testkit.Must(hangguard.NewPep(gw.URL, realm, clientID, opts...))(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// app is a service with chi-style composition: one mux, a request-id
// middleware around everything, and a different Require on each route.
func app(t *testing.T) (*mockservertest.Server, http.Handler) {
	t.Helper()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := testkit.Must(hangguard.NewPep(gw.URL, "shop", "orders-api"))(t)

	ok := func(label string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, decided := middleware.DecisionFromContext(r.Context())
			require.True(t, decided)
			require.True(t, res.Allowed())
			_, _ = io.WriteString(w, label)
		})
	}
	requestID := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", "req-1")
			next.ServeHTTP(w, r)
		})
	}
	chain := func(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}

	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", chain(ok("read"), middleware.Require(client, "orders", "read")))
	// Two Require layers: both must grant.
	mux.Handle("PUT /orders/{id}", chain(ok("written"),
		middleware.Require(client, "orders", "read"), middleware.Require(client, "orders", "write")))
	// The same permission on two methods: the decision depends on the method
	// sent as the decision context.
	for _, m := range []string{"DELETE", "POST"} {
		mux.Handle(m+" /orders/{id}", chain(ok("deleted"), middleware.Require(client, "orders", "delete")))
	}
	return gw, requestID(mux)
}

// TestRequireAgainstReferenceServer: Require composed as a chi-style
// service composes it, against the reference server. A missing or refused
// token is TestAdapterTable's.
func TestRequireAgainstReferenceServer(t *testing.T) {
	t.Parallel()
	gw, h := app(t)
	tokens := map[string]string{"ann": gw.Token("shop", "ann"), "ben": gw.Token("shop", "ben"), "cat": gw.Token("shop", "cat")}

	tests := []struct {
		name, user, method string
		status             int
		body               string
	}{
		{"viewer reads", "ann", "GET", 200, "read"},
		{"nobody is forbidden to read", "ben", "GET", 403, ""},
		{"viewer cannot write", "ann", "PUT", 403, ""},
		{"manager passes both layers", "cat", "PUT", 200, "written"},
		{"manager deletes with DELETE", "cat", "DELETE", 200, "deleted"},
		{"the method is the decision context: POST may not delete", "cat", "POST", 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), tt.method, "/orders/42", nil)
			req.Header.Set("Authorization", "Bearer "+tokens[tt.user])
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tt.status, rec.Code, rec.Body.String())
			assert.Equal(t, "req-1", rec.Header().Get("X-Request-Id"), "outer middleware ran")
			if tt.status == 200 {
				assert.Equal(t, tt.body, rec.Body.String())
				return
			}
			name, _ := errorBody(t, rec.Body.String())
			assert.Equal(t, http.StatusText(tt.status), name)
		})
	}
}

// The pattern of examples/middleware, a resource named by the caller's
// path, against the reference server over real HTTP: the wildcard "*" must
// never stand for a resource the caller holds (issue 11, breaks 1 and 2).
func TestCallerChosenResourceAgainstReferenceServer(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	client := testkit.Must(hangguard.NewPep(gw.URL, "shop", "orders-api"))(t)
	var ran atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("GET /{kind}/{scope}", middleware.RequireFunc(client, func(r *http.Request) (string, []string) {
		return r.PathValue("kind"), []string{r.PathValue("scope")}
	})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran.Add(1)
		_, _ = io.WriteString(w, "ran")
	})))
	srv := testkit.Serve(t, mux)
	ann := gw.Token("shop", "ann")

	tests := []struct {
		path   string
		status int
	}{
		{"/orders/read", http.StatusOK},
		{"/invoices/read", http.StatusForbidden},
		{"/*/read", http.StatusForbidden},
		{"/*/frobnicate", http.StatusForbidden},
		{"/%2A/read", http.StatusForbidden},
		{"/orders/frobnicate", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			before := ran.Load()
			req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil))(t)
			req.Header.Set("Authorization", "Bearer "+ann)
			resp := testkit.Must(srv.Client().Do(req))(t, "the connection must survive")
			body := testkit.Must(io.ReadAll(resp.Body))(t)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, tt.status, resp.StatusCode, string(body))
			if tt.status == http.StatusOK {
				assert.Equal(t, before+1, ran.Load())
				return
			}
			assert.Equal(t, before, ran.Load(), "the handler must not run")
			errorBody(t, string(body))
		})
	}
}
