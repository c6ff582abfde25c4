package store

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAssignIsAdditiveAndIdempotent(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	d1 := mustDept(t, r, o.ID, "", DeptSpec{Name: "One"})
	d2 := mustDept(t, r, o.ID, "", DeptSpec{Name: "Two"})

	a, created, err := r.Assign("u-alice", d1.ID, t0)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, o.ID, r.Depts[a.DepartmentID].OrgID)
	later := t0.Add(time.Hour)
	again, created, err := r.Assign("u-alice", d1.ID, later)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, t0, again.AssignedAt, "a repeat keeps the original assignedAt")
	_, _, err = r.Assign("u-alice", d2.ID, later)
	require.NoError(t, err)
	assert.Len(t, r.AssignmentsByUser()["u-alice"], 2, "adding one never removes another")

	_, _, err = r.Assign("nobody", d1.ID, t0)
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = r.Assign("u-alice", "nowhere", t0)
	require.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, r.Unassign("u-alice", d1.ID))
	require.ErrorIs(t, r.Unassign("u-alice", d1.ID), ErrNotFound)
	assert.Equal(t, []string{d2.ID}, slices.Collect(maps.Keys(r.AssignmentsByUser()["u-alice"])))
	requireConsistent(t, r)
}

func TestAssignmentLists(t *testing.T) {
	r := testRealm(t)
	b := mustOrg(t, r, "Beta", "beta")
	a := mustOrg(t, r, "Alpha", "alpha")
	bd := mustDept(t, r, b.ID, "", DeptSpec{Name: "Ops"})
	top := mustDept(t, r, a.ID, "", DeptSpec{Name: "Top", Children: []DeptSpec{{Name: "Sub"}, {Name: "Unrelated"}}})
	mustDept(t, r, a.ID, "", DeptSpec{Name: "Empty"})
	var sub *Department
	for d := range r.orgIndex(a.ID).children[top.ID].All() {
		if d.Name == "Sub" {
			sub = d
		}
	}
	for _, did := range []string{bd.ID, sub.ID} {
		_, _, err := r.Assign("u-alice", did, t0)
		require.NoError(t, err)
	}
	_, _, err := r.Assign("u-bob", sub.ID, t0)
	require.NoError(t, err)

	users, err := r.DepartmentUsers(a.ID, sub.ID)
	require.NoError(t, err)
	require.Len(t, users, 2)
	assert.Equal(t, "alice", users[0].Username)
	assert.Equal(t, "bob", users[1].Username)
	_, err = r.DepartmentUsers(b.ID, sub.ID)
	require.ErrorIs(t, err, ErrNotFound)

	list, err := r.UserAssignments("u-alice")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "Alpha", list[0].Org.Name)
	assert.Equal(t, "Sub", list[0].Dept.Name)
	assert.Equal(t, "Beta", list[1].Org.Name)
	_, err = r.UserAssignments("nobody")
	require.ErrorIs(t, err, ErrNotFound)

	tree, err := r.AssignmentTree("u-alice")
	require.NoError(t, err)
	require.Len(t, tree, 2)
	assert.Equal(t, "Alpha", tree[0].Org.Name)
	require.Len(t, tree[0].Children, 1, "pruned: Empty is left out")
	assert.Equal(t, "Top", tree[0].Children[0].Dept.Name)
	require.Len(t, tree[0].Children[0].Children, 1, "pruned: Unrelated is left out")
	assert.Equal(t, "Sub", tree[0].Children[0].Children[0].Dept.Name)
	assert.Empty(t, tree[0].Children[0].Children[0].Children)

	ms := r.UserOrganizations("u-alice", "")
	require.Len(t, ms, 2)
	assert.Equal(t, "Alpha", ms[0].Org.Name)
	assert.Empty(t, r.UserOrganizations("nobody", ""))
}

func TestUserOrgRoleIDs(t *testing.T) {
	r := testRealm(t)
	a := mustOrg(t, r, "A", "a")
	b := mustOrg(t, r, "B", "b")
	da := mustDept(t, r, a.ID, "", DeptSpec{Name: "DA", TemplateRoleIDs: []string{"r-auditor"}})
	db := mustDept(t, r, b.ID, "", DeptSpec{Name: "DB"})
	_, err := r.LinkRole(a.ID, "r-editor")
	require.NoError(t, err)
	_, err = r.LinkRole(b.ID, "r-viewer")
	require.NoError(t, err)
	_, _, err = r.Assign("u-alice", da.ID, t0)
	require.NoError(t, err)
	_, _, err = r.Assign("u-alice", db.ID, t0)
	require.NoError(t, err)

	assert.Equal(t, Set{"r-editor": {}, "r-auditor": {}, "r-viewer": {}}, r.UserOrgRoleIDs("u-alice", ""))
	assert.Equal(t, Set{"r-editor": {}, "r-auditor": {}}, r.UserOrgRoleIDs("u-alice", a.ID))
	require.NoError(t, r.Unassign("u-alice", da.ID))
	assert.Equal(t, Set{"r-viewer": {}}, r.UserOrgRoleIDs("u-alice", ""), "removing the assignment drops its grants")
	assert.Empty(t, r.UserOrgRoleIDs("u-bob", ""))
}

// TestAssignmentTimeAnyClock: an assignment keeps the time its clock gave,
// to the second (assignedAt's precision on the wire: a fraction is not
// kept), whatever the year: mockserver.WithClock takes any function, the
// zero time included.
func TestAssignmentTimeAnyClock(t *testing.T) {
	fraction := time.Date(2030, 5, 1, 14, 0, 0, 999_999_999, time.UTC)
	for _, at := range []time.Time{{}, time.Date(2999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2030, 5, 1, 14, 0, 0, 0, time.FixedZone("x", 2*3600)), fraction,
		time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-300000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		r := testRealm(t)
		o := mustOrg(t, r, "A", "a")
		d := mustDept(t, r, o.ID, "", DeptSpec{Name: "One"})
		a, created, err := r.Assign("u-alice", d.ID, at)
		require.NoError(t, err)
		require.True(t, created)
		at = at.Truncate(time.Second) // TestAssignmentTimeTruncatesToTheSecond
		assert.True(t, at.Equal(a.AssignedAt), "assigned at %v, got %v", at, a.AssignedAt)
		got, ok := r.Assignment("u-alice", d.ID)
		require.True(t, ok)
		assert.True(t, at.Equal(got.AssignedAt), "read back %v, got %v", at, got.AssignedAt)
		assert.Equal(t, time.UTC, got.AssignedAt.Location())
		later, _, err := r.Assign("u-alice", d.ID, at.Add(time.Hour))
		require.NoError(t, err)
		assert.True(t, at.Equal(later.AssignedAt), "a repeat keeps %v, got %v", at, later.AssignedAt)
	}
}
