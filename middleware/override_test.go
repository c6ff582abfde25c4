package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// postShop is a realm where dan may write orders with POST or PUT only.
var postShop = methodShop("dan", "POST", "PUT")

// methodShop is a realm "shop" (client orders-api, secret s3cret) where
// user may write orders with the given methods only.
func methodShop(user string, methods ...string) mockserver.Fixture {
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  "shop",
		Roles: []mockserver.FixtureRole{{Name: "writer"}},
		Users: []mockserver.FixtureUser{{Username: user, Roles: []string{"writer"}}},
		Clients: []mockserver.FixtureClient{{
			ClientID: "orders-api", Secret: "s3cret",
			Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"write"}}},
			Permissions: []mockserver.FixturePermission{
				{Name: "writers write with " + strings.Join(methods, " or "), Resource: "orders", Scopes: []string{"write"}, Roles: []string{"writer"}, Methods: methods},
			},
		}},
	}}}
}

// danShop serves postShop from a reference server of the test's own and
// returns the middleware that lets a request write orders (what dan may
// do with POST or PUT only) and dan's token.
func danShop(t *testing.T) (guard middleware.Middleware, dan string) {
	t.Helper()
	client, dan := realmOf(t, postShop, "dan")
	return middleware.Require(client, "orders", "write"), dan
}

// realmOf serves fixture from a reference server of the test's own and
// returns a client of orders-api and user's token.
func realmOf(t *testing.T, fixture mockserver.Fixture, user string) (*pep.Client, string) {
	t.Helper()
	gw := mockservertest.Start(t, mockserver.WithFixture(fixture), es256Tokens)
	return newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client())), gw.Token("shop", user)
}

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
// CGI (so PHP, and Rack behind a CGI-style server) reads
// X_HTTP_METHOD_OVERRIDE as X-HTTP-Method-Override, which net/http keeps
// apart, and PHP '.' as '_' (Caddy's php_fastcgi and FrankenPHP pass it
// on): such a header is refused, trusted or not
// (TestOverrideHeaderSpeltWithUnderscoresIsRefused).
func TestMethodOverride(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	plain := guard(gorillaOverriding)
	trusting := guard.With(middleware.WithMethodOverride("X-HTTP-Method-Override"))(gorillaOverriding)

	type test struct {
		name    string
		h       http.Handler
		method  string
		headers map[string][]string
		status  int
		body    string
	}
	tests := []test{
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
		{"trusted: a method gorilla does not apply", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"GET"}}, 400, ""},
		{"trusted: in lower case, which gorilla does not apply", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"delete"}}, 400, ""},
		{"trusted: the request's own method", trusting, "PUT", map[string][]string{"X-HTTP-Method-Override": {"PUT"}}, 200, "performed PUT"},
		{"trusted: empty", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {""}}, 400, ""},
		{"trusted: twice", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"PUT", "DELETE"}}, 400, ""},
		{"trusted: the other headers are still refused", trusting, "POST", map[string][]string{"X-HTTP-Method-Override": {"PUT"}, "X-HTTP-Method": {"DELETE"}}, 400, ""},
	}
	for _, name := range []string{"X_HTTP_METHOD_OVERRIDE", "x-http_method-override", "X_HTTP_METHOD", "X_Method_Override",
		"X.Http.Method.Override", "X-Http.Method-Override"} {
		tests = append(tests, test{"TestOverrideHeaderSpeltWithUnderscoresIsRefused " + name, plain, "POST", map[string][]string{name: {"DELETE"}}, 400, ""},
			test{"TestOverrideHeaderSpeltWithUnderscoresIsRefused trusted " + name, trusting, "POST", map[string][]string{name: {"DELETE"}}, 400, ""})
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

// TestEachOverrideHeaderIsTrustedAlone: trusting one override header
// trusts that one only. Each of the three, trusted alone, is taken (dan
// may PUT), and a request carrying another one is refused with 400 naming
// the header it carries, whichever other headers the request has, so that
// the pass that reads them (config.fields) tells each apart.
func TestEachOverrideHeaderIsTrustedAlone(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	names := []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}
	for _, trusted := range names {
		h := guard.With(middleware.WithMethodOverride(trusted))(gorillaOverriding)
		for _, sent := range names {
			t.Run(trusted+"/"+sent, func(t *testing.T) {
				t.Parallel()
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", nil)
				req.Header.Set("Authorization", "Bearer "+dan)
				req.Header.Set("Accept", "application/json")
				req.Header.Set("X-Request-Id", "42")
				req.Header.Set(sent, http.MethodPut)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if sent == trusted {
					require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
					return
				}
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				_, message := errorBody(t, rec.Body.String())
				assert.Contains(t, message, "carries "+http.CanonicalHeaderKey(sent)+",")
			})
		}
	}
}

