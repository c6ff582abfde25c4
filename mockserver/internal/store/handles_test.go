package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestRecycledDepartmentHandleHoldsNothing deletes assigned departments
// (one made from a template with a template role, one plain) and makes new
// ones that take their handles: no assignment, and so no template grant,
// of a deleted department may show on the department that reuses its
// handle, from either end of the indexes.
func TestRecycledDepartmentHandleHoldsNothing(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	tmpl := testkit.Must(r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "t", Root: TemplateNode{
		Name: "Branch", RoleIDs: []string{"r-auditor"}, Children: []TemplateNode{{Name: "Back"}},
	}}, t0))(t)

	for round := range 3 {
		top, err := r.InstantiateTemplate(o.ID, "", tmpl.ID, t0)
		require.NoError(t, err)
		plain := mustDept(t, r, o.ID, "", DeptSpec{Name: "Plain"})
		for _, d := range []*Department{top, plain} {
			testkit.Must2(r.Assign("u-alice", d.ID, t0))(t)
		}
		require.Contains(t, r.UserOrgRoleIDs("u-alice", ""), "r-auditor")
		oldHandles := map[uint32]bool{}
		for _, d := range r.Depts {
			oldHandles[d.h] = true
		}
		removed := deleteDepartment(t, r, o.ID, top.ID)
		removedPlain := deleteDepartment(t, r, o.ID, plain.ID)
		for _, d := range append(removed, removedPlain...) {
			assert.Zero(t, d.h, "a removed department keeps no handle")
		}
		requireConsistent(t, r)

		// The new departments take the freed handles: bob is assigned to
		// one, alice to none.
		fresh := mustDept(t, r, o.ID, "", DeptSpec{Name: "Fresh"})
		again := testkit.Must(r.InstantiateTemplate(o.ID, "", tmpl.ID, t0))(t)
		reused := 0
		for _, d := range r.Depts {
			if oldHandles[d.h] {
				reused++
			}
		}
		require.Equal(t, 3, reused, "round %d: the test must recycle every freed handle", round)
		testkit.Must2(r.Assign("u-bob", fresh.ID, t0))(t)

		for _, d := range []*Department{fresh, again} {
			_, ok := r.Assignment("u-alice", d.ID)
			assert.False(t, ok, "alice is not assigned to %s", d.Name)
			users := testkit.Must(r.DepartmentUsers(o.ID, d.ID))(t)
			for _, u := range users {
				assert.NotEqual(t, "u-alice", u.UserID)
			}
		}
		as := testkit.Must(r.UserAssignments("u-alice"))(t)
		assert.Empty(t, as)
		tree := testkit.Must(r.AssignmentTree("u-alice"))(t)
		assert.Empty(t, tree)
		assert.Empty(t, r.UserOrganizations("u-alice", ""))
		assert.Empty(t, r.UserOrgRoleIDs("u-alice", ""), "no grant through a recycled handle")
		assert.NotContains(t, r.AssignmentsByUser(), "u-alice")
		_, _, err = r.Assign("u-alice", top.ID, t0)
		assert.ErrorIs(t, err, ErrNotFound, "a deleted department takes no assignment")
		assert.ErrorIs(t, r.Unassign("u-alice", plain.ID), ErrNotFound)
		assert.Equal(t, 1, r.AssignmentCount())
		requireConsistent(t, r)

		deleteDepartment(t, r, o.ID, again.ID)
		deleteDepartment(t, r, o.ID, fresh.ID)
		assert.Zero(t, r.AssignmentCount())
		assert.Empty(t, r.AssignmentsByDept())
		requireConsistent(t, r)
	}
}
