package mockserver

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// cascadeWorld is two organizations with everything that can hang on one.
type cascadeWorld struct {
	acme, beta                   string // organization ids
	sales, inside, deep, support string // acme's departments
	betaOps                      string // beta's department
	branch                       string // acme's department made from a template
	bob, carol                   string
	editor, auditor, viewer      string
	eng                          string
	ordersApp                    string
}

func buildCascadeWorld(a *orgAPI) cascadeWorld {
	a.t.Helper()
	w := cascadeWorld{bob: a.id("user", "bob"), carol: a.id("user", "carol"),
		editor: a.id("role", "editor"), auditor: a.id("role", "auditor"), viewer: a.id("role", "viewer"), eng: a.id("group", "eng")}
	w.acme = a.createOrg("Acme", "acme")
	w.beta = a.createOrg("Beta", "beta")
	w.sales = a.createDept(w.acme, "", "Sales", "sales")
	w.inside = a.createDept(w.acme, w.sales, "Inside", "inside")
	w.deep = a.createDept(w.acme, w.inside, "Deep", "deep")
	w.support = a.createDept(w.acme, "", "Support", "support")
	w.betaOps = a.createDept(w.beta, "", "Ops", "ops")

	tmpl := result[deptTmplJSON](a, http.StatusCreated, http.MethodPost, "/"+w.acme+"/department-templates",
		map[string]any{"name": "branch", "root": map[string]any{"name": "Branch", "alias": "branch", "roleIds": []string{w.auditor}}})
	w.branch = result[deptJSON](a, http.StatusCreated, http.MethodPost, "/"+w.acme+"/departments", map[string]any{"templateId": tmpl.ID}).ID

	assign := func(org, dept, user string) {
		result[assignmentJSON](a, http.StatusOK, http.MethodPost, "/"+org+"/departments/"+dept+"/users", map[string]any{"userId": user})
	}
	for _, d := range []string{w.sales, w.inside, w.deep, w.support, w.branch} {
		assign(w.acme, d, w.bob)
	}
	assign(w.acme, w.deep, w.carol)
	assign(w.beta, w.betaOps, w.bob)

	result[roleJSON](a, http.StatusOK, http.MethodPost, "/"+w.acme+"/roles", map[string]any{"roleId": w.editor})
	result[roleJSON](a, http.StatusOK, http.MethodPost, "/"+w.beta+"/roles", map[string]any{"roleId": w.viewer})
	result[groupJSON](a, http.StatusOK, http.MethodPost, "/"+w.acme+"/groups", map[string]any{"groupId": w.eng})
	w.ordersApp = result[appJSON](a, http.StatusCreated, http.MethodPost, "/global/applications", map[string]any{"clientId": "orders-api"}).ID
	result[appJSON](a, http.StatusOK, http.MethodPost, "/"+w.acme+"/applications/assign", map[string]any{"clientId": "orders-api"})
	result[appJSON](a, http.StatusOK, http.MethodPost, "/"+w.beta+"/applications/assign", map[string]any{"clientId": "orders-api"})
	result[propTmplJSON](a, http.StatusCreated, http.MethodPost, "/"+w.acme+"/property-templates",
		map[string]any{"name": "p", "properties": []map[string]any{{"key": "cost", "type": "NUMBER"}}})
	a.realm(func(rm *store.Realm) {
		require.Equal(a.t, store.Set{w.editor: {}, w.auditor: {}, w.viewer: {}}, rm.UserOrgRoleIDs(w.bob, ""))
	})
	return w
}

func TestDeleteOrganizationCascade(t *testing.T) {
	a := newOrgAPI(t)
	w := buildCascadeWorld(a)

	result[deletedJSON](a, http.StatusOK, http.MethodDelete, "/"+w.acme, nil)

	// Through the API.
	a.do(http.MethodGet, "/"+w.acme, nil).errBody(t, http.StatusNotFound)
	a.do(http.MethodGet, "/alias/acme", nil).errBody(t, http.StatusNotFound)
	for _, path := range []string{"/departments", "/departments/" + w.deep, "/departments/tenant-tree", "/roles",
		"/groups", "/applications", "/property-templates", "/department-templates"} {
		a.do(http.MethodGet, "/"+w.acme+path, nil).errBody(t, http.StatusNotFound)
	}
	bobs := list[userAssignmentJSON](a, "/users/"+w.bob+"/assignments")
	assert.Equal(t, []userAssignmentJSON{{UserID: w.bob, OrganizationID: w.beta, OrganizationName: "Beta",
		DepartmentID: w.betaOps, DepartmentName: "Ops"}}, bobs.Results)
	assert.Empty(t, list[userAssignmentJSON](a, "/users/"+w.carol+"/assignments").Results)
	result[groupJSON](a, http.StatusOK, http.MethodPost, "/"+w.beta+"/groups", map[string]any{"groupId": w.eng})
	assert.Len(t, list[appJSON](a, "/"+w.beta+"/applications").Results, 1, "the other organization keeps its application")
	result[appJSON](a, http.StatusOK, http.MethodGet, "/global/applications/"+w.ordersApp, nil)
	assert.Equal(t, 5, list[roleJSON](a, "/global/roles").MetaData.TotalRows, "realm roles stay")
	a.createOrg("Acme again", "acme") // the alias is free
	result[deptJSON](a, http.StatusCreated, http.MethodPost, "/"+w.beta+"/departments", map[string]any{"name": "Sales", "alias": "sales"})

	// What the store keeps is internal/store's TestDeleteOrganizationCascades;
	// here, that the API's deletion leaves it consistent.
	a.realm(func(*store.Realm) {})
}

