package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// postShop is a realm where dan may write orders with POST or PUT only.
var postShop = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:  "shop",
	Roles: []mockserver.FixtureRole{{Name: "poster"}},
	Users: []mockserver.FixtureUser{{Username: "dan", Roles: []string{"poster"}}},
	Clients: []mockserver.FixtureClient{{
		ClientID: "orders-api", Secret: "s3cret",
		Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"write"}}},
		Permissions: []mockserver.FixturePermission{
			{Name: "posters write with POST or PUT", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"poster"}, Methods: []string{"POST", "PUT"}},
		},
	}},
}}}

// gorillaOverriding is a handler stack behind the middleware that
// overrides the method exactly as gorilla/handlers v1.5.2's
// HTTPMethodOverrideHandler does: on a POST only, from the form key
// "_method" (r.FormValue: the URL query, or a urlencoded or multipart
// body), else from the X-HTTP-Method-Override header, and only to PUT,
// PATCH or DELETE, compared as sent. It answers with the method it
// performed.
var gorillaOverriding = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	gorillaOverride(r)
	_, _ = io.WriteString(w, "performed "+r.Method)
})

// gorillaOverride is the body of gorilla/handlers' HTTPMethodOverrideHandler.
func gorillaOverride(r *http.Request) {
	if r.Method == http.MethodPost {
		om := r.FormValue("_method")
		if om == "" {
			om = r.Header.Get("X-HTTP-Method-Override")
		}
		if om == http.MethodPut || om == http.MethodPatch || om == http.MethodDelete {
			r.Method = om
		}
	}
}

// TestMethodOverride: the middleware checks the method the stack behind it
// performs. Without WithMethodOverride a request with any override header
// is refused; with it, the trusted header's method is checked and sent.
func TestMethodOverride(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(postShop))
	client, err := pep.New(gw.URL, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
	require.NoError(t, err)
	dan := gw.Token("shop", "dan")
	plain := middleware.Require(client, "orders", "write")(gorillaOverriding)
	trusting := middleware.Require(client, "orders", "write").With(middleware.WithMethodOverride("X-HTTP-Method-Override"))(gorillaOverriding)

	tests := []struct {
		name    string
		h       http.Handler
		method  string
		headers map[string][]string
		status  int
		body    string
	}{
		{"a POST under a POST grant", plain, "POST", nil, 200, "performed POST"},
		{"an override under a POST grant is refused", plain, "POST", map[string][]string{"X-HTTP-Method-Override": {"DELETE"}}, 400, ""},
		{"X-HTTP-Method is refused", plain, "POST", map[string][]string{"X-HTTP-Method": {"DELETE"}}, 400, ""},
		{"X-Method-Override is refused", plain, "POST", map[string][]string{"X-Method-Override": {"DELETE"}}, 400, ""},
		{"in any case", plain, "POST", map[string][]string{"x-http-method-override": {"DELETE"}}, 400, ""},
		{"trusted: the override is the method checked", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"DELETE"}}, 403, ""},
		{"trusted: a granted override passes", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"PUT"}}, 200, "performed PUT"},
		{"trusted: no override is the request's method", trusting, "POST", nil, 200, "performed POST"},
		{"trusted: applied before the middleware", trusting, "DELETE", map[string][]string{"X-HTTP-Method-Override": {"DELETE"}}, 403, ""},
		{"trusted: only on POST", trusting, "PUT", map[string][]string{"X-HTTP-Method-Override": {"DELETE"}}, 400, ""},
		{"trusted: not a method", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"DEL ETE"}}, 400, ""},
		{"trusted: empty", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {""}}, 400, ""},
		{"trusted: twice", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"PUT", "DELETE"}}, 400, ""},
		{"trusted: the other headers are still refused", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"PUT"}, "X-HTTP-Method": {"DELETE"}}, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), tt.method, "/orders/42", nil)
			req.Header.Set("Authorization", "Bearer "+dan)
			for k, vs := range tt.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
			if tt.status == http.StatusOK {
				assert.Equal(t, tt.body, rec.Body.String())
				return
			}
			name, _ := errorBody(t, rec.Body.String())
			assert.Equal(t, http.StatusText(tt.status), name)
		})
	}
}

// TestMethodOverrideReachesTheResourceFunction: RequireFunc's function
// sees the method that is checked, so a method-to-scope mapping follows the
// override.
func TestMethodOverrideReachesTheResourceFunction(t *testing.T) {
	t.Parallel()
	fc := &fakeChecker{res: result(pep.Grant, nil)}
	var seen string
	byMethod := func(r *http.Request) (string, []string) {
		seen = r.Method
		return "orders", []string{"write"}
	}
	h := middleware.RequireFunc(fc, byMethod, middleware.WithMethodOverride("X-HTTP-Method-Override"))(reached)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("X-HTTP-Method-Override", "DELETE")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "DELETE", seen)
}

func TestWithMethodOverrideNeedsAHeaderName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "X Override", "X-Override:"} {
		assert.Panics(t, func() {
			middleware.Require(&fakeChecker{}, "orders", "read").With(middleware.WithMethodOverride(name))
		}, "%q", name)
	}
}

// TestRequireAuthZENMethodOverride: RequireAuthZEN refuses override
// headers alike, and with WithMethodOverride sends the trusted method as
// the AuthZEN context and hands it to the target function.
func TestRequireAuthZENMethodOverride(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop))
	svc := gw.Token("shop", "service-account-orders-api")
	plain, _ := azApp(t, gw, svc)
	trusting, _ := azApp(t, gw, svc, middleware.WithMethodOverride("X-HTTP-Method-Override"))
	serveOverride := func(h http.Handler, user, override string) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/1", nil)
		req.Header.Set(userHeader, user)
		req.Header.Set("X-HTTP-Method-Override", override)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	assert.Equal(t, http.StatusBadRequest, serveOverride(plain, "cat", "DELETE"))
	assert.Equal(t, http.StatusOK, serveOverride(trusting, "cat", "DELETE"), "the manager deletes, with DELETE checked")
	assert.Equal(t, http.StatusForbidden, serveOverride(trusting, "ann", "DELETE"), "a viewer may not")
}