// TestRequireAuthZENMethodOverride: RequireAuthZEN refuses override
// headers and the form key _method alike, and with WithMethodOverride
// sends the trusted method as the AuthZEN context and hands it to the
// target function. The deleting target asks to delete whatever the
// method, and cat may delete only with DELETE, so a grant shows that the
// PDP got the trusted _method as the method, and the target function saw
// it (TestRequireAuthZENFormMethodOverride); a target that parses the form
// of the DELETE it sees reads the form the handler gets
// (TestAuthZENTargetReadsTheFormTheHandlerGets).
func TestRequireAuthZENMethodOverride(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(shop), es256Tokens)
	svc := gw.Token("shop", "service-account-orders-api")
	plain, c := azApp(t, gw, svc)
	trusting, _ := azApp(t, gw, svc, middleware.WithMethodOverride("X-HTTP-Method-Override"))
	var seen atomic.Value
	deleting := func(r *http.Request) (authzen.Action, authzen.Resource) {
		seen.Store(r.Method)
		return authzen.Action{Name: "delete"}, authzen.Resource{Type: "orders", ID: "1"}
	}
	byForm := func(r *http.Request) (authzen.Action, authzen.Resource) {
		_ = r.FormValue("qty")
		return authzen.Action{Name: "delete"}, authzen.Resource{Type: "orders", ID: "1"}
	}
	formPlain := middleware.RequireAuthZEN(c, headerSubject, deleting)(performed)
	formTrusting := middleware.RequireAuthZEN(c, headerSubject, deleting, middleware.WithMethodOverride("_method"))(performed)
	formParsing := middleware.RequireAuthZEN(c, headerSubject, byForm, middleware.WithMethodOverride("_method"))(gorillaOverriding)
	const form, target = "TestRequireAuthZENFormMethodOverride ", "TestAuthZENTargetReadsTheFormTheHandlerGets "
	for _, tc := range []struct {
		name                         string
		h                            http.Handler
		user, target, override, body string
		status                       int
		want                         string
	}{
		{"untrusted header", plain, "cat", "/orders/1", "DELETE", "", 400, ""},
		{"the manager deletes, with DELETE checked", trusting, "cat", "/orders/1", "DELETE", "", 200, "order 1"},
		{"a viewer may not", trusting, "ann", "/orders/1", "DELETE", "", 403, ""},
		{form + "untrusted, in the query", formPlain, "cat", "/orders/1?_method=DELETE", "", "", 400, ""},
		{form + "untrusted, in the body: not read, the POST is checked", formPlain, "cat", "/orders/1", "", "_method=DELETE", 403, ""},
		{form + "no override: a POST", formTrusting, "cat", "/orders/1", "", "qty=1", 403, ""},
		{form + "trusted, in the query: refused, it belongs in the body", formTrusting, "cat", "/orders/1?_method=DELETE", "", "", 400, ""},
		{form + "trusted, in the body", formTrusting, "cat", "/orders/1", "", "_method=DELETE", 200, "performed POST"}, // the stack overrides it
		{target + "a field and _method", formParsing, "cat", "/orders/1", "", "qty=1&_method=DELETE", 200, "performed DELETE"},
		{target + "_method alone", formParsing, "cat", "/orders/1", "", "_method=DELETE", 200, "performed DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen.Store("")
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, tc.target, strings.NewReader(tc.body))
			req.Header.Set(userHeader, tc.user)
			req.Header.Set("Content-Type", urlencoded)
			if tc.override != "" {
				req.Header.Set("X-HTTP-Method-Override", tc.override)
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.status == http.StatusOK {
				assert.Equal(t, tc.want, rec.Body.String())
			}
			if tc.status == http.StatusOK && strings.HasPrefix(tc.name, form) {
				assert.Equal(t, "DELETE", seen.Load(), "the target function saw the trusted method")
			}
		})
	}
}

// deleteShop is a realm where dave may write orders with DELETE or PUT
// only, not POST.
var deleteShop = methodShop("dave", "DELETE", "PUT")

// byKind is a RequireFunc function that chooses the resource by a form
// field, as a service choosing it from what a form names does.
func byKind(r *http.Request) (string, []string) {
	if r.FormValue("kind") == "order" {
		return "orders", []string{"write"}
	}
	return "", nil
}

// readsForm is a RequireFunc function that parses the form (as a request
// of the method it sees: r.ParseForm reads no body for a DELETE) and names
// orders whatever it holds.
func readsForm(r *http.Request) (string, []string) {
	_ = r.FormValue("qty")
	return "orders", []string{"write"}
}

