package mockserver

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestOrgAPIEdges, on one organization: /departments/{orgId}/sub-departments
// names no department (it used to answer the root departments); a
// department template of more than 1,000 departments is a 400 that names
// the limit (that 1,000 is accepted and instantiates whole is
// internal/store's TestTemplateNodeLimit); the two GET routes added for
// Locations read a role linked to the organization (not one merely global
// or of the realm) and a live tenant (not a decommissioned one); and an
// empty query value is not its default (?offset= is not an integer,
// ?sortOrder= not ASC or DESC; they were read as absent).
func TestOrgAPIEdges(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	admin := a.token("master", "service-account-platform-admin")
	t.Run("organization id is not a department", func(t *testing.T) {
		a.createDept(org, "", "Root", "root")
		sub := "/" + org + "/departments/" + org + "/sub-departments"
		a.do(http.MethodGet, sub, nil).errBody(t, http.StatusNotFound)
		a.do(http.MethodPost, sub, map[string]any{"name": "x"}).errBody(t, http.StatusNotFound)
		a.do(http.MethodGet, "/"+org+"/departments/"+org, nil).errBody(t, http.StatusNotFound)
		assert.Equal(t, 1, list[deptJSON](a, "/"+org+"/departments").MetaData.TotalRows)
	})
	t.Run("department template node limit", func(t *testing.T) {
		kids := make([]map[string]any, 1000)
		for i := range kids {
			kids[i] = map[string]any{"name": fmt.Sprint("c", i)}
		}
		e := a.do(http.MethodPost, "/"+org+"/department-templates", map[string]any{"name": "big", "root": map[string]any{"name": "root", "children": kids}}).
			errBody(t, http.StatusBadRequest)
		assert.Contains(t, e.Message, "1000")
	})
	t.Run("org role and tenant reads", func(t *testing.T) {
		editor, viewer := a.id("role", "editor"), a.id("role", "viewer")
		a.do(http.MethodGet, "/"+org+"/roles/"+editor, nil).errBody(t, http.StatusNotFound)
		result[roleJSON](a, http.StatusOK, http.MethodPost, "/"+org+"/roles", map[string]any{"roleId": editor})
		assert.Equal(t, "editor", result[roleJSON](a, http.StatusOK, http.MethodGet, "/"+org+"/roles/"+editor, nil).Name)
		a.do(http.MethodGet, "/"+org+"/roles/"+viewer, nil).errBody(t, http.StatusNotFound)
		a.do(http.MethodGet, "/"+store.NewID()+"/roles/"+editor, nil).errBody(t, http.StatusNotFound)
		created := a.sendRaw(admin, http.MethodPost, a.url+"/admin/tenants", "application/json", `{"name":"readable","plan":"standard","adminEmail":"a@readable.test"}`)
		require.Equal(t, http.StatusCreated, created.Status)
		var rec struct {
			Result tenantRecord `json:"result"`
		}
		created.into(t, &rec)
		id := rec.Result.TenantID
		got := a.sendRaw(admin, http.MethodGet, a.url+"/admin/tenants/"+id, "", "")
		require.Equal(t, http.StatusOK, got.Status)
		assert.Contains(t, string(got.Body), `"status":"ACTIVE"`)
		assert.Contains(t, string(got.Body), `"plan":"standard"`)
		assert.NotContains(t, string(got.Body), "initialPassword", "the one-time password is shown once")
		a.sendRaw(a.admin, http.MethodGet, a.url+"/admin/tenants/"+id, "", "").errBody(t, http.StatusUnauthorized)
		require.Equal(t, http.StatusOK, a.sendRaw(admin, http.MethodDelete, a.url+"/admin/tenants/"+id, "", "").Status)
		a.sendRaw(admin, http.MethodGet, a.url+"/admin/tenants/"+id, "", "").errBody(t, http.StatusNotFound)
	})
	t.Run("empty query values are not defaults", func(t *testing.T) {
		for _, q := range []string{"?offset=", "?count=", "/" + org + "/applications?sortOrder=", "/" + org + "/applications?sortBy=",
			"/" + org + "/roles?isGlobal=", "/" + org + "/roles/available?includeGlobal="} {
			a.do(http.MethodGet, q, nil).errBody(t, http.StatusBadRequest)
		}
		a.sendRaw(admin, http.MethodGet, a.url+"/admin/audit?from=", "", "").errBody(t, http.StatusBadRequest)
		require.Equal(t, http.StatusOK, a.do(http.MethodGet, "?search=", nil).Status, "an empty search matches everything")
	})
}

