package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestCheckInvariantsCatchesCorruption proves the checker is not vacuous:
// each corruption a buggy operation could leave behind is reported.
func TestCheckInvariantsCatchesCorruption(t *testing.T) {
	build := func(t *testing.T) (*Realm, *Organization, *Department) {
		r := testRealm(t)
		o := mustOrg(t, r, "A", "a")
		d := mustDept(t, r, o.ID, "", DeptSpec{Name: "D", Alias: "d", Children: []DeptSpec{{Name: "C"}}})
		testkit.Must2(r.Assign("u-alice", d.ID, t0))(t)
		testkit.Must(r.LinkGroup(o.ID, "g-eng"))(t)
		testkit.Must(r.LinkRole(o.ID, "r-editor"))(t)
		app := testkit.Must(r.RegisterApplication(AppSpec{ClientID: "orders-api"}, t0))(t)
		testkit.Must2(r.AssignApplication(o.ID, app.ClientID))(t)
		requireConsistent(t, r)
		return r, o, d
	}
	corruptions := map[string]func(t *testing.T, r *Realm, o *Organization, d *Department){
		"org removed without its departments": func(_ *testing.T, r *Realm, o *Organization, _ *Department) {
			delete(r.Orgs, o.ID)
			delete(r.OrgByAlias, o.Alias)
		},
		"stale alias index": func(_ *testing.T, r *Realm, o *Organization, _ *Department) { r.OrgByAlias["ghost"] = o.ID },
		"department removed, child left": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			r.h.byDept[d.h] = nil
			r.removeDept(d)
		},
		"assignment missing from an index": func(_ *testing.T, r *Realm, _ *Organization, d *Department) { r.h.byDept[d.h] = nil },
		"assignment in one index only": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			delete(r.h.byUser[r.Users["u-alice"].h], d.h)
		},
		"assignment times differ": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			r.h.byDept[d.h][r.Users["u-alice"].h]++
		},
		"freed department handle keeps its assignments": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			held := r.h.byDept[d.h]
			h := d.h
			r.removeDept(d) // without forget: the assignment stays behind
			r.h.byDept[h] = held
		},
		"user assigned through a freed department handle": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			r.removeDept(d) // the user's set still names the handle
		},
		"department handle both free and live": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			r.h.free = append(r.h.free, d.h)
		},
		"department handle free twice": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			h := d.h
			r.h.byDept[h] = nil
			r.removeDept(d)
			r.h.free = append(r.h.free, h)
		},
		"unused department handle off the free list": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			r.h.depts = append(r.h.depts, nil)
			r.h.byDept = append(r.h.byDept, nil)
		},
		"department handle names another department": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			for _, other := range r.Depts {
				if other != d {
					d.h, other.h = other.h, d.h
					return
				}
			}
		},
		"user handle names another user": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			a, b := r.Users["u-alice"], r.Users["u-bob"]
			a.h, b.h = b.h, a.h
		},
		"assignment count off": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) { r.assignments++ },
		"wrong depth":          func(_ *testing.T, r *Realm, _ *Organization, d *Department) { d.Depth = 2 },
		"duplicate dept alias": func(_ *testing.T, r *Realm, o *Organization, d *Department) {
			r.addDept(&Department{ID: "x", OrgID: o.ID, ParentID: o.ID, Name: "X", Alias: d.Alias, Depth: 1})
		},
		"group link one-sided": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) { delete(r.GroupOrg, "g-eng") },
		"role link to a missing role": func(_ *testing.T, r *Realm, o *Organization, _ *Department) {
			r.OrgRoles[o.ID]["r-ghost"] = struct{}{}
		},
		"app assigned but not in catalog": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			for id := range r.Apps {
				delete(r.Apps, id)
			}
		},
		"template of a missing org": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			r.PropTmpls["p"] = &PropertyTemplate{ID: "p", OrgID: "ghost"}
		},
		"template missing from its org's index": func(_ *testing.T, r *Realm, o *Organization, _ *Department) {
			r.PropTmpls["p"] = &PropertyTemplate{ID: "p", OrgID: o.ID}
		},
		"department missing from its parent's child list": func(_ *testing.T, r *Realm, o *Organization, d *Department) {
			delete(r.orgs[o.ID].children, o.ID)
		},
		"child list out of order": func(_ *testing.T, r *Realm, _ *Organization, d *Department) {
			// Added with an order that is not the lists' own.
			x := &Department{ID: "0", OrgID: d.OrgID, ParentID: d.ID, Name: "Z", Depth: 2}
			r.orgs[d.OrgID].children[d.ID].insert(x, func(a, b *Department) int { return -cmpDept(a, b) })
			r.addDept(x)
			r.orgs[d.OrgID].depts++
		},
		"stale property key": func(t *testing.T, r *Realm, o *Organization, _ *Department) {
			tmpl := testkit.Must(r.CreatePropertyTemplate(o.ID, PropertyTemplateSpec{Name: "P",
				Properties: []Property{{Key: "cost-center", Type: PropString, Required: true}}}, t0))(t)
			tmpl.Properties = []Property{{Key: "region", Type: PropString}}
		},
		"stale department alias": func(_ *testing.T, r *Realm, o *Organization, _ *Department) { r.orgs[o.ID].aliases["ghost"] = "x" },
		"department count off":   func(_ *testing.T, r *Realm, o *Organization, _ *Department) { r.orgs[o.ID].depts++ },
		"org list stale":         func(_ *testing.T, r *Realm, o *Organization, _ *Department) { r.orgList = nil },
		"org renamed behind the list": func(t *testing.T, r *Realm, o *Organization, _ *Department) {
			mustOrg(t, r, "B", "b")
			o.Name = "Z"
		},
		"role list stale": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) { r.roleList = r.roleList[1:] },
		"user missing from the ordered ids": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			u := &User{ID: "u-carol", Username: "carol"}
			r.addUserHandle(u)
			r.Users["u-carol"], r.UserByName["carol"] = u, "u-carol"
		},
		"user without a handle": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			r.Users["u-carol"], r.UserByName["carol"] = &User{ID: "u-carol", Username: "carol"}, "u-carol"
			r.userIDs.insert("u-carol", strings.Compare)
		},
		"ordered ids keep a removed user": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			u := &User{ID: "u-carol", Username: "carol"}
			r.addUserHandle(u)
			r.Users["u-carol"], r.UserByName["carol"] = u, "u-carol"
			r.userIDs.insert("u-dave", strings.Compare)
		},
		"global role not in set": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) { delete(r.globalRoles, "r-viewer") },
		"group name index stale": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) { r.GroupByName["ghost"] = "g-eng" },
		"application assignment one-sided": func(_ *testing.T, r *Realm, _ *Organization, _ *Department) {
			for id := range r.AppOrgs {
				delete(r.AppOrgs, id)
			}
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			r, o, d := build(t)
			corrupt(t, r, o, d)
			assert.Error(t, r.CheckInvariants())
		})
	}
}
