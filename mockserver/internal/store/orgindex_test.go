package store

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
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
	roots := testkit.Must(r.Departments(o.ID, ""))(t)
	require.Equal(t, 1, roots.Len())
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
		list := testkit.Must(r.Departments(o.ID, ""))(t)
		var out []string
		for d := range list.All() {
			out = append(out, d.Name)
		}
		return out
	}
	require.Equal(t, []string{"alpha", "bravo", "Charlie", "delta"}, names())
	testkit.Must(r.UpdateDepartment(o.ID, ids[1], DeptSpec{Name: "echo"}))(t) // alpha -> echo
	require.Equal(t, []string{"bravo", "Charlie", "delta", "echo"}, names())
	deleteDepartment(t, r, o.ID, ids[2]) // Charlie
	require.Equal(t, []string{"bravo", "delta", "echo"}, names())

	testkit.Must(r.UpdateOrganization(o.ID, OrgSpec{Name: "0 first"}))(t)
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
	tmpl := testkit.Must(r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "max", Root: wide(MaxTemplateNodes)}, t0))(t)
	_, err := r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "too big", Root: wide(MaxTemplateNodes + 1)}, t0)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "root", fieldOf(err))
	assert.Contains(t, err.Error(), "1000")

	testkit.Must(r.InstantiateTemplate(o.ID, "", tmpl.ID, t0))(t)
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
				testkit.Must2(r.Assign("u-alice", d.ID, t0))(t)
			}
			got := testkit.Must(r.AssignmentTree("u-alice"))(t)
			require.Equal(t, prunedTrees(t, r, assigned), flattenOrgs(got))
		})
	}
}

// prunedTrees is the reference: every organization's full tree, pruned to
// the departments that are assigned or have an assigned descendant.
func prunedTrees(t *testing.T, r *Realm, assigned map[string]bool) []string {
	var orgs []*OrgNode
	for _, o := range r.Organizations("") {
		tree := testkit.Must(r.DepartmentTree(o.ID))(t)
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

// countDeptCompares makes cmpDept count its calls until the test ends. The
// test must not be parallel.
func countDeptCompares(t *testing.T) *int {
	n := new(int)
	orig := cmpDept
	cmpDept = func(a, b *Department) int { *n++; return orig(a, b) }
	t.Cleanup(func() { cmpDept = orig })
	return n
}

// TestWideDeletesSearchNoSiblingList: deleting an organization or a
// department drops the child lists below it whole; only the deleted
// department leaves its parent's list. So deleting costs the size of what
// goes, however wide: removing many roots or children one by one
// from their sorted list, as it used to, was quadratic in their number.
func TestWideDeletesSearchNoSiblingList(t *testing.T) {
	const n = MaxTemplateNodes - 1 // the widest department one create makes
	r := testRealm(t)
	o := mustOrg(t, r, "O", "o")
	wide := DeptSpec{Name: "wide"}
	for i := range n {
		mustDept(t, r, o.ID, "", DeptSpec{Name: fmt.Sprint("root ", i), Children: []DeptSpec{{Name: "c"}}})
		wide.Children = append(wide.Children, DeptSpec{Name: fmt.Sprint("child ", i)})
	}
	w := mustDept(t, r, o.ID, "", wide)
	testkit.Must2(r.Assign("u-alice", r.orgIndex(o.ID).children[w.ID].At(0).ID, t0))(t)

	compares := countDeptCompares(t)
	gone := deleteDepartment(t, r, o.ID, w.ID)
	require.Len(t, gone, n+1)
	// Only w's own removal from the n+1 roots: about 3 log2 n compares.
	assert.LessOrEqual(t, *compares, 5*bits.Len(n+1), "deleting a department of %d children", n)
	assert.Zero(t, r.AssignmentCount())
	requireConsistent(t, r)

	*compares = 0
	require.NoError(t, r.DeleteOrganization(o.ID))
	assert.Zero(t, *compares, "deleting an organization of %d roots", n)
	assert.Empty(t, r.Depts)
	requireConsistent(t, r)
}

// TestSiblingsInAnyOrderStayShallow: siblings created in reverse name order
// (as a fixture may list them) keep their list a shallow tree, so that each
// create costs O(log n) compares and no shifting, and a fixture of n
// siblings loads in O(n log n) (a sorted slice cost O(n) per insert at its
// front: quadratic).
func TestSiblingsInAnyOrderStayShallow(t *testing.T) {
	const n = 1 << 12
	r := testRealm(t)
	o := mustOrg(t, r, "O", "o")
	compares := countDeptCompares(t)
	for i := range n {
		mustDept(t, r, o.ID, "", DeptSpec{Name: fmt.Sprintf("d%05d", n-i)})
	}
	roots := testkit.Must(r.Departments(o.ID, ""))(t)
	require.Equal(t, n, roots.Len())
	assert.LessOrEqual(t, treeDepth(roots.root), 5*bits.Len(n))
	assert.LessOrEqual(t, *compares, n*5*bits.Len(n))
	assert.Equal(t, "d00001", roots.At(0).Name)
	requireConsistent(t, r)
}
