package middleware_test

// The strings RequireFunc's and RequireAuthZEN's functions return, which
// may come from the caller's request, go through the clients' refusal of
// strings that are not valid UTF-8 (a-dpop9 F2): such a request is 403 and
// nothing is asked, where JSON would have asked about another name.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestCallbackStringsNotValidUTF8AreRefused: a resource, scope, subject or
// resource id taken from the request that is not valid UTF-8 makes the
// request 403 without a request to the reference server; the same request
// with valid strings is decided by it.
func TestCallbackStringsNotValidUTF8AreRefused(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	pc := newPep(t, gw, "shop", "orders-api")
	az, err := hangguard.NewAuthZEN(gw.URL+"/realms/shop", authzen.WithHTTPClient(gw.Client()))
	require.NoError(t, err)
	az.SetToken(gw.Token("shop", "service-account-orders-api"))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

	// The names come from headers, as a service's own mapping might take
	// them from anything of the request.
	pepGuard := middleware.RequireFunc(pc, func(r *http.Request) (string, []string) {
		return r.Header.Get("X-Resource"), []string{r.Header.Get("X-Scope")}
	})(ok)
	azGuard := middleware.RequireAuthZEN(az, headerSubject, func(r *http.Request) (authzen.Action, authzen.Resource) {
		return authzen.Action{Name: "read"}, authzen.Resource{Type: "orders", ID: r.Header.Get("X-Order")}
	})(ok)
	sent := func() uint64 { return pc.Stats().GatewayRequests + az.Stats().PDPRequests }

	tests := []struct {
		name    string
		h       http.Handler
		headers map[string]string
		status  int
	}{
		{"pep: a resource", pepGuard, map[string]string{"X-Resource": "orders\xff", "X-Scope": "read"}, http.StatusForbidden},
		{"pep: a scope", pepGuard, map[string]string{"X-Resource": "orders", "X-Scope": "re\xe2\x82"}, http.StatusForbidden},
		{"pep: valid names", pepGuard, map[string]string{"X-Resource": "orders", "X-Scope": "read"}, http.StatusOK},
		{"authzen: a subject id", azGuard, map[string]string{userHeader: "ann\xff", "X-Order": "1"}, http.StatusForbidden},
		{"authzen: a resource id", azGuard, map[string]string{userHeader: "ann", "X-Order": "1\xfe"}, http.StatusForbidden},
		{"authzen: valid names", azGuard, map[string]string{userHeader: "ann", "X-Order": "1"}, http.StatusOK},
	}
	tok := gw.Token("shop", "ann")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/1", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			before := sent()
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
			if tt.status == http.StatusForbidden {
				assert.Equal(t, before, sent(), "a question JSON cannot carry was asked")
			} else {
				assert.Equal(t, before+1, sent())
			}
		})
	}
}

// TestNamesNotValidUTF8AreNotCheckable: Checkable, the rule every guard
// and adapter asks before a Checker, refuses names JSON cannot carry as
// written, and Require, whose names are the code's own, panics on them
// as on any other wiring mistake.
func TestNamesNotValidUTF8AreNotCheckable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		resource  string
		scopes    []string
		checkable bool
	}{
		{"valid", "orders", []string{"read"}, true},
		{"non-ASCII and U+FFFD", "bestellungen-ü", []string{"\uFFFD", "🔒"}, true},
		{"a resource", "orders\xff", []string{"read"}, false},
		{"a scope", "orders", []string{"read", "wr\xfeite"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.checkable, middleware.Checkable(tt.resource, tt.scopes))
			require := func() { middleware.Require(unasked{t}, tt.resource, tt.scopes...) }
			if tt.checkable {
				assert.NotPanics(t, require)
				return
			}
			assert.PanicsWithValue(t, "middleware: Require needs a resource and scopes that are valid UTF-8 (JSON would send other names)", require)
		})
	}
}

// unasked fails the test if it is asked anything.
type unasked struct{ t *testing.T }

func (u unasked) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	u.t.Error("the checker was asked")
	return pep.Result{}, pep.ErrUnavailable
}
