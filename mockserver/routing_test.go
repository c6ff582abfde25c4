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