// TestTrustedFormMethodOverride: dave may write orders with DELETE or PUT
// only, not POST. RequireFunc's function sees the overridden method, and
// what it reads of the form, the handler reads too: one body, read once.
// With _method trusted, gorilla's stack behind the middleware performs the
// method that was checked, whichever it is; with the header trusted, the
// handler gets every field (TestResourceFunctionReadsTheFormTheHandlerGets).
// The function sees the method checked, from a trusted header or form key
// (TestMethodOverrideReachesTheResourceFunction).
// A _method in the query is refused with 400, saying to send it in the
// body: r.FormValue (gorilla) reads it there, r.PostFormValue (gin's
// c.PostForm) does not (TestTrustedFormMethodOverrideIsTakenFromTheBodyOnly).
// The method a urlencoded body names is checked only when every stack
// parses that body as a form: under a Content-Type net/http reads as
// urlencoded and Rack or PHP does not (a dotted İ), or Laravel reads as
// JSON (one holding "/json"), the stack behind performs the POST, so the
// request is refused rather than checked as the DELETE
// (TestTrustedFormMethodIsTakenOnlyWhereEveryStackReadsTheForm).
func TestTrustedFormMethodOverride(t *testing.T) {
	t.Parallel()
	client, dave := realmOf(t, deleteShop, "dave")
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" kind="+r.FormValue("kind")+" qty="+r.FormValue("qty"))
	})
	formTrusted := middleware.RequireFunc(client, byKind, middleware.WithMethodOverride("_method"))(gorillaOverriding)
	formTrustedParsing := middleware.RequireFunc(client, readsForm, middleware.WithMethodOverride("_method"))(gorillaOverriding)
	// deletes names orders only for a DELETE: the request it sees is the
	// one checked.
	deletes := func(r *http.Request) (string, []string) {
		if r.Method == http.MethodDelete {
			return "orders", []string{"write"}
		}
		return "", nil
	}
	bothTrusted := middleware.RequireFunc(client, deletes, middleware.WithMethodOverride("X-HTTP-Method-Override", "_method"))(gorillaOverriding)
	headerTrusted := middleware.RequireFunc(client, byKind, middleware.WithMethodOverride("X-HTTP-Method-Override"))(echo)
	mpType, mpBody := multipartBody(t, "kind", "order", "qty", "3")
	put := map[string]string{"X-HTTP-Method-Override": "PUT"}
	postFormOverriding := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if om := r.PostFormValue("_method"); om == http.MethodPut || om == http.MethodPatch || om == http.MethodDelete {
				r.Method = om
			}
		}
		_, _ = io.WriteString(w, "performed "+r.Method)
	})
	guard := middleware.Require(client, "orders", "write").With(middleware.WithMethodOverride("_method"))
	plainKey := func(k string) bool { return k == "_method" }
	rack, php := guard(overridingBy(rackForm, plainKey)), guard(overridingBy(phpForm, plainKey))
	named := func(ct string) formRequest {
		return formRequest{target: "/orders/42", contentType: ct, body: "_method=DELETE"}
	}
	const says = "query; send it in the form body"
	const bodyOnly, everyStack = "TestTrustedFormMethodOverrideIsTakenFromTheBodyOnly ", "TestTrustedFormMethodIsTakenOnlyWhereEveryStackReadsTheForm "
	const resourceFunc = "TestResourceFunctionReadsTheFormTheHandlerGets "

	runFormCases(t, []formCase{
		{bodyOnly + "query, a body-only stack", guard(postFormOverriding), formRequest{target: "/orders/42?_method=DELETE", contentType: urlencoded, body: "qty=1"}, 400, says},
		{bodyOnly + "query, gorilla", guard(gorillaOverriding), formRequest{target: "/orders/42?_method=DELETE", contentType: urlencoded, body: "qty=1"}, 400, says},
		{bodyOnly + "query, no body", guard(gorillaOverriding), formRequest{target: "/orders/42?_method=DELETE"}, 400, says},
		{bodyOnly + "body, a body-only stack", guard(postFormOverriding), formRequest{target: "/orders/42", contentType: urlencoded, body: "qty=1&_method=DELETE"}, 200, "performed DELETE"},
		{bodyOnly + "body, gorilla", guard(gorillaOverriding), formRequest{target: "/orders/42", contentType: urlencoded, body: "qty=1&_method=DELETE"}, 200, "performed DELETE"},
		{everyStack + "Rack, a dotted İ", rack, named("appl\u0130cation/x-www-form-urlencoded"), 400, ""},
		{everyStack + "PHP, a dotted İ", php, named("appl\u0130cation/x-www-form-urlencoded"), 400, ""},
		{everyStack + "PHP, a tab before the parameter", php, named("application/x-www-form-urlencoded\t; charset=utf-8"), 400, ""},
		{everyStack + "Laravel, a JSON Content-Type parameter", guard(laravelOverriding), named("application/x-www-form-urlencoded; profile=a/json"), 400, ""},
		{everyStack + "Rack, as it is spelt", rack, named(urlencoded), 200, "performed DELETE"},
		{everyStack + "PHP, with a charset", php, named(urlencoded + "; charset=utf-8"), 200, "performed DELETE"},
		// net/http parses no form of a Content-Type whose parameters repeat
		// with different values: the stack performs the POST, so the POST
		// is checked, not the DELETE the body seems to name.
		{"TestFormContentTypeAsNetHTTPReadsIt a Content-Type net/http parses no form of", guard(gorillaOverriding), named(urlencoded + "; charset=a; charset=b"), 403, ""},
		{"TestFormContentTypeAsNetHTTPReadsIt the same body as a form", guard(gorillaOverriding), named(urlencoded), 200, "performed DELETE"},
		{"TestMethodOverrideReachesTheResourceFunction header", bothTrusted, formRequest{target: "/orders/42", headers: map[string]string{"X-HTTP-Method-Override": "DELETE"}}, 200, "performed DELETE"},
		{"TestMethodOverrideReachesTheResourceFunction body", bothTrusted, formRequest{target: "/orders/42", contentType: urlencoded, body: "_method=DELETE"}, 200, "performed DELETE"},
		{resourceFunc + "_method PUT", formTrusted, formRequest{target: "/orders/42", contentType: urlencoded, body: "kind=order&_method=PUT"}, 200, "performed PUT"},
		{resourceFunc + "_method DELETE, which r.ParseForm reads no body for", formTrustedParsing, formRequest{target: "/orders/42", contentType: urlencoded, body: "kind=order&_method=DELETE"}, 200, "performed DELETE"},
		{resourceFunc + "_method DELETE: the function reads no field of the body, as for any DELETE", formTrusted, formRequest{target: "/orders/42", contentType: urlencoded, body: "kind=order&_method=DELETE"}, 403, ""},
		{resourceFunc + "header PUT, a urlencoded form", headerTrusted, formRequest{target: "/orders/42", contentType: urlencoded, body: "kind=order&qty=3", headers: put}, 200, "POST kind=order qty=3"},
		{resourceFunc + "header PUT, a multipart form", headerTrusted, formRequest{target: "/orders/42", contentType: mpType, body: mpBody, headers: put}, 200, "POST kind=order qty=3"},
	}, dave)
}