// TestBodiesAreReadStrictly: on every kind of body-taking route a member
// given twice, or two members that differ only in case where the body is
// decoded into a struct, is a 400, and a Content-Type other than
// application/json is a 415. Map keys that differ in case are distinct
// attributes and stay accepted.
func TestBodiesAreReadStrictly(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	admin := a.token("master", "service-account-platform-admin")
	routes := []struct {
		name, method, path, token, valid string
		validStatus                      int
	}{
		{"create organization", http.MethodPost, a.base, a.admin, `{"name":"O","alias":"o2"}`, http.StatusCreated},
		{"update organization", http.MethodPut, a.base + "/" + org, a.admin, `{"name":"O"}`, http.StatusOK},
		{"create department", http.MethodPost, a.base + "/" + org + "/departments", a.admin, `{"name":"D"}`, http.StatusCreated},
		{"decision", http.MethodPost, a.url + "/realms/acme/authorization-decision-provider/authorize", a.admin,
			`{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{}}`, http.StatusOK},
		{"organization context", http.MethodPost, a.url + "/realms/acme/authorization-decision-provider/get-organizations", a.admin,
			`{"clientId":"orders-api"}`, http.StatusOK},
		{"configuration", http.MethodPut, a.url + "/admin/config", admin, `{"maxPageSize":100}`, http.StatusOK},
		{"tenant", http.MethodPost, a.url + "/admin/tenants", admin, `{"name":"strict","plan":"free","adminEmail":"a@strict.test"}`, http.StatusCreated},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			dupFirst := strings.Replace(rt.valid, "{", `{"x":1,"x":2,`, 1)
			folded := rt.valid[:len(rt.valid)-1] + "," + strings.ToUpper(rt.valid[1:strings.Index(rt.valid, ":")]) + ":null}"
			cases := []struct {
				name, contentType, body string
				want                    int
			}{
				{"a member twice", "application/json", dupFirst, http.StatusBadRequest},
				{"members differing in case", "application/json", folded, http.StatusBadRequest},
				{"invalid UTF-8 in a name", "application/json", strings.Replace(rt.valid, "{", "{\"x\xff\":1,", 1), http.StatusBadRequest},
				{"invalid UTF-8 in a value", "application/json", strings.Replace(rt.valid, "{", "{\"x\":\"\xed\xa0\x80\",", 1), http.StatusBadRequest},
				{"text/plain", "text/plain", rt.valid, http.StatusUnsupportedMediaType},
				{"no content type", "", rt.valid, http.StatusUnsupportedMediaType},
				{"form", "application/x-www-form-urlencoded", rt.valid, http.StatusUnsupportedMediaType},
				{"latin-1", "application/json; charset=iso-8859-1", rt.valid, http.StatusUnsupportedMediaType},
				{"two types", "application/json\ntext/plain", rt.valid, http.StatusUnsupportedMediaType},
				{"utf-8 charset", "application/json; charset=UTF-8", rt.valid, rt.validStatus},
			}
			for _, tc := range cases {
				r := a.sendRaw(rt.token, rt.method, rt.path, tc.contentType, tc.body)
				require.Equal(t, tc.want, r.Status, "%s: %s -> %s", tc.name, tc.body, r.Body)
				if tc.want >= 400 {
					r.errBody(t, tc.want)
				}
			}
		})
	}
	// Keys that are not UTF-8 become U+FFFD when decoded, so two different
	// ones were one key, and the last silently won.
	t.Run("attribute keys that are not UTF-8", func(t *testing.T) {
		for _, attrs := range []string{"{\"\xff\":[\"1\"],\"\xfe\":[\"2\"]}", "{\"\xff\":[\"1\"],\"\\ufffd\":[\"2\"]}", "{\"\xff\":[\"1\"]}"} {
			r := a.sendRaw(a.admin, http.MethodPost, a.base+"/"+org+"/departments", "application/json",
				`{"name":"x","attributes":`+attrs+`}`)
			r.errBody(t, http.StatusBadRequest)
			require.Contains(t, string(r.Body), "UTF-8", "%q", attrs)
		}
	})
	t.Run("attribute keys differing in case are distinct", func(t *testing.T) {
		r := a.sendRaw(a.admin, http.MethodPost, a.base, "application/json",
			`{"name":"Attrs","alias":"attrs","attributes":{"Region":["eu"],"region":["us"]}}`)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		r = a.sendRaw(a.admin, http.MethodPost, a.base, "application/json",
			`{"name":"Attrs","alias":"attrs2","attributes":{"region":["eu"],"region":["us"]}}`)
		r.errBody(t, http.StatusBadRequest)
	})
}

