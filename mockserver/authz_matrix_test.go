package mockserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// orgRoute is one route of the organization API with a request that
// succeeds against orgWorld.
type orgRoute struct {
	method string
	path   string // relative to .../organizations; {placeholders} from orgWorld
	body   any
	status int    // the admin's success status
	action string // the audit action of a mutating route
}

// orgRoutes lists EVERY route of the organization API (spec 4.1 to 4.8 and
// the organization list). A route added to the server belongs here.
var orgRoutes = []orgRoute{
	{"GET", "", nil, 200, ""},
	{"POST", "", map[string]any{"name": "New", "alias": "new-org"}, 201, "organization.create"},
	{"GET", "/alias/{alias}", nil, 200, ""},
	{"GET", "/{org}", nil, 200, ""},
	{"PUT", "/{org}", map[string]any{"name": "Renamed"}, 200, "organization.update"},
	{"DELETE", "/{org}", nil, 200, "organization.delete"},

	{"GET", "/{org}/departments", nil, 200, ""},
	{"GET", "/{org}/departments/tenant-tree", nil, 200, ""},
	{"POST", "/{org}/departments", map[string]any{"name": "New"}, 201, "department.create"},
	{"GET", "/{org}/departments/{dept}", nil, 200, ""},
	{"PUT", "/{org}/departments/{dept}", map[string]any{"name": "Renamed"}, 200, "department.update"},
	{"DELETE", "/{org}/departments/{dept}", nil, 200, "department.delete"},
	{"GET", "/{org}/departments/{dept}/sub-departments", nil, 200, ""},
	{"POST", "/{org}/departments/{dept}/sub-departments", map[string]any{"name": "New"}, 201, "department.create"},
	{"GET", "/{org}/departments/{dept}/sub-departments/{sub}", nil, 200, ""},
	{"PUT", "/{org}/departments/{dept}/sub-departments/{sub}", map[string]any{"name": "Renamed"}, 200, "department.update"},
	{"DELETE", "/{org}/departments/{dept}/sub-departments/{sub}", nil, 200, "department.delete"},

	{"GET", "/{org}/departments/{dept}/users", nil, 200, ""},
	{"POST", "/{org}/departments/{dept}/users", map[string]any{"userId": "{carol}", "departmentId": "{dept}"}, 200, "assignment.create"},
	{"DELETE", "/{org}/departments/{dept}/users/{bob}", nil, 200, "assignment.delete"},
	{"GET", "/users/{bob}/assignments", nil, 200, ""},
	{"GET", "/users/{bob}/assignments-tree", nil, 200, ""},

	{"GET", "/{org}/roles", nil, 200, ""},
	{"GET", "/{org}/roles/available", nil, 200, ""},
	{"POST", "/{org}/roles", map[string]any{"roleId": "{auditor}"}, 200, "role.link"},
	{"POST", "/{org}/roles/create", map[string]any{"name": "new-role"}, 201, "role.create"},
	{"DELETE", "/{org}/roles/{editor}", nil, 200, "role.unlink"},
	{"GET", "/global/roles", nil, 200, ""},

	{"GET", "/{org}/groups", nil, 200, ""},
	{"POST", "/{org}/groups", map[string]any{"groupId": "{ops}"}, 200, "group.link"},
	{"DELETE", "/{org}/groups/{eng}", nil, 200, "group.unlink"},

	{"GET", "/{org}/applications", nil, 200, ""},
	{"POST", "/{org}/applications/assign", map[string]any{"clientId": "billing-api"}, 200, "application.assign"},
	{"GET", "/{org}/applications/orders-api", nil, 200, ""},
	{"DELETE", "/{org}/applications/orders-api", nil, 200, "application.unassign"},
	{"GET", "/global/applications", nil, 200, ""},
	{"POST", "/global/applications", map[string]any{"clientId": "hr-api"}, 201, "application.register"},
	{"GET", "/global/applications/{app}", nil, 200, ""},
	{"PUT", "/global/applications/{app}", map[string]any{"name": "Orders"}, 200, "application.update"},
	{"DELETE", "/global/applications/{app}", nil, 200, "application.delete"},

	{"GET", "/{org}/property-templates", nil, 200, ""},
	{"POST", "/{org}/property-templates", map[string]any{"name": "p2", "properties": []map[string]any{{"key": "k2", "type": "STRING"}}}, 201, "propertyTemplate.create"},
	{"GET", "/{org}/property-templates/{ptmpl}", nil, 200, ""},
	{"PUT", "/{org}/property-templates/{ptmpl}", map[string]any{"name": "p1"}, 200, "propertyTemplate.update"},
	{"DELETE", "/{org}/property-templates/{ptmpl}", nil, 200, "propertyTemplate.delete"},
	{"GET", "/{org}/department-templates", nil, 200, ""},
	{"POST", "/{org}/department-templates", map[string]any{"name": "t2", "root": map[string]any{"name": "R"}}, 201, "departmentTemplate.create"},
	{"GET", "/{org}/department-templates/{dtmpl}", nil, 200, ""},
}