func TestDeleteDepartmentCascade(t *testing.T) {
	a := newOrgAPI(t)
	w := buildCascadeWorld(a)

	result[deletedJSON](a, http.StatusOK, http.MethodDelete, "/"+w.acme+"/departments/"+w.sales, nil)
	for _, id := range []string{w.sales, w.inside, w.deep} {
		a.do(http.MethodGet, "/"+w.acme+"/departments/"+id, nil).errBody(t, http.StatusNotFound)
		a.do(http.MethodGet, "/"+w.acme+"/departments/"+id+"/users", nil).errBody(t, http.StatusNotFound)
	}
	tree := result[[]treeNodeJSON](a, http.StatusOK, http.MethodGet, "/"+w.acme+"/departments/tenant-tree", nil)
	assert.Len(t, tree, 2, "Branch and Support stay")
	assert.Len(t, list[userAssignmentJSON](a, "/users/"+w.bob+"/assignments").Results, 3)
	assert.Empty(t, list[userAssignmentJSON](a, "/users/"+w.carol+"/assignments").Results)
	assert.Len(t, list[roleJSON](a, "/"+w.acme+"/roles").Results, 1, "organization links stay")

	// Deleting the template-made department drops its template grant.
	result[deletedJSON](a, http.StatusOK, http.MethodDelete, "/"+w.acme+"/departments/"+w.branch, nil)
	a.realm(func(rm *store.Realm) {
		for _, id := range []string{w.sales, w.inside, w.deep, w.branch} {
			assert.NotContains(t, rm.Depts, id)
			assert.NotContains(t, rm.AssignmentsByDept(), id)
			assert.NotContains(t, rm.AssignmentsByUser()[w.bob], id)
		}
		assert.Equal(t, store.Set{w.editor: {}, w.viewer: {}}, rm.UserOrgRoleIDs(w.bob, ""), "the auditor template grant is gone")
		assert.Equal(t, 2, rm.AssignmentCount())
	})
}

// snapshot captures the realm's organization data for comparison.
type snapshot struct {
	depts, assignments int
	deptIDs            []string
}

func (a *orgAPI) snapshot() snapshot {
	var s snapshot
	a.realm(func(rm *store.Realm) {
		s = snapshot{depts: len(rm.Depts), assignments: rm.AssignmentCount(), deptIDs: slices.Sorted(maps.Keys(rm.Depts))}
	})
	return s
}

func TestFailedTemplateInstantiationLeavesNothing(t *testing.T) {
	a := newOrgAPI(t)
	orgID := a.createOrg("Acme", "acme")
	existing := a.createDept(orgID, "", "Existing", "back-office")
	tmpl := result[deptTmplJSON](a, http.StatusCreated, http.MethodPost, "/"+orgID+"/department-templates",
		map[string]any{"name": "branch", "root": map[string]any{"name": "Branch", "alias": "branch", "children": []map[string]any{
			{"name": "Front", "alias": "front", "children": []map[string]any{{"name": "Desk", "alias": "desk"}}},
			{"name": "Back", "alias": "back-office"},
		}}})
	before := a.snapshot()

	// The last node's alias clashes: 409 and nothing of the subtree exists.
	e := a.do(http.MethodPost, "/"+orgID+"/departments", map[string]any{"templateId": tmpl.ID}).errBody(t, http.StatusConflict)
	// A department's alias is not looked up for an error (echo.go).
	assert.Contains(t, e.Message, "department alias (a value of 11 bytes, not repeated) already exists")
	assert.Equal(t, before, a.snapshot())
	a.do(http.MethodPost, "/"+orgID+"/departments/"+existing+"/sub-departments", map[string]any{"templateId": tmpl.ID}).
		errBody(t, http.StatusConflict)
	assert.Equal(t, before, a.snapshot())

	// A property template the subtree does not satisfy: 400, nothing created.
	result[deletedJSON](a, http.StatusOK, http.MethodDelete, "/"+orgID+"/departments/"+existing, nil)
	result[propTmplJSON](a, http.StatusCreated, http.MethodPost, "/"+orgID+"/property-templates",
		map[string]any{"name": "p", "properties": []map[string]any{{"key": "cost", "type": "NUMBER", "required": true}}})
	before = a.snapshot()
	a.do(http.MethodPost, "/"+orgID+"/departments", map[string]any{"templateId": tmpl.ID}).errBody(t, http.StatusBadRequest)
	assert.Equal(t, before, a.snapshot())
	assert.Zero(t, before.depts)
}
