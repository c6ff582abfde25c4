package store

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestAttackSiblingDepartmentsOfOneNameSwapIDsAcrossReplicas: department
// names are not unique under a parent (only aliases are), so two sibling
// departments "Sales" (aliases sales-eu and sales-us) are named alike to
// newID and told apart only by the occurrence counter, i.e. by the order
// the fixture lists them. A replica whose fixture lists only sales-us (or
// lists them the other way round) gives sales-us the id the first replica
// gives sales-eu: one id names two departments (with other template roles)
// across replicas of one seed, and sales-us has two ids.
func TestAttackSiblingDepartmentsOfOneNameSwapIDsAcrossReplicas(t *testing.T) {
	seed := []byte("one key seed for every replica")
	build := func(aliases ...string) map[string]string {
		r := NewRealm("acme", t0)
		r.SeedIDs(seed)
		o := testkit.Must(r.CreateOrganization(OrgSpec{Name: "Acme", Alias: "acme-org"}, t0))(t)
		byAlias := map[string]string{}
		for _, a := range aliases {
			d := mustDept(t, r, o.ID, "", DeptSpec{Name: "Sales", Alias: a})
			byAlias[a] = d.ID
		}
		return byAlias
	}
	a := build("sales-eu", "sales-us")
	b := build("sales-us")
	c := build("sales-us", "sales-eu")
	if b["sales-us"] == a["sales-eu"] {
		t.Errorf("sales-us at replica b has the id replica a gives sales-eu (%s)", a["sales-eu"])
	}
	if c["sales-us"] == a["sales-eu"] || c["sales-eu"] == a["sales-us"] {
		t.Errorf("listing the siblings the other way round swaps their ids between replicas")
	}
	if a["sales-us"] != b["sales-us"] || a["sales-us"] != c["sales-us"] {
		t.Errorf("sales-us has several ids across replicas of one seed: %s %s %s", a["sales-us"], b["sales-us"], c["sales-us"])
	}
}
