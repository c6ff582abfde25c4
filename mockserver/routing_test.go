package mockserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestOddPathsAndMethods sends odd paths with every method and three kinds
// of credentials: the answer is never a 5xx, always the service's JSON (the
// traffic check of TestMain validates it against the document) or a 204
// without a body (OPTIONS), and a path
// that is not canonical is a 404, where ServeMux answered a plain-text
// redirect.
func TestOddPathsAndMethods(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	admin := a.token("master", "service-account-platform-admin")
	orgs := "/admin/realms/acme/organizations"
	unclean := []string{"//admin/audit", orgs + "/../../../admin/audit", orgs + "//", orgs + "/" + org + "//departments", "/admin/./config"}
	paths := append([]string{
		orgs + "/alias", orgs + "/alias/", orgs + "/users", orgs + "/global", orgs + "/global/",
		"/admin/realms/" + strings.Repeat("a", 5000) + "/organizations", "/realms/acme/authorization-decision-provider/authorize/",
		"/openapi.json/", "/.well-known/oauth-authorization-server/realms/", "/.well-known/oauth-authorization-server/realms/acme/extra",
		"/admin/tenants/", "/admin/config/", orgs + "/" + org + "/departments/tenant-tree/x",
		orgs + "/" + org + "/roles/create", orgs + "/" + org + "/applications/assign", orgs + "/" + org + "/roles/available",
	}, unclean...)
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "FOO"}
	for _, p := range paths {
		for _, m := range methods {
			for _, tok := range []string{"", a.admin, admin} {
				req := httptest.NewRequest(http.MethodGet, "http://x.test/", strings.NewReader(`{"name":"x"}`))
				req.Method, req.URL.Path = m, p
				req.Header.Set("Content-Type", "application/json")
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				rec := httptest.NewRecorder()
				a.s.ServeHTTP(rec, req)
				assert.Less(t, rec.Code, 500, "%s %s: %s", m, p, rec.Body)
				if m != http.MethodHead && rec.Code != http.StatusNoContent { // OPTIONS: 204 with Allow
					assert.True(t, json.Valid(rec.Body.Bytes()), "%s %s: %d %q", m, p, rec.Code, rec.Body)
				}
			}
		}
	}
	for _, p := range unclean {
		r := a.sendRaw(a.admin, http.MethodGet, a.url+p, "", "")
		r.errBody(t, http.StatusNotFound)
		assert.Empty(t, r.Header.Get("Location"))
	}
}

// TestMuxAnswersAsServeMux: a mux routes each request once, through a
// catch-all below its patterns, and still answers as ServeMux would for
// the same patterns: the handler of the pattern ServeMux picks (with its
// path values), 405 with ServeMux's Allow where ServeMux answers 405, 404
// where it answers 404, and ServeMux's redirect to a path with a trailing
// slash. A catch-all alone would turn every 405 into a 404.
func TestMuxAnswersAsServeMux(t *testing.T) {
	t.Parallel()
	patterns := []string{
		"GET /a", "POST /a", "DELETE /a/{id}", "GET /a/{id}/b", "PUT /a/{id}/b",
		"GET /files/{path...}", "POST /dir/", "GET /exact/{$}", "GET /x/{v}/y/{w}",
	}
	m := newMux(&[]string{}, &preflightRoutes{s: &Server{store: store.New(nil)}, methods: map[*http.ServeMux]map[string]*[]string{}})
	ref := http.NewServeMux()
	options := map[string]bool{}
	direct := map[string]bool{"PUT /a/{id}/b": true, "DELETE /a/{id}": true} // HandleDirect
	for _, p := range patterns {
		h := func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("X-Pattern", r.Pattern)
			w.Header().Set("X-Values", id+"|"+r.PathValue("path")+"|"+r.PathValue("v")+"|"+r.PathValue("w"))
			w.WriteHeader(299)
		}
		if direct[p] {
			m.HandleDirect(p, h)
		} else {
			m.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, r.PathValue("id")) }))
		}
		ref.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		if o := http.MethodOptions + " " + strings.SplitN(p, " ", 2)[1]; !options[o] {
			options[o] = true
			ref.HandleFunc(o, func(http.ResponseWriter, *http.Request) {})
		}
	}
	paths := []string{"/", "/a", "/a/", "/a/1", "/a/1/", "/a/1/b", "/a/1/b/c", "/files", "/files/", "/files/x/y",
		"/dir", "/dir/", "/dir/x", "/exact", "/exact/", "/exact/x", "/x/1/y/2", "/x/1/y", "/x/%2F/y/%20", "/nothing", "/a/%41"}
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "FOO"}
	for _, p := range paths {
		for _, meth := range methods {
			req := httptest.NewRequest(meth, "http://x.test"+p, nil)
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, req)

			refReq := httptest.NewRequest(meth, "http://x.test"+p, nil)
			_, pattern := ref.Handler(refReq)
			refRec := httptest.NewRecorder()
			ref.ServeHTTP(refRec, refReq)
			switch {
			case refRec.Code/100 == 3: // 301, or 307 for a method other than GET and HEAD
				assert.Equal(t, refRec.Code, rec.Code, "%s %s", meth, p)
				assert.Equal(t, refRec.Header().Get("Location"), rec.Header().Get("Location"), "%s %s", meth, p)
			case pattern != "" && !strings.HasPrefix(pattern, http.MethodOptions):
				assert.Equal(t, 299, rec.Code, "%s %s: routed by ServeMux to %s", meth, p, pattern)
				assert.Equal(t, pattern, rec.Header().Get("X-Pattern"), "%s %s", meth, p)
				ref2 := http.NewServeMux()
				ref2.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Values", r.PathValue("id")+"|"+r.PathValue("path")+"|"+r.PathValue("v")+"|"+r.PathValue("w"))
				})
				vals := httptest.NewRecorder()
				ref2.ServeHTTP(vals, httptest.NewRequest(meth, "http://x.test"+p, nil))
				assert.Equal(t, vals.Header().Get("X-Values"), rec.Header().Get("X-Values"), "%s %s: path values", meth, p)
			case pattern != "": // the mux's own OPTIONS route
			default:
				assert.Equal(t, refRec.Code, rec.Code, "%s %s", meth, p)
				assert.Equal(t, refRec.Header().Get("Allow"), rec.Header().Get("Allow"), "%s %s", meth, p)
				assert.True(t, json.Valid(rec.Body.Bytes()), "%s %s: %q", meth, p, rec.Body)
			}
		}
	}
}

