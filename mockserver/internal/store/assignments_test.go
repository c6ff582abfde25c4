package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

func TestUserOrgRoleIDs(t *testing.T) {
	r := testRealm(t)
	a := mustOrg(t, r, "A", "a")
	b := mustOrg(t, r, "B", "b")
	da := mustDept(t, r, a.ID, "", DeptSpec{Name: "DA", TemplateRoleIDs: []string{"r-auditor"}})
	db := mustDept(t, r, b.ID, "", DeptSpec{Name: "DB"})
	testkit.Must(r.LinkRole(a.ID, "r-editor"))(t)
	testkit.Must(r.LinkRole(b.ID, "r-viewer"))(t)
	testkit.Must2(r.Assign("u-alice", da.ID, t0))(t)
	testkit.Must2(r.Assign("u-alice", db.ID, t0))(t)

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
		a, created := testkit.Must2(r.Assign("u-alice", d.ID, at))(t)
		require.True(t, created)
		at = at.Truncate(time.Second) // TestAssignmentTimeTruncatesToTheSecond
		assert.True(t, at.Equal(a.AssignedAt), "assigned at %v, got %v", at, a.AssignedAt)
		got, ok := r.Assignment("u-alice", d.ID)
		require.True(t, ok)
		assert.True(t, at.Equal(got.AssignedAt), "read back %v, got %v", at, got.AssignedAt)
		assert.Equal(t, time.UTC, got.AssignedAt.Location())
		later, _ := testkit.Must2(r.Assign("u-alice", d.ID, at.Add(time.Hour)))(t)
		assert.True(t, at.Equal(later.AssignedAt), "a repeat keeps %v, got %v", at, later.AssignedAt)
	}
}
