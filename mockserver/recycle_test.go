package mockserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// A department made after another was deleted may take its integer handle
// in the store; over the API it must carry nothing of the deleted one: not
// its assignments, not the org roles they granted, not its organization
// membership.
func TestRecycledDepartmentGrantsNothing(t *testing.T) {
	a := newOrgAPI(t)
	bob, carol := a.id("user", "bob"), a.id("user", "carol")
	auditor := a.id("role", "auditor")
	bobTok := a.token("acme", "bob")
	o := a.createOrg("O", "o")
	tm, err := a.expect(201, "POST", "/"+o+"/department-templates", map[string]any{"name": "t", "root": map[string]any{"name": "T", "roleIds": []string{auditor}, "children": []map[string]any{{"name": "c", "roleIds": []string{auditor}}}}})
	require.NoError(t, err)
	for round := range 5 {
		x, err := a.expect(201, "POST", "/"+o+"/departments", map[string]any{"templateId": tm})
		require.NoError(t, err)
		_, err = a.expect(200, "POST", "/"+o+"/departments/"+x+"/users", map[string]any{"userId": bob})
		require.NoError(t, err)
		var before store.Set
		a.realm(func(rm *store.Realm) { before = rm.UserOrgRoleIDs(bob, "") })
		require.Contains(t, before, auditor)
		_, err = a.expect(200, "DELETE", "/"+o+"/departments/"+x, nil)
		require.NoError(t, err)
		// recycled: plain department and a template one
		y, err := a.expect(201, "POST", "/"+o+"/departments", map[string]any{"name": "Y"})
		require.NoError(t, err)
		z, err := a.expect(201, "POST", "/"+o+"/departments", map[string]any{"templateId": tm})
		require.NoError(t, err)
		_, err = a.expect(200, "POST", "/"+o+"/departments/"+y+"/users", map[string]any{"userId": carol})
		require.NoError(t, err)
		a.realm(func(rm *store.Realm) {
			require.Empty(t, rm.UserOrgRoleIDs(bob, ""), "round %d", round)
			require.Len(t, rm.AssignmentsByDept(), 1)
		})
		for _, p := range []string{"/users/" + bob + "/assignments", "/users/" + bob + "/assignments-tree", "/" + o + "/departments/" + z + "/users"} {
			r, err := a.send(a.admin, "GET", p, nil)
			require.NoError(t, err)
			require.Equal(t, 200, r.Status)
			require.NotContains(t, string(r.Body), bob, p)
		}
		r, err := a.send(bobTok, "POST", a.url+"/realms/acme/authorization-decision-provider/get-organizations", `{"clientId":"orders-api"}`)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(r.Body), o), string(r.Body))
		_, err = a.expect(200, "DELETE", "/"+o+"/departments/"+y, nil)
		require.NoError(t, err)
		_, err = a.expect(200, "DELETE", "/"+o+"/departments/"+z, nil)
		require.NoError(t, err)
	}
}
