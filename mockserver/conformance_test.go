package mockserver

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOrganizationIDIsNotADepartment: /departments/{orgId}/sub-departments
// names no department; it used to answer the root departments.
func TestOrganizationIDIsNotADepartment(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	a.createDept(org, "", "Root", "root")
	sub := "/" + org + "/departments/" + org + "/sub-departments"
	a.do(http.MethodGet, sub, nil).errBody(t, http.StatusNotFound)
	a.do(http.MethodPost, sub, map[string]any{"name": "x"}).errBody(t, http.StatusNotFound)
	a.do(http.MethodGet, "/"+org+"/departments/"+org, nil).errBody(t, http.StatusNotFound)
	assert.Equal(t, 1, list[deptJSON](a, "/"+org+"/departments").MetaData.TotalRows)
}

// TestDepartmentTemplateNodeLimit: a template of more than 1,000 departments
// is a 400 that names the limit; 1,000 is accepted and instantiates whole.
func TestDepartmentTemplateNodeLimit(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	wide := func(n int) map[string]any {
		kids := make([]map[string]any, n-1)
		for i := range kids {
			kids[i] = map[string]any{"name": fmt.Sprint("c", i)}
		}
		return map[string]any{"name": "root", "children": kids}
	}
	path := "/" + org + "/department-templates"
	e := a.do(http.MethodPost, path, map[string]any{"name": "big", "root": wide(1001)}).errBody(t, http.StatusBadRequest)
	assert.Contains(t, e.Message, "1000")
	tmpl := result[deptTmplJSON](a, http.StatusCreated, http.MethodPost, path, map[string]any{"name": "max", "root": wide(1000)})
	result[deptJSON](a, http.StatusCreated, http.MethodPost, "/"+org+"/departments", map[string]any{"templateId": tmpl.ID})
	var tree []treeNodeJSON
	r := a.do(http.MethodGet, "/"+org+"/departments/tenant-tree", nil)
	require.Equal(t, http.StatusOK, r.Status)
	var body struct {
		Result *[]treeNodeJSON `json:"result"`
	}
	r.into(t, &body)
	tree = *body.Result
	require.Len(t, tree, 1)
	assert.Len(t, tree[0].Children, 999)
}