// sendRaw sends body as is with the given Content-Type ("" for none; lines
// of it become header lines of their own).
func (a *orgAPI) sendRaw(token, method, url, contentType, body string) *apiResp {
	a.t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		h["Content-Type"] = strings.Split(contentType, "\n")
	}
	return a.sendHeader(a.t, method, url, body, h)
}

// sendHeader sends method url (absolute) with body and the headers of h
// (canonical keys), and reads the answer whole.
func (a *orgAPI) sendHeader(t testing.TB, method, url, body string, h http.Header) *apiResp {
	t.Helper()
	req := newRequest(t, method, url, strings.NewReader(body))
	maps.Copy(req.Header, h)
	resp := testkit.Must(a.hc.Do(req))(t)
	defer resp.Body.Close()
	b := testkit.Must(io.ReadAll(resp.Body))(t)
	return &apiResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// TestWrongMethodIs405WithAllow: a known path with a method it does not
// take is a 405 naming the methods it does take, with the service's error
// body; an unknown path stays a 404. Both used to be 404s.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodPut, a.base, "GET, HEAD, OPTIONS, POST"},
		{http.MethodPatch, a.base + "/" + org, "DELETE, GET, HEAD, OPTIONS, PUT"},
		{http.MethodPut, a.base + "/" + org + "/departments", "GET, HEAD, OPTIONS, POST"},
		{http.MethodGet, a.url + "/realms/acme/authorization-decision-provider/authorize", "OPTIONS, POST"},
		{http.MethodGet, a.url + "/realms/acme/protocol/openid-connect/token", "OPTIONS, POST"},
		{http.MethodPost, a.url + "/realms/acme/protocol/openid-connect/certs", "GET, HEAD, OPTIONS"},
		{http.MethodDelete, a.url + "/admin/config", "GET, HEAD, OPTIONS, PATCH, PUT"},
		{http.MethodPut, a.url + "/admin/tenants", "OPTIONS, POST"},
		{http.MethodPost, a.url + "/openapi.json", "GET, HEAD, OPTIONS"},
	}
	for _, tt := range tests {
		r := a.sendRaw(a.admin, tt.method, tt.path, "application/json", `{}`)
		r.errBody(t, http.StatusMethodNotAllowed)
		assert.Equal(t, tt.allow, r.Header.Get("Allow"), "%s %s", tt.method, tt.path)
	}
	for _, path := range []string{a.url + "/nowhere", a.base + "/" + org + "/nothing", a.url + "/admin/nothing"} {
		a.sendRaw(a.admin, http.MethodGet, path, "", "").errBody(t, http.StatusNotFound)
	}
}

// TestLocationsAnswer: the Location of every 201 names a URL whose GET
// answers 200 with the resource just created. Those of roles/create and of
// /admin/tenants used to answer 404.
func TestLocationsAnswer(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	admin := a.token("master", "service-account-platform-admin")
	org := a.createOrg("Acme", "acme")
	dept := a.createDept(org, "", "Root", "root")
	tmpl := `{"name":"t","root":{"name":"Branch","children":[{"name":"Leaf"}]}}`
	creates := []struct {
		name, path, token, body, idField string
	}{
		{"organization", a.base, a.admin, `{"name":"Loc","alias":"loc"}`, "id"},
		{"organization with a trailing slash", a.base + "/", a.admin, `{"name":"Loc 2","alias":"loc2"}`, "id"},
		{"root department", a.base + "/" + org + "/departments", a.admin, `{"name":"D"}`, "id"},
		{"sub-department", a.base + "/" + org + "/departments/" + dept + "/sub-departments", a.admin, `{"name":"S"}`, "id"},
		{"role", a.base + "/" + org + "/roles/create", a.admin, `{"name":"located"}`, "id"},
		{"property template", a.base + "/" + org + "/property-templates", a.admin, `{"name":"p","properties":[{"key":"k","type":"STRING"}]}`, "id"},
		{"department template", a.base + "/" + org + "/department-templates", a.admin, tmpl, "id"},
		{"catalog application", a.base + "/global/applications", a.admin, `{"clientId":"orders-api"}`, "id"},
		{"tenant", a.url + "/admin/tenants", admin, `{"name":"located","plan":"free","adminEmail":"a@located.test"}`, "tenantId"},
	}
	for _, c := range creates {
		t.Run(c.name, func(t *testing.T) {
			created := a.sendRaw(c.token, http.MethodPost, c.path, "application/json", c.body)
			require.Equal(t, http.StatusCreated, created.Status, "%s", created.Body)
			loc := created.Header.Get("Location")
			require.True(t, strings.HasPrefix(loc, a.url+"/"), "absolute, on the public URL: %s", loc)
			got := a.sendRaw(c.token, http.MethodGet, loc, "", "")
			require.Equal(t, http.StatusOK, got.Status, "GET %s: %s", loc, got.Body)
			var want, have struct {
				Result map[string]any `json:"result"`
			}
			created.into(t, &want)
			got.into(t, &have)
			require.Equal(t, want.Result[c.idField], have.Result[c.idField])
		})
	}
	// A template instantiation's Location is its top department.
	tm := result[deptTmplJSON](a, http.StatusCreated, http.MethodPost, "/"+org+"/department-templates", json.RawMessage(tmpl))
	inst := a.do(http.MethodPost, "/"+org+"/departments", map[string]any{"templateId": tm.ID})
	require.Equal(t, http.StatusCreated, inst.Status)
	got := a.sendRaw(a.admin, http.MethodGet, inst.Header.Get("Location"), "", "")
	require.Equal(t, http.StatusOK, got.Status)
	require.Contains(t, string(got.Body), `"name":"Branch"`)
}

