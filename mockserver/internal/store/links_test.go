package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func roleNames(rs []*Role) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestRoleLinks(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")

	created, err := r.LinkRole(o.ID, "r-editor")
	require.NoError(t, err)
	assert.True(t, created)
	created, err = r.LinkRole(o.ID, "r-editor")
	require.NoError(t, err)
	assert.False(t, created, "linking again is a no-op")
	_, err = r.LinkRole(o.ID, "r-nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.LinkRole("nope", "r-editor")
	require.ErrorIs(t, err, ErrNotFound)

	linked, err := r.OrgRoleList(o.ID, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"editor"}, roleNames(linked))
	linked, err = r.OrgRoleList(o.ID, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"editor", "viewer"}, roleNames(linked))

	avail, err := r.AvailableRoles(o.ID, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"auditor"}, roleNames(avail))
	avail, err = r.AvailableRoles(o.ID, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"auditor", "viewer"}, roleNames(avail))

	role, err := r.CreateOrgRole(o.ID, RoleSpec{Name: " manager ", Description: "d"})
	require.NoError(t, err)
	assert.Equal(t, "manager", role.Name)
	assert.Equal(t, role.ID, r.RoleByName["manager"])
	assert.Contains(t, r.OrgRoles[o.ID], role.ID)
	_, err = r.CreateOrgRole(o.ID, RoleSpec{Name: "editor"})
	require.ErrorIs(t, err, ErrConflict)
	_, err = r.CreateOrgRole(o.ID, RoleSpec{Name: ""})
	require.ErrorIs(t, err, ErrInvalid)

	assert.Equal(t, []string{"auditor", "editor"}, roleNames(r.RealmRoles("DIT")))
	assert.Len(t, r.RealmRoles(""), 4)

	require.NoError(t, r.UnlinkRole(o.ID, "r-editor"))
	require.ErrorIs(t, r.UnlinkRole(o.ID, "r-editor"), ErrNotFound)
	assert.Contains(t, r.Roles, "r-editor", "unlinking keeps the realm role")
	requireConsistent(t, r)
}

func TestGroupLinks(t *testing.T) {
	r := testRealm(t)
	a := mustOrg(t, r, "A", "a")
	b := mustOrg(t, r, "B", "b")

	created, err := r.LinkGroup(a.ID, "g-eng")
	require.NoError(t, err)
	assert.True(t, created)
	created, err = r.LinkGroup(a.ID, "g-eng")
	require.NoError(t, err)
	assert.False(t, created)
	_, err = r.LinkGroup(b.ID, "g-eng")
	require.ErrorIs(t, err, ErrConflict, "a group belongs to one organization")
	_, err = r.LinkGroup(a.ID, "g-nope")
	require.ErrorIs(t, err, ErrNotFound)

	gs, err := r.OrgGroupList(a.ID)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	assert.Equal(t, "eng", gs[0].Name)

	require.NoError(t, r.UnlinkGroup(a.ID, "g-eng"))
	require.ErrorIs(t, r.UnlinkGroup(a.ID, "g-eng"), ErrNotFound)
	_, err = r.LinkGroup(b.ID, "g-eng")
	require.NoError(t, err, "free again after unlinking")
	requireConsistent(t, r)
}
