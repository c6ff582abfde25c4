package store

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// testRealm returns a realm with users alice and bob, roles viewer (global),
// editor and auditor, groups eng and ops, and clients orders-api and
// billing-api, each added the way the identity side does.
func testRealm(t *testing.T) *Realm {
	t.Helper()
	r := NewRealm("acme", t0)
	for _, name := range []string{"alice", "bob"} {
		r.addUser(&User{ID: "u-" + name, Username: name, RoleIDs: Set{}, GroupIDs: Set{}})
	}
	for _, name := range []string{"viewer", "editor", "auditor"} {
		role := &Role{ID: "r-" + name, Name: name, Attributes: Attributes{}}
		if name == "viewer" {
			role.Attributes["global"] = []string{"true"}
		}
		r.addRole(role)
	}
	for _, name := range []string{"eng", "ops"} {
		r.Groups["g-"+name] = &Group{ID: "g-" + name, Name: name, Path: "/" + name}
		r.GroupByName[name] = "g-" + name
	}
	for _, cid := range []string{"orders-api", "billing-api"} {
		r.Clients["c-"+cid] = &Client{ID: "c-" + cid, ClientID: cid}
		r.ClientByID[cid] = "c-" + cid
	}
	return r
}

func mustOrg(t *testing.T, r *Realm, name, alias string) *Organization {
	t.Helper()
	return testkit.Must(r.CreateOrganization(OrgSpec{Name: name, Alias: alias}, t0))(t)
}

func mustDept(t *testing.T, r *Realm, orgID, parentID string, spec DeptSpec) *Department {
	t.Helper()
	return testkit.Must(r.CreateDepartment(orgID, parentID, spec, t0))(t)
}

func requireConsistent(t *testing.T, r *Realm) {
	t.Helper()
	require.NoError(t, r.CheckInvariants())
}

func fieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func TestOrganizationsSearchAndOrder(t *testing.T) {
	r := testRealm(t)
	mustOrg(t, r, "beta", "b")
	mustOrg(t, r, "Alpha", "a")
	mustOrg(t, r, "gamma", "acme-g")
	var names []string
	for _, o := range r.Organizations("") {
		names = append(names, o.Name)
	}
	assert.Equal(t, []string{"Alpha", "beta", "gamma"}, names)
	assert.Len(t, r.Organizations("ALP"), 1)
	assert.Len(t, r.Organizations("acme"), 1, "search matches the alias too")
}

func TestDeleteOrganizationCascades(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "Acme", "acme")
	keep := mustOrg(t, r, "Keep", "keep")
	d := mustDept(t, r, o.ID, "", DeptSpec{Name: "Sales", Alias: "sales",
		TemplateRoleIDs: []string{"r-auditor"},
		Children:        []DeptSpec{{Name: "Inside", Alias: "inside"}}})
	kd := mustDept(t, r, keep.ID, "", DeptSpec{Name: "Kept"})
	child := r.orgIndex(o.ID).children[d.ID].At(0)
	for _, did := range []string{d.ID, child.ID, kd.ID} {
		testkit.Must2(r.Assign("u-alice", did, t0))(t)
	}
	testkit.Must(r.LinkRole(o.ID, "r-editor"))(t)
	testkit.Must(r.LinkRole(keep.ID, "r-editor"))(t)
	testkit.Must(r.LinkGroup(o.ID, "g-eng"))(t)
	app := testkit.Must(r.RegisterApplication(AppSpec{ClientID: "orders-api"}, t0))(t)
	testkit.Must2(r.AssignApplication(o.ID, "orders-api"))(t)
	_, err := r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "p",
		Properties: []Property{{Key: "cost", Type: PropNumber}}}, t0)
	require.NoError(t, err)
	_, err = r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "t", Root: TemplateNode{Name: "x"}}, t0)
	require.NoError(t, err)
	requireConsistent(t, r)

	require.NoError(t, r.DeleteOrganization(o.ID))
	requireConsistent(t, r)
	assert.NotContains(t, r.Orgs, o.ID)
	assert.NotContains(t, r.OrgByAlias, "acme")
	assert.Len(t, r.Depts, 1, "only the other organization's department is left")
	assert.Equal(t, 1, r.AssignmentCount())
	assert.Equal(t, []string{kd.ID}, slices.Collect(maps.Keys(r.AssignmentsByUser()["u-alice"])))
	assert.NotContains(t, r.OrgRoles, o.ID)
	assert.NotContains(t, r.OrgGroups, o.ID)
	assert.NotContains(t, r.GroupOrg, "g-eng")
	assert.NotContains(t, r.OrgApps, o.ID)
	assert.Empty(t, r.PropTmpls)
	assert.Empty(t, r.DeptTmpls)
	// Realm objects stay.
	assert.Contains(t, r.Roles, "r-editor")
	assert.Contains(t, r.Groups, "g-eng")
	assert.Contains(t, r.Apps, app.ID)
	assert.Contains(t, r.Users, "u-alice")
	assert.Contains(t, r.OrgRoles[keep.ID], "r-editor")
	assert.Empty(t, r.UserOrgRoleIDs("u-alice", o.ID), "no grant anchored to the deleted organization survives")

	require.ErrorIs(t, r.DeleteOrganization(o.ID), ErrNotFound)
}