// FuzzIsCleanPath holds isCleanPath to cleanPath: a path is clean exactly
// when cleaning leaves it as it is.
func FuzzIsCleanPath(f *testing.F) {
	for _, p := range []string{"", "/", "//", "/a", "/a/", "/a//b", "/./a", "/a/.", "/a/..", "/a/../b", "/..", "/.a", "/a./", "/...", "a", "/a/b/c/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := isCleanPath(p), p == cleanPath(p); got != want {
			t.Fatalf("isCleanPath(%q) = %v, cleanPath gives %q", p, got, cleanPath(p))
		}
	})
}

// TestDirectRoutesAgreeWithServeMux: every direct route of the server
// (HandleDirect) takes only requests ServeMux routes to its pattern, with
// the same path values. ServeMux prefers a pattern with a literal where a
// direct route has a wildcard; a path is tried with, for each wildcard,
// every literal any pattern has, and one that none has, which is all
// ServeMux's precedence can tell apart. The check itself finds a literal
// pattern that a direct route would shadow.
func TestDirectRoutesAgreeWithServeMux(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	top, ok := a.s.routes().(mux)
	require.True(t, ok)
	require.NotEmpty(t, *top.direct)
	require.Empty(t, directRouteConflicts(top))

	shadowing := newMux(&[]string{}, &preflightRoutes{s: &Server{store: store.New(nil)}, methods: map[*http.ServeMux]map[string]*[]string{}})
	shadowing.HandleDirect("POST /realms/{realm}/decide", func(http.ResponseWriter, *http.Request, string) {})
	shadowing.Handle("POST /realms/master/decide", http.NotFoundHandler())
	require.Equal(t, []string{"POST /realms/master/decide: direct route POST /realms/{realm}/decide, ServeMux POST /realms/master/decide"},
		directRouteConflicts(shadowing))
}

// directRouteConflicts returns the requests m's direct routes take that
// ServeMux routes elsewhere or with other path values.
func directRouteConflicts(m mux) []string {
	literals := []string{"no-pattern-has-this-literal"}
	for _, p := range *m.patterns {
		_, path, _ := strings.Cut(p, " ")
		for seg := range strings.SplitSeq(path, "/") {
			if seg != "" && !strings.Contains(seg, "{") && !slices.Contains(literals, seg) {
				literals = append(literals, seg)
			}
		}
	}
	var out []string
	for _, d := range *m.direct {
		// The wildcard takes every literal, and one no pattern has.
		for _, lit := range literals {
			segs := slices.Clone(d.segments)
			segs[d.wild] = lit
			path := "/" + strings.Join(segs, "/")
			req := httptest.NewRequest(d.method, "http://x.test"+path, nil)
			_, pattern := m.ServeMux.Handler(req)
			if pattern != d.pattern {
				out = append(out, d.method+" "+path+": direct route "+d.pattern+", ServeMux "+pattern)
				continue
			}
			if value, ok := d.take(path); !ok || value != lit {
				out = append(out, d.method+" "+path+": the direct route does not take it with "+d.name+"="+lit)
			}
		}
	}
	return out
}
