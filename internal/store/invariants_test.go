package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckInvariantsCatchesCorruption proves the checker is not vacuous:
// each corruption a buggy operation could leave behind is reported.
func TestCheckInvariantsCatchesCorruption(t *testing.T) {
	build := func(t *testing.T) (*Realm, *Organization, *Department) {
		r := testRealm(t)
		o := mustOrg(t, r, "A", "a")
		d := mustDept(t, r, o.ID, "", DeptSpec{Name: "D", Alias: "d", Children: []DeptSpec{{Name: "C"}}})
		_, _, err := r.Assign("u-alice", d.ID, t0)
		require.NoError(t, err)
		_, err = r.LinkGroup(o.ID, "g-eng")
		require.NoError(t, err)
		_, err = r.LinkRole(o.ID, "r-editor")
		require.NoError(t, err)
		app, err := r.RegisterApplication(AppSpec{ClientID: "orders-api"}, t0)
		require.NoError(t, err)
		_, _, err = r.AssignApplication(o.ID, app.ClientID)
		require.NoError(t, err)
		requireConsistent(t, r)
		return r, o, d
	}
	corruptions := map[string]func(r *Realm, o *Organization, d *Department){
		"org removed without its departments": func(r *Realm, o *Organization, _ *Department) { delete(r.Orgs, o.ID); delete(r.OrgByAlias, o.Alias) },
		"stale alias index":                   func(r *Realm, o *Organization, _ *Department) { r.OrgByAlias["ghost"] = o.ID },
		"department removed, child left": func(r *Realm, _ *Organization, d *Department) {
			delete(r.Depts, d.ID)
			delete(r.AssignmentsByDept, d.ID)
		},
		"assignment missing from an index": func(r *Realm, _ *Organization, d *Department) { delete(r.AssignmentsByDept, d.ID) },
		"assignment index without assignment": func(r *Realm, _ *Organization, d *Department) {
			delete(r.Assignments, AssignmentKey{UserID: "u-alice", DepartmentID: d.ID})
		},
		"wrong depth": func(r *Realm, _ *Organization, d *Department) { d.Depth = 2 },
		"duplicate dept alias": func(r *Realm, o *Organization, d *Department) {
			r.Depts["x"] = &Department{ID: "x", OrgID: o.ID, ParentID: o.ID, Name: "X", Alias: d.Alias, Depth: 1}
		},
		"group link one-sided": func(r *Realm, _ *Organization, _ *Department) { delete(r.GroupOrg, "g-eng") },
		"role link to a missing role": func(r *Realm, o *Organization, _ *Department) {
			r.OrgRoles[o.ID]["r-ghost"] = struct{}{}
		},
		"app assigned but not in catalog": func(r *Realm, _ *Organization, _ *Department) {
			for id := range r.Apps {
				delete(r.Apps, id)
			}
		},
		"template of a missing org": func(r *Realm, _ *Organization, _ *Department) {
			r.PropTmpls["p"] = &PropertyTemplate{ID: "p", OrgID: "ghost"}
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			r, o, d := build(t)
			corrupt(r, o, d)
			assert.Error(t, r.CheckInvariants())
		})
	}
}