// orgWorld seeds one of everything through the API and returns the values
// of the placeholders orgRoutes uses.
func orgWorld(a *orgAPI) map[string]string {
	a.t.Helper()
	w := map[string]string{"alias": "acme"}
	w["org"] = a.createOrg("Acme", "acme")
	w["dept"] = a.createDept(w["org"], "", "Sales", "sales")
	w["sub"] = a.createDept(w["org"], w["dept"], "Inside", "inside")
	for _, u := range []string{"bob", "carol"} {
		w[u] = a.id("user", u)
	}
	for _, r := range []string{"auditor", "editor"} {
		w[r] = a.id("role", r)
	}
	for _, g := range []string{"eng", "ops"} {
		w[g] = a.id("group", g)
	}
	org := "/" + w["org"]
	result[assignmentJSON](a, http.StatusOK, http.MethodPost, org+"/departments/"+w["dept"]+"/users", map[string]any{"userId": w["bob"]})
	result[roleJSON](a, http.StatusOK, http.MethodPost, org+"/roles", map[string]any{"roleId": w["editor"]})
	result[groupJSON](a, http.StatusOK, http.MethodPost, org+"/groups", map[string]any{"groupId": w["eng"]})
	w["app"] = result[appJSON](a, http.StatusCreated, http.MethodPost, "/global/applications", map[string]any{"clientId": "orders-api"}).ID
	result[appJSON](a, http.StatusCreated, http.MethodPost, "/global/applications", map[string]any{"clientId": "billing-api"})
	result[appJSON](a, http.StatusOK, http.MethodPost, org+"/applications/assign", map[string]any{"clientId": "orders-api"})
	w["ptmpl"] = result[propTmplJSON](a, http.StatusCreated, http.MethodPost, org+"/property-templates",
		map[string]any{"name": "p", "properties": []map[string]any{{"key": "k", "type": "STRING"}}}).ID
	w["dtmpl"] = result[deptTmplJSON](a, http.StatusCreated, http.MethodPost, org+"/department-templates",
		map[string]any{"name": "t", "root": map[string]any{"name": "R"}}).ID
	return w
}

// fill replaces {placeholders} in s.
func fill(s string, w map[string]string) string {
	for k, v := range w {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

func fillBody(body any, w map[string]string) any {
	m, ok := body.(map[string]any)
	if !ok {
		return body
	}
	out := map[string]any{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			v = fill(s, w)
		}
		out[k] = v
	}
	return out
}

// TestAuthorizationMatrix sends every organization route with no token, a
// token of another realm, a valid token without realm management and an
// admin token: 401, 401, 403, success. A mutating route leaves an audit
// entry naming its action and resource.
func TestAuthorizationMatrix(t *testing.T) {
	for _, rt := range orgRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			t.Parallel()
			a := newOrgAPI(t)
			w := orgWorld(a)
			path, body := fill(rt.path, w), fillBody(rt.body, w)
			require.NotContains(t, path, "{", "unfilled placeholder")

			callers := []struct {
				name   string
				token  string
				status int
			}{
				{"no token", "", http.StatusUnauthorized},
				{"token of another realm", a.token("globex", "gina"), http.StatusUnauthorized},
				{"no realm management", a.token("acme", "bob"), http.StatusForbidden},
				{"realm admin", a.admin, rt.status},
			}
			for _, c := range callers {
				r := a.doAs(c.token, rt.method, path, body)
				require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
				if c.status >= 400 {
					r.errBody(t, c.status)
				}
				if c.status == http.StatusUnauthorized {
					assert.NotEmpty(t, r.Header.Get("WWW-Authenticate"), c.name)
				}
			}
			if rt.action == "" {
				return
			}
			alice := a.id("user", "alice")
			entries := auditEntries(a.s, store.AuditFilter{Action: rt.action, ActorID: alice})
			require.NotEmpty(t, entries, "no audit entry for %s", rt.action)
			assert.Equal(t, store.OutcomeSuccess, entries[0].Outcome)
			assert.NotEmpty(t, entries[0].ResourceID)
		})
	}
}
