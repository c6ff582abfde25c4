package pep_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestOrganizations: in the shop fixture alice is assigned to Acme EU/Sales
// and Acme US/Ops; the server lists her organizations by name. The ids are
// the server's, looked up through the admin API.
func TestOrganizations(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	alice := g.token(t, "alice")
	c.SetToken(alice)

	ids := map[string]string{} // organization name, and organization/department name -> id
	for _, a := range g.assignments(t, "alice") {
		ids[a.OrganizationName] = a.OrganizationID
		ids[a.OrganizationName+"/"+a.DepartmentName] = a.DepartmentID
	}
	require.Len(t, ids, 4)

	oc, err := c.Organizations(t.Context())
	require.NoError(t, err)
	assert.Equal(t, pep.OrganizationContext{
		UserID: subject(t, alice),
		Tenants: []pep.Tenant{
			{ID: ids["Acme EU"], Name: "Acme EU", Departments: []pep.Department{{ID: ids["Acme EU/Sales"], Name: "Sales"}}},
			{ID: ids["Acme US"], Name: "Acme US", Departments: []pep.Department{{ID: ids["Acme US/Ops"], Name: "Ops"}}},
		},
	}, oc)

	r := g.last(t)
	assert.Equal(t, "/realms/acme/authorization-decision-provider/get-organizations", r.Path)
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "application/json", r.ContentType)
	assert.Equal(t, "Bearer "+alice, r.Authorization)
	assert.Equal(t, testClient, r.Body.ClientID)
}

// TestOrganizationsErrors: a failed get-organizations call returns no
// organization context and the error of its status. How each unusable 200
// is refused (unparseable, status false, organization missing, ...) is
// FuzzOrganizations's seeds'.
func TestOrganizationsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// config is the server's configuration when the fault is its own;
		// hook answers in its place otherwise.
		config string
		hook   gwHook
		check  func(t *testing.T, err error)
	}{
		{
			name:   "503 after retries",
			config: everyDecisionFails,
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, pep.ErrUnavailable)
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
			},
		},
		{
			name: "403",
			hook: statusHook(http.StatusForbidden),
			check: func(t *testing.T, err error) {
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusForbidden, re.StatusCode)
				assert.Equal(t, "Forbidden", re.ErrorName)
				assert.Equal(t, "injected", re.Message)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			if tt.config != "" {
				g.configure(t, tt.config)
			}
			g.setHook(tt.hook)
			c := g.newClient(t, fastRetry)
			c.SetToken(g.token(t, "alice"))
			oc, err := c.Organizations(t.Context())
			require.Error(t, err)
			assert.Equal(t, pep.OrganizationContext{}, oc)
			tt.check(t, err)
		})
	}
}
