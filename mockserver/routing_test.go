package mockserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	m := mux{ServeMux: http.NewServeMux(), unrouted: http.NewServeMux(), patterns: &[]string{},
		preflights: &preflightRoutes{s: &Server{}, methods: map[*http.ServeMux]map[string]*[]string{}}}
	m.ServeMux.Handle("/", http.HandlerFunc(m.noRoute))
	ref := http.NewServeMux()
	options := map[string]bool{}
	for _, p := range patterns {
		m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Pattern", p)
			w.Header().Set("X-Values", r.PathValue("id")+"|"+r.PathValue("path")+"|"+r.PathValue("v")+"|"+r.PathValue("w"))
			w.WriteHeader(299)
		})
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
