package store

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// opsModel is what TestRandomOperationsMatchModel expects of a realm,
// kept by department and user ids only: which organization and parent each
// department has, its template roles, and which departments each user
// holds. A department handle recycled into another department must not
// carry anything of the one before it (issue 12's integer handles).
type opsModel struct {
	deptOrg    map[string]string
	deptParent map[string]string
	deptRoles  map[string][]string
	held       map[string]map[string]bool // user -> dept
}

func (m *opsModel) removeTree(id string) {
	for c, p := range m.deptParent {
		if p == id {
			m.removeTree(c)
		}
	}
	delete(m.deptOrg, id)
	delete(m.deptParent, id)
	delete(m.deptRoles, id)
	for _, s := range m.held {
		delete(s, id)
	}
}

// runRandomOperations applies steps random operations (organizations,
// departments with children and template roles, template instances,
// assignments, deletions of subtrees and organizations) to a realm and to
// the model, and after each checks CheckInvariants and every assignment
// read the API and decisions use against the model.
func runRandomOperations(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	r := testRealm(t)
	users := []string{"u-alice", "u-bob"}
	for i := range 6 {
		id := fmt.Sprintf("u-x%d", i)
		r.addUser(&User{ID: id, Username: id, RoleIDs: Set{}, GroupIDs: Set{}})
		users = append(users, id)
	}
	m := &opsModel{map[string]string{}, map[string]string{}, map[string][]string{}, map[string]map[string]bool{}}
	for _, u := range users {
		m.held[u] = map[string]bool{}
	}
	var orgs []string
	tmpls := map[string][]string{} // org -> template ids
	pickDept := func() string {
		if len(m.deptOrg) == 0 {
			return ""
		}
		i := rng.Intn(len(m.deptOrg))
		for id := range m.deptOrg {
			if i == 0 {
				return id
			}
			i--
		}
		return ""
	}
	roleNames := []string{"r-editor", "r-auditor"}
	for step := range steps {
		op := rng.Intn(12)
		switch {
		case op == 0 || len(orgs) == 0:
			o := testkit.Must(r.CreateOrganization(OrgSpec{Name: fmt.Sprintf("O%d", step), Alias: fmt.Sprintf("o%d", step)}, t0))(t)
			orgs = append(orgs, o.ID)
			if rng.Intn(2) == 0 {
				r.OrgRoles[o.ID] = Set{"r-editor": {}}
			}
			tm := testkit.Must(r.CreateDepartmentTemplate(o.ID, DeptTemplateSpec{Name: "t", Root: TemplateNode{Name: "T", RoleIDs: []string{"r-auditor"}, Children: []TemplateNode{{Name: "C1"}, {Name: "C2", RoleIDs: []string{"r-editor"}}}}}, t0))(t)
			tmpls[o.ID] = append(tmpls[o.ID], tm.ID)
		case op == 1 && rng.Intn(3) == 0:
			i := rng.Intn(len(orgs))
			oid := orgs[i]
			if err := r.DeleteOrganization(oid); err != nil {
				t.Fatal(err)
			}
			orgs = append(orgs[:i], orgs[i+1:]...)
			for d, o := range m.deptOrg {
				if o == oid {
					m.removeTree(d)
				}
			}
			delete(tmpls, oid)
		case op <= 3:
			oid := orgs[rng.Intn(len(orgs))]
			parent := ""
			if p := pickDept(); p != "" && m.deptOrg[p] == oid && rng.Intn(2) == 0 {
				parent = p
			}
			spec := DeptSpec{Name: fmt.Sprintf("D%d", rng.Intn(3)), Children: []DeptSpec{{Name: "K"}}}
			if rng.Intn(2) == 0 {
				spec.TemplateRoleIDs = []string{roleNames[rng.Intn(2)]}
			}
			d, err := r.CreateDepartment(oid, parent, spec, t0)
			if err != nil {
				continue // depth etc
			}
			pid := parent
			if pid == "" {
				pid = oid
			}
			m.deptOrg[d.ID], m.deptParent[d.ID], m.deptRoles[d.ID] = oid, pid, spec.TemplateRoleIDs
			for k := range r.orgIndex(oid).children[d.ID].All() {
				m.deptOrg[k.ID], m.deptParent[k.ID], m.deptRoles[k.ID] = oid, d.ID, nil
			}
		case op == 4:
			oid := orgs[rng.Intn(len(orgs))]
			if len(tmpls[oid]) == 0 {
				continue
			}
			parent := ""
			if p := pickDept(); p != "" && m.deptOrg[p] == oid && rng.Intn(2) == 0 {
				parent = p
			}
			d, err := r.InstantiateTemplate(oid, parent, tmpls[oid][0], t0)
			if err != nil {
				continue
			}
			pid := parent
			if pid == "" {
				pid = oid
			}
			m.deptOrg[d.ID], m.deptParent[d.ID], m.deptRoles[d.ID] = oid, pid, []string{"r-auditor"}
			for k := range r.orgIndex(oid).children[d.ID].All() {
				var rl []string
				if k.Name == "C2" {
					rl = []string{"r-editor"}
				}
				m.deptOrg[k.ID], m.deptParent[k.ID], m.deptRoles[k.ID] = oid, d.ID, rl
			}
		case op <= 7:
			d := pickDept()
			if d == "" {
				continue
			}
			u := users[rng.Intn(len(users))]
			_, created, err := r.Assign(u, d, t0)
			if err != nil {
				t.Fatal(err)
			}
			if created == m.held[u][d] {
				t.Fatalf("step %d: assign %s %s created=%v model=%v", step, u, d, created, m.held[u][d])
			}
			m.held[u][d] = true
		case op == 8:
			u := users[rng.Intn(len(users))]
			d := pickDept()
			if d == "" {
				continue
			}
			err := r.Unassign(u, d)
			if (err == nil) != m.held[u][d] {
				t.Fatalf("step %d: unassign %v model %v", step, err, m.held[u][d])
			}
			delete(m.held[u], d)
		default:
			d := pickDept()
			if d == "" {
				continue
			}
			if _, err := r.DeleteDepartment(m.deptOrg[d], d); err != nil {
				t.Fatal(err)
			}
			m.removeTree(d)
		}
		if err := r.CheckInvariants(); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		// compare
		n := 0
		for _, u := range users {
			n += len(m.held[u])
			as := testkit.Must(r.UserAssignments(u))(t)
			if len(as) != len(m.held[u]) {
				t.Fatalf("seed %d step %d: user %s has %d assignments, model %d", seed, step, u, len(as), len(m.held[u]))
			}
			for _, a := range as {
				if !m.held[u][a.DepartmentID] || a.Dept.ID != a.DepartmentID {
					t.Fatalf("seed %d step %d: leaked %s -> %s", seed, step, u, a.DepartmentID)
				}
			}
			want := Set{}
			for d := range m.held[u] {
				for rid := range r.OrgRoles[m.deptOrg[d]] {
					want[rid] = struct{}{}
				}
				for _, rid := range m.deptRoles[d] {
					want[rid] = struct{}{}
				}
			}
			got := r.UserOrgRoleIDs(u, "")
			if len(got) != len(want) {
				t.Fatalf("seed %d step %d: %s roles %v want %v", seed, step, u, got, want)
			}
			for rid := range got {
				if _, ok := want[rid]; !ok {
					t.Fatalf("false grant %s %s", u, rid)
				}
			}
			tree, _ := r.AssignmentTree(u)
			var walk func(n *DeptNode)
			leaf := 0
			walk = func(n *DeptNode) {
				if _, ok := r.Depts[n.Dept.ID]; !ok {
					t.Fatalf("tree has deleted dept")
				}
				if m.held[u][n.Dept.ID] {
					leaf++
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			for _, o := range tree {
				if o.Org == nil {
					t.Fatalf("nil org")
				}
				for _, c := range o.Children {
					walk(c)
				}
			}
			if leaf != len(m.held[u]) {
				t.Fatalf("seed %d step %d: tree shows %d of %d", seed, step, leaf, len(m.held[u]))
			}
			for _, mm := range r.UserOrganizations(u, "") {
				for _, d := range mm.Depts {
					if !m.held[u][d.ID] {
						t.Fatalf("leak in UserOrganizations")
					}
				}
			}
		}
		if r.AssignmentCount() != n {
			t.Fatalf("count %d model %d", r.AssignmentCount(), n)
		}
		for d, o := range m.deptOrg {
			du := testkit.Must(r.DepartmentUsers(o, d))(t)
			for _, x := range du {
				if !m.held[x.UserID][d] {
					t.Fatalf("seed %d step %d: dept users leak %s in %s", seed, step, x.UserID, d)
				}
			}
		}
		if len(r.Depts) != len(m.deptOrg) {
			t.Fatalf("depts %d model %d", len(r.Depts), len(m.deptOrg))
		}
	}
	if len(r.h.free) == 0 {
		t.Logf("seed %d recycled no department handle", seed)
	}
}

// TestRandomOperationsMatchModel: twelve seeds of 400 steps, most of
// which recycle department handles (a forget that leaves a deleted
// department's assignments fails within a seed's first steps).
func TestRandomOperationsMatchModel(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 12; seed++ {
		runRandomOperations(t, seed, 400)
	}
}