// TestLocationsFollowThePublicURL: a Location is built on the public base
// URL, as the issuer is, so it answers behind a proxy that serves the
// server under a path prefix. It was the request's path alone, which
// dropped the prefix of WithIssuer("https://idp.example/auth").
func TestLocationsFollowThePublicURL(t *testing.T) {
	t.Parallel()
	serve := func(s *Server, target, token, contentType, body string, header http.Header) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
		r.RemoteAddr = "10.0.0.1:5000"
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		r.Header.Set("Content-Type", contentType)
		for k, v := range header {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	// token asks the token endpoint, through the same proxy headers: the
	// token's issuer must be the public URL the calls are checked against.
	token := func(t *testing.T, s *Server, realm string, form url.Values, header http.Header) string {
		t.Helper()
		w := serve(s, "http://api.test:8080/realms/"+realm+"/protocol/openid-connect/token", "",
			"application/x-www-form-urlencoded", form.Encode(), header)
		require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
		var out struct {
			AccessToken string `json:"access_token"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		return out.AccessToken
	}
	create := func(t *testing.T, s *Server, target, token, body string, header http.Header) (loc, id string) {
		t.Helper()
		w := serve(s, target, token, "application/json", body, header)
		require.Equal(t, http.StatusCreated, w.Code, "%s", w.Body)
		var out struct {
			Result struct {
				ID       string `json:"id"`
				TenantID string `json:"tenantId"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		return w.Header().Get("Location"), out.Result.ID + out.Result.TenantID
	}
	for _, tc := range []struct {
		name   string
		opts   []Option
		header http.Header
		base   string
	}{
		{"issuer with a path prefix", []Option{WithIssuer("https://idp.example/auth")}, nil, "https://idp.example/auth"},
		{"issuer with a path prefix and a slash", []Option{WithIssuer("https://idp.example/auth/")}, nil, "https://idp.example/auth"},
		{"no issuer", nil, nil, "http://api.test:8080"},
		{"no issuer, trusted proxy", []Option{WithTrustedProxies("10.0.0.0/8")},
			http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"public.test"}}, "https://public.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, append([]Option{WithFixture(orgFixture()), WithAdminSecret("boot"), es256Tokens}, tc.opts...)...)
			alice := token(t, s, "acme", url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
				"username": {"alice"}, "password": {"alice"}}, tc.header)
			admin := token(t, s, "master", url.Values{"grant_type": {"client_credentials"},
				"client_id": {"platform-admin"}, "client_secret": {"boot"}}, tc.header)
			orgs := "http://api.test:8080/admin/realms/acme/organizations"
			loc, org := create(t, s, orgs, alice, `{"name":"Loc","alias":"loc"}`, tc.header)
			require.Equal(t, tc.base+"/admin/realms/acme/organizations/"+org, loc)
			loc, dept := create(t, s, orgs+"/"+org+"/departments", alice, `{"name":"D"}`, tc.header)
			require.Equal(t, tc.base+"/admin/realms/acme/organizations/"+org+"/departments/"+dept, loc)
			loc, tenant := create(t, s, "http://api.test:8080/admin/tenants", admin,
				`{"name":"located","plan":"free","adminEmail":"a@located.test"}`, tc.header)
			require.Equal(t, tc.base+"/admin/tenants/"+tenant, loc)
		})
	}
}
