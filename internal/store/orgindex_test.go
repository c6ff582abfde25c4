package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOrganizationIsNotItsOwnParent: the organization's id is not a
// department, so it cannot be listed or created under as one (it used to
// list the root departments as its "sub-departments").
func TestOrganizationIsNotItsOwnParent(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	mustDept(t, r, o.ID, "", DeptSpec{Name: "Root"})
	_, err := r.Departments(o.ID, o.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = r.CreateDepartment(o.ID, o.ID, DeptSpec{Name: "x"}, t0)
	require.ErrorIs(t, err, ErrNotFound)
	roots, err := r.Departments(o.ID, "")
	require.NoError(t, err)
	require.Len(t, roots, 1)
}

// TestChildListsFollowRenames: sibling lists stay sorted by name then id
// when departments and organizations are created, renamed and deleted.
func TestChildListsFollowRenames(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "M", "m")
	mustOrg(t, r, "A", "a")
	mustOrg(t, r, "Z", "z")
	var ids []string
	for _, n := range []string{"delta", "alpha", "Charlie", "bravo"} {
		ids = append(ids, mustDept(t, r, o.ID, "", DeptSpec{Name: n}).ID)
	}
	names := func() []string {
		list, err := r.Departments(o.ID, "")
		require.NoError(t, err)
		var out []string
		for _, d := range list {
			out = append(out, d.Name)
		}
		return out
	}
	require.Equal(t, []string{"alpha", "bravo", "Charlie", "delta"}, names())
	_, err := r.UpdateDepartment(o.ID, ids[1], DeptSpec{Name: "echo"}) // alpha -> echo
	require.NoError(t, err)
	require.Equal(t, []string{"bravo", "Charlie", "delta", "echo"}, names())
	_, err = r.DeleteDepartment(o.ID, ids[2]) // Charlie
	require.NoError(t, err)
	require.Equal(t, []string{"bravo", "delta", "echo"}, names())

	_, err = r.UpdateOrganization(o.ID, OrgSpec{Name: "0 first"})
	require.NoError(t, err)
	require.Equal(t, o, r.Organizations("")[0])
	requireConsistent(t, r)
}

// TestTemplateNodeLimit: a department template holds at most
// MaxTemplateNodes departments, and the error names the limit.
func TestTemplateNodeLimit(t *testing.T) {
	r := testRealm(t)
	o := mustOrg(t, r, "A", "a")
	wide := func(n int) TemplateNode {
		root := TemplateNode{Name: "root"}
		for i := range n - 1 {
			root.Children = append(root.Children, TemplateNode{Name: fmt.Sprint("c", i)})
		}
		return root
	}
	tmpl, err := r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "max", Root: wide(MaxTemplateNodes)}, t0)
	require.NoError(t, err)
	_, err = r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "too big", Root: wide(MaxTemplateNodes + 1)}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "root", fieldOf(err))
	assert.Contains(t, err.Error(), "1000")

	_, err = r.InstantiateTemplate(o.ID, "", tmpl.ID, t0)
	require.NoError(t, err)
	assert.Len(t, r.Depts, MaxTemplateNodes)
	_, err = r.CreateDepartment(o.ID, "", DeptSpec{Name: "x", Children: make([]DeptSpec, MaxTemplateNodes)}, t0)
	require.ErrorIs(t, err, ErrInvalid, "a department spec is bounded the same way")
	assert.Len(t, r.Depts, MaxTemplateNodes)
	requireConsistent(t, r)
}

// TestAssignmentTreeMatchesPrunedTree compares AssignmentTree, which walks
// up from the user's departments, with the organization trees pruned to the
// paths that lead to them, on random hierarchies.
func TestAssignmentTreeMatchesPrunedTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			r := testRealm(t)
			var depts []*Department
			for i := range 3 {
				o := mustOrg(t, r, fmt.Sprint("org ", rng.IntN(3)), fmt.Sprint("o", i))
				for j := range 30 {
					parent := ""
					if j > 0 && rng.IntN(4) > 0 {
						for {
							p := depts[rng.IntN(len(depts))]
							if p.OrgID == o.ID {
								parent = p.ID
								break
							}
							if rng.IntN(3) == 0 {
								break
							}
						}
					}
					depts = append(depts, mustDept(t, r, o.ID, parent, DeptSpec{Name: fmt.Sprint("d", rng.IntN(5))}))
				}
			}
			assigned := map[string]bool{}
			for range 1 + rng.IntN(10) {
				d := depts[rng.IntN(len(depts))]
				assigned[d.ID] = true
				_, _, err := r.Assign("u-alice", d.ID, t0)
				require.NoError(t, err)
			}
			got, err := r.AssignmentTree("u-alice")
			require.NoError(t, err)
			require.Equal(t, prunedTrees(t, r, assigned), flattenOrgs(got))
		})
	}
}

// prunedTrees is the reference: every organization's full tree, pruned to
// the departments that are assigned or have an assigned descendant.
func prunedTrees(t *testing.T, r *Realm, assigned map[string]bool) []string {
	var orgs []*OrgNode
	for _, o := range r.Organizations("") {
		tree, err := r.DepartmentTree(o.ID)
		require.NoError(t, err)
		if kept := prune(tree, assigned); len(kept) > 0 {
			orgs = append(orgs, &OrgNode{Org: o, Children: kept})
		}
	}
	return flattenOrgs(orgs)
}

func prune(nodes []*DeptNode, assigned map[string]bool) []*DeptNode {
	out := []*DeptNode{}
	for _, n := range nodes {
		kids := prune(n.Children, assigned)
		if len(kids) > 0 || assigned[n.Dept.ID] {
			out = append(out, &DeptNode{Dept: n.Dept, Children: kids})
		}
	}
	return out
}

// flattenOrgs writes a forest as indented lines, for comparison.
func flattenOrgs(orgs []*OrgNode) []string {
	var out []string
	var walk func(nodes []*DeptNode, indent string)
	walk = func(nodes []*DeptNode, indent string) {
		for _, n := range nodes {
			out = append(out, indent+n.Dept.ID)
			walk(n.Children, indent+"  ")
		}
	}
	for _, o := range orgs {
		out = append(out, o.Org.ID)
		walk(o.Children, "  ")
	}
	return slices.Clip(out)
}

// TestCompareLowerMatchesToLower: the allocation-free comparison orders as
// comparing strings.ToLower of both sides does.
func TestCompareLowerMatchesToLower(t *testing.T) {
	words := []string{"", "a", "A", "ab", "aB", "Ab", "b", "Z", "é", "É", "Ünit", "unit", "İstanbul", "istanbul",
		"ß", "SS", "\xff", "\xffa", "Org 1", "org 10", "ΣΑΣ", "σας", "K", "\u212a"}
	for _, a := range words {
		for _, b := range words {
			want := strings.Compare(strings.ToLower(a), strings.ToLower(b))
			assert.Equal(t, want, compareLower(a, b), "%q vs %q", a, b)
		}
	}
}
