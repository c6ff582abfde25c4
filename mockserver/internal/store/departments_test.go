package store

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDepartmentAliasUniqueWithinOrganization(t *testing.T) {
	r := testRealm(t)
	a := mustOrg(t, r, "A", "a")
	b := mustOrg(t, r, "B", "b")
	mustDept(t, r, a.ID, "", DeptSpec{Name: "Sales", Alias: "sales"})
	mustDept(t, r, b.ID, "", DeptSpec{Name: "Sales", Alias: "sales"}) // other organization: fine
	mustDept(t, r, a.ID, "", DeptSpec{Name: "NoAlias"})
	mustDept(t, r, a.ID, "", DeptSpec{Name: "NoAlias2"}) // empty aliases never clash

	_, err := r.CreateDepartment(a.ID, "", DeptSpec{Name: "Sales 2", Alias: "sales"}, t0)
	require.ErrorIs(t, err, ErrConflict)
	_, err = r.CreateDepartment(a.ID, "", DeptSpec{Name: "T", Alias: "t",
		Children: []DeptSpec{{Name: "C", Alias: "t"}}}, t0)
	require.ErrorIs(t, err, ErrConflict, "an alias twice in one subtree")
	_, err = r.CreateDepartment(a.ID, "", DeptSpec{Name: "T", Alias: "BAD"}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "alias", fieldOf(err))
	_, err = r.CreateDepartment(a.ID, "", DeptSpec{Name: "T", Children: []DeptSpec{{Name: ""}}}, t0)
	assert.Equal(t, "children[0].name", fieldOf(err))
	assert.Len(t, r.Depts, 4, "failed creates add nothing")
	requireConsistent(t, r)
}

func TestDepartmentDepthLimit(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	parent := ""
	for i := 1; i <= MaxDepartmentDepth; i++ {
		parent = mustDept(t, r, o.ID, parent, DeptSpec{Name: fmt.Sprint("level ", i)}).ID
	}
	_, err := r.CreateDepartment(o.ID, parent, DeptSpec{Name: "too deep"}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "32")

	// A subtree that would cross the limit is refused whole.
	mid := r.Depts[parent].ParentID
	_, err = r.CreateDepartment(o.ID, mid, DeptSpec{Name: "ok", Children: []DeptSpec{{Name: "too deep"}}}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Len(t, r.Depts, MaxDepartmentDepth)
	requireConsistent(t, r)
}

func TestDeleteDepartmentRemovesSubtreeAndAssignments(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	top := mustDept(t, r, o.ID, "", DeptSpec{Name: "Top", Alias: "top", Children: []DeptSpec{
		{Name: "Mid", Alias: "mid", Children: []DeptSpec{{Name: "Leaf", Alias: "leaf"}}},
	}})
	other := mustDept(t, r, o.ID, "", DeptSpec{Name: "Other"})
	for id := range r.Depts {
		_, _, err := r.Assign("u-alice", id, t0)
		require.NoError(t, err)
	}
	_, _, err := r.Assign("u-bob", top.ID, t0)
	require.NoError(t, err)

	gone := deleteDepartment(t, r, o.ID, top.ID)
	assert.Len(t, gone, 3)
	assert.Equal(t, top, gone[0])
	assert.Len(t, r.Depts, 1)
	assert.Equal(t, 1, r.AssignmentCount())
	assert.Equal(t, []string{other.ID}, slices.Collect(maps.Keys(r.AssignmentsByUser()["u-alice"])))
	assert.NotContains(t, r.AssignmentsByUser(), "u-bob")
	requireConsistent(t, r)

	// The aliases are free again.
	mustDept(t, r, o.ID, "", DeptSpec{Name: "Top", Alias: "top"})
	_, err = r.DeleteDepartment(o.ID, top.ID)
	require.ErrorIs(t, err, ErrNotFound)
}

// deleteDepartment is r.DeleteDepartment, failing the test on an error.
func deleteDepartment(t *testing.T, r *Realm, orgID, deptID string) []*Department {
	t.Helper()
	gone, err := r.DeleteDepartment(orgID, deptID)
	require.NoError(t, err)
	return gone
}
