package mockserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestGetOrganizationsNamesOneDepartmentAtEveryReplica: two replicas of
// one key seed whose fixtures differ (a rolling fixture edit: the EU sales
// department removed) give bob's department (alias sales-us) the same id,
// never the one replica a gives eve's (alias sales-eu), though both are
// named "Sales": get-organizations, the context a PEP reads
// (pep.Client.Organizations), names a department by its id at every
// replica (a-fix17b F1: the id came from the name and the order the
// siblings were listed in, and an application letting members of eve's
// department in let bob in through replica b).
func TestGetOrganizationsNamesOneDepartmentAtEveryReplica(t *testing.T) {
	t.Parallel()
	fixture := func(depts ...mockserver.FixtureDepartment) mockserver.Fixture {
		return mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
			Name:  "acme",
			Users: []mockserver.FixtureUser{{Username: "eve", Password: "e"}, {Username: "bob", Password: "b"}},
			Clients: []mockserver.FixtureClient{{ClientID: "orders-api", Secret: "s",
				Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read"}}}}},
			Organizations: []mockserver.FixtureOrganization{{Name: "Acme", Alias: "acme-org",
				Applications: []string{"orders-api"}, Departments: depts}},
		}}}
	}
	eu := mockserver.FixtureDepartment{Name: "Sales", Alias: "sales-eu", Users: []string{"eve"}}
	us := mockserver.FixtureDepartment{Name: "Sales", Alias: "sales-us", Users: []string{"bob"}}
	a := mockservertest.Start(t, es256Tokens, mockserver.WithKeySeed(keySeed), mockserver.WithFixture(fixture(eu, us)))
	b := mockservertest.Start(t, es256Tokens, mockserver.WithKeySeed(keySeed), mockserver.WithFixture(fixture(us)))

	depts := func(srv *mockservertest.Server, user string) []string {
		res := bearerCall(t, srv, http.MethodPost, "/realms/acme/authorization-decision-provider/get-organizations",
			srv.Token("acme", user), `{"clientId":"orders-api"}`)
		if res.Status != http.StatusOK {
			t.Fatalf("get-organizations for %s: %d %s", user, res.Status, res.Body)
		}
		var out struct {
			Organization struct {
				Tenants []struct {
					Departments []struct {
						DepartmentID string `json:"departmentId"`
					} `json:"departments"`
				} `json:"tenants"`
			} `json:"organization"`
		}
		if err := json.Unmarshal(res.Body, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tn := range out.Organization.Tenants {
			for _, d := range tn.Departments {
				ids = append(ids, d.DepartmentID)
			}
		}
		return ids
	}
	eveAtA, bobAtA, bobAtB := depts(a, "eve"), depts(a, "bob"), depts(b, "bob")
	if len(eveAtA) != 1 || len(bobAtA) != 1 || len(bobAtB) != 1 {
		t.Fatalf("want one department each: eve@a %v bob@a %v bob@b %v", eveAtA, bobAtA, bobAtB)
	}
	if bobAtB[0] == eveAtA[0] {
		t.Errorf("bob's department (sales-us) at replica b has the id of eve's (sales-eu) at replica a: %s", eveAtA[0])
	}
	if bobAtB[0] != bobAtA[0] {
		t.Errorf("bob's department has two ids at two replicas of one seed: %s and %s", bobAtA[0], bobAtB[0])
	}
}
