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

	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
)

// TestOpenAPIDocumentsEveryRoute: the document's operations are exactly
// the server's routes, and GET /openapi.json serves the document.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := a.sendRaw("", http.MethodGet, a.url+"/openapi.json", "", "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, openAPIDocument, r.Body)
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)

	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var served []string
	for _, p := range a.s.patterns {
		p = strings.Replace(p, "{$}", "", 1) // ".../organizations/{$}" is the path with a trailing slash
		served = append(served, p)
	}
	slices.Sort(documented)
	slices.Sort(served)
	assert.Equal(t, served, documented)
}

// TestOpenAPIDocumentsOddPaths sends odd variants of every route's path
// (a slash or a segment percent-encoded, a dot segment, a trailing slash)
// with every method through an OpenAPI checker of its own: every answer
// must match the document. The server answers 404 or 405 for any path a
// template matches, so every operation must document both; POST
// .../global/roles (405), .../{orgId}%2Fdepartments (405) and
// /admin/realms/%2e%2e/organizations (404) matched operations that did not.
// Without an issuer a Host the server refuses (past 255 bytes) is a 400 on
// every operation, OPTIONS included, which once did not document it.
func TestOpenAPIDocumentsOddPaths(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	dept := a.createDept(org, "", "Root", "root")
	chk, err := openapitest.New(openAPIDocument)
	require.NoError(t, err)
	chk.HostRefused = refusedHost
	h := chk.Middleware(a.s)
	noIssuer := mustNew(t, WithFixture(orgFixture()), WithAdminSecret("boot"), WithWebUI())
	badHost := chk.Middleware(noIssuer)
	values := map[string]string{"{realm}": "acme", "{orgId}": org, "{departmentId}": dept, "{alias}": "acme"}
	send := func(path string, methods ...string) {
		for _, m := range methods {
			req := httptest.NewRequest(m, "http://x.test"+path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+a.admin)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	seen := map[string]bool{}
	for _, p := range a.s.patterns {
		_, tmpl, _ := strings.Cut(p, " ")
		tmpl = strings.Replace(tmpl, "{$}", "", 1)
		if seen[tmpl] {
			continue
		}
		seen[tmpl] = true
		segs := fillTemplate(tmpl, values)
		path := "/" + strings.Join(segs, "/")
		// Every method on the path itself: the wrong ones are 405s.
		send(path, "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
		for _, m := range []string{"GET", "POST", "OPTIONS"} {
			req := httptest.NewRequest(m, "http://x.test"+path, nil)
			req.Host = strings.Repeat("h", 256) + ".test"
			rec := httptest.NewRecorder()
			badHost.ServeHTTP(rec, req)
			require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s with a Host of 261 bytes", m, path)
		}
		var odd []string
		odd = append(odd, strings.TrimSuffix(path, "/")+"/")
		for i := range segs {
			if i > 0 { // the slash before segment i, encoded
				odd = append(odd, "/"+strings.Join(segs[:i], "/")+"%2F"+strings.Join(segs[i:], "/"))
			}
			if strings.HasPrefix(strings.Split(strings.TrimPrefix(tmpl, "/"), "/")[i], "{") {
				for _, v := range []string{"%2e%2e", "%2F"} { // a parameter that is a dot segment or a slash
					o := slices.Clone(segs)
					o[i] = v
					odd = append(odd, "/"+strings.Join(o, "/"))
				}
			}
		}
		for _, o := range odd {
			send(o, "GET", "POST") // HEAD is checked as GET
		}
	}
	require.Positive(t, chk.Checked())
	require.NoError(t, chk.Err())
}