// TestMiddlewareLeavesTheCallersRequest: the request the middleware gets
// is its caller's; the body it guards or gives back is the handler's, on
// the request the handler gets. An outer handler finds its request as it
// sent it.
func TestMiddlewareLeavesTheCallersRequest(t *testing.T) {
	t.Parallel()
	mpType, mpBody := multipartBody(t, "qty", "1")
	for _, tc := range []struct {
		name, contentType, body string
		trust                   []string
	}{
		{"urlencoded, guarded", urlencoded, "qty=1", []string{"X-HTTP-Method-Override"}},
		{"urlencoded, read", urlencoded, "qty=1", []string{"_method"}},
		{"multipart, guarded", mpType, mpBody, []string{"_method"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *http.Request
			h := middleware.RequireFunc(&fakeChecker{grant: true}, middleware.Static("orders", "write"),
				middleware.WithMethodOverride(tc.trust...))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				_, _ = io.WriteString(w, r.FormValue("qty"))
			}))
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set("Content-Type", tc.contentType)
			sent := req.Body
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, "1", rec.Body.String())
			require.NotSame(t, req, got)
			assert.Equal(t, sent, req.Body, "the caller's request has its own body still")
		})
	}
}

// TestDeniedHandlerGetsTheBody: a denied handler called before any check
// (the resource function named nothing) gets the body the middleware read
// for a trusted _method, as the handler would have: the form it parses
// holds what was sent.
func TestDeniedHandlerGetsTheBody(t *testing.T) {
	t.Parallel()
	denied := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, r.Method+" qty="+r.FormValue("qty"))
	})
	for _, body := range []string{"qty=3", "qty=3&_method=PUT"} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			h := middleware.RequireFunc(&fakeChecker{grant: true}, byKind,
				middleware.WithMethodOverride("_method"), middleware.WithDeniedHandler(denied))(reached)
			rec := formRequest{target: "/orders/42", contentType: urlencoded, body: body}.serve(t, h, "tok")
			require.Equal(t, http.StatusForbidden, rec.Code)
			require.Equal(t, "POST qty=3", rec.Body.String())
		})
	}
}
