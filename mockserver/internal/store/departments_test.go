package store

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDepartmentsResolveWithinTheirOrganization(t *testing.T) {
	r := testRealm(t)
	a := mustOrg(t, r, "A", "a")
	b := mustOrg(t, r, "B", "b")
	root := mustDept(t, r, a.ID, "", DeptSpec{Name: "Root", Alias: "root"})
	sub := mustDept(t, r, a.ID, root.ID, DeptSpec{Name: "Sub"})
	deep := mustDept(t, r, a.ID, sub.ID, DeptSpec{Name: "Deep"})
	assert.EqualValues(t, 1, root.Depth)
	assert.EqualValues(t, 3, deep.Depth)
	assert.Equal(t, a.ID, root.ParentID)

	got, err := r.Department(a.ID, deep.ID)
	require.NoError(t, err)
	assert.Same(t, deep, got, "resolves at any depth")
	_, err = r.Department(b.ID, deep.ID)
	require.ErrorIs(t, err, ErrNotFound, "an id under the wrong organization")
	_, err = r.SubDepartment(a.ID, root.ID, deep.ID)
	require.ErrorIs(t, err, ErrNotFound, "a grandchild is not a sub-department")
	_, err = r.SubDepartment(a.ID, sub.ID, deep.ID)
	require.NoError(t, err)

	roots, err := r.Departments(a.ID, "")
	require.NoError(t, err)
	assert.Equal(t, []*Department{root}, slices.Collect(roots.All()))
	kids, err := r.Departments(a.ID, root.ID)
	require.NoError(t, err)
	assert.Equal(t, []*Department{sub}, slices.Collect(kids.All()))
	_, err = r.Departments(b.ID, root.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.CreateDepartment(b.ID, root.ID, DeptSpec{Name: "x"}, t0)
	require.ErrorIs(t, err, ErrNotFound)
}

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

func TestDepartmentTreeAndUpdate(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	top := mustDept(t, r, o.ID, "", DeptSpec{Name: "Top", Children: []DeptSpec{
		{Name: "b"}, {Name: "A", Children: []DeptSpec{{Name: "leaf"}}},
	}})
	mustDept(t, r, o.ID, "", DeptSpec{Name: "Another"})
	tree, err := r.DepartmentTree(o.ID)
	require.NoError(t, err)
	require.Len(t, tree, 2)
	assert.Equal(t, "Another", tree[0].Dept.Name)
	assert.Empty(t, tree[0].Children)
	assert.NotNil(t, tree[0].Children, "leaves have an empty, non-nil list")
	require.Len(t, tree[1].Children, 2)
	assert.Equal(t, "A", tree[1].Children[0].Dept.Name)
	assert.Equal(t, "leaf", tree[1].Children[0].Children[0].Dept.Name)

	got, err := r.UpdateDepartment(o.ID, top.ID, DeptSpec{Name: "Top 2", Alias: "ignored"})
	require.NoError(t, err)
	assert.Equal(t, "Top 2", got.Name)
	assert.Empty(t, got.Alias)
	assert.Equal(t, Attributes{}, got.Attributes)
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

	gone, err := r.DeleteDepartment(o.ID, top.ID)
	require.NoError(t, err)
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
