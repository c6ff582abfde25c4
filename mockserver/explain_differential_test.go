package mockserver_test

// A differential fuzz (from the attack of issue 28) of
// the policy evaluation route against /authorize over random realms with
// odd shapes (wildcard resource and scope names, duplicate resources,
// undefined resources and scopes, permissions on every scope, method
// limits in any case, ownership rules, nested departments with template
// roles, organization roles, organization claims by alias and unknown).
// For every request, the explanation's status and its (resource, scope,
// status) results must be exactly /authorize's for that user's token.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func some[T any](r *rand.Rand, xs []T, max int) []T {
	n := r.IntN(max + 1)
	var out []T
	for range n {
		out = append(out, pick(r, xs))
	}
	return out
}

func attackFixture(r *rand.Rand) mockserver.Fixture {
	roles := []string{"r0", "r1", "r2", "r3", "r4", "realm-admin"}
	groups := []string{"g0", "g1", "g2"}
	users := []string{"u0", "u1", "u2", "u3", "u4"}
	scopes := []string{"read", "write", "delete", "*", "READ"}
	rm := mockserver.FixtureRealm{Name: "acme"}
	for _, n := range roles[:5] {
		rm.Roles = append(rm.Roles, mockserver.FixtureRole{Name: n})
	}
	for _, g := range groups {
		rm.Groups = append(rm.Groups, mockserver.FixtureGroup{Name: g, Roles: slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 2))))})
	}
	for _, u := range users {
		rm.Users = append(rm.Users, mockserver.FixtureUser{Username: u, Email: u + "@x.test",
			Roles:  slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 2)))),
			Groups: slices.Compact(slices.Sorted(slices.Values(some(r, groups, 2))))})
	}
	rm.Users = append(rm.Users, mockserver.FixtureUser{Username: "alice", Password: "a", Roles: []string{"realm-admin"}})
	for i := range 3 {
		var depts []mockserver.FixtureDepartment
		for j := range 2 {
			d := mockserver.FixtureDepartment{Name: fmt.Sprintf("d%d%d", i, j), Alias: fmt.Sprintf("d%d%d", i, j),
				Roles: slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 1)))),
				Users: slices.Compact(slices.Sorted(slices.Values(some(r, users, 2))))}
			d.Children = []mockserver.FixtureDepartment{{Name: d.Name + "c", Alias: d.Alias + "c",
				Roles: slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 1)))),
				Users: slices.Compact(slices.Sorted(slices.Values(some(r, users, 2))))}}
			depts = append(depts, d)
		}
		rm.Organizations = append(rm.Organizations, mockserver.FixtureOrganization{Name: fmt.Sprintf("O%d", i), Alias: fmt.Sprintf("o%d", i),
			Roles: slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 1)))), Departments: depts})
	}
	cl := mockserver.FixtureClient{ClientID: "orders-api", Secret: "s"}
	for _, n := range []string{"orders", "invoices", "orders/*", "Orders"} {
		sc := slices.Compact(slices.Sorted(slices.Values(some(r, scopes, 3))))
		if len(sc) == 0 {
			sc = []string{"read"}
		}
		cl.Resources = append(cl.Resources, mockserver.FixtureResource{Name: n, Scopes: sc})
	}
	for i := range 8 {
		p := mockserver.FixturePermission{Name: fmt.Sprintf("p%d", i), Resource: pick(r, cl.Resources).Name,
			Roles:  slices.Compact(slices.Sorted(slices.Values(some(r, roles[:5], 2)))),
			Groups: slices.Compact(slices.Sorted(slices.Values(some(r, groups, 1)))),
			Users:  slices.Compact(slices.Sorted(slices.Values(some(r, users, 1))))}
		if r.IntN(2) == 0 {
			p.Scopes = slices.Compact(slices.Sorted(slices.Values(some(r, scopes, 2))))
		}
		if r.IntN(3) == 0 {
			p.Methods = slices.Compact(slices.Sorted(slices.Values(some(r, []string{"GET", "delete", "Post"}, 2))))
		}
		if r.IntN(6) == 0 {
			p.OwnerProperty = "owner"
		}
		cl.Permissions = append(cl.Permissions, p)
	}
	rm.Clients = []mockserver.FixtureClient{cl}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{rm}}
}

func TestEvaluateMatchesAuthorizeFuzz(t *testing.T) {
	t.Parallel()
	names := []string{"orders", "invoices", "*", "orders/*", "Orders", "ghost", "orders"}
	scopes := []string{"read", "write", "delete", "*", "READ", "fly"}
	seeds, checked := 0, 0
	for seed := uint64(1); seeds < 12 && seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		fx := attackFixture(r)
		if _, err := mockserver.New(mockserver.WithFixture(fx)); err != nil {
			t.Logf("seed %d: fixture refused: %v", seed, err)
			continue
		}
		seeds++
		srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(fx))
		admin := srv.Token("acme", "alice")
		subjects := []string{"u0", "u1", "u2", "u3", "u4", "alice", "service-account-orders-api"}
		for range 40 {
			var res []string
			for range 1 + r.IntN(3) {
				sc := some(r, scopes, 3)
				if len(sc) == 0 {
					res = append(res, fmt.Sprintf(`{"name":%q}`, pick(r, names)))
				} else {
					b, _ := json.Marshal(sc)
					res = append(res, fmt.Sprintf(`{"name":%q,"scopes":%s}`, pick(r, names), b))
				}
			}
			asked := "[" + strings.Join(res, ",") + "]"
			user := pick(r, subjects)
			org := pick(r, []string{"", "", "o0", "o1", "O2", "nope"})
			method := pick(r, []string{"", "GET", "get", "DELETE", "POST", "PATCH"})
			var opts []mockserver.TokenOption
			if org != "" {
				opts = append(opts, mockserver.TokenOrganization(org))
			}
			status, pairs := decide(t, srv, srv.Token("acme", user, opts...), asked, `{"attributes":{"method":"`+method+`","path":"/x"}}`)
			body := `{"username":"` + user + `","resources":` + asked + `,"context":{"attributes":{"method":"` + method + `"},"organization":"` + org + `"}}`
			hr := bearerCall(t, srv, http.MethodPost, fmt.Sprintf(evaluatePath, "orders-api"), admin, body)
			require.Equal(t, http.StatusOK, hr.Status, string(hr.Body))
			var ev evaluation
			require.NoError(t, json.Unmarshal(hr.Body, &ev))
			got := []string{}
			for _, p := range ev.Results {
				got = append(got, p.Resource+"/"+p.Scope+"="+p.Status)
			}
			where := fmt.Sprintf("seed %d: %s org %q method %q asked %s", seed, user, org, method, asked)
			require.Equal(t, status, ev.Status, where)
			require.Equal(t, pairs, got, where)
			checked++
		}
	}
	t.Logf("%d realms, %d requests: every explanation matched /authorize", seeds, checked)
	require.Greater(t, seeds, 5)
}
