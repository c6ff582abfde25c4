package decision

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestEffectiveRolesSources: each role a user holds comes with every way
// the user holds it, as the world's comment lays them out.
func TestEffectiveRolesSources(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	eu, us, sales, ops := w.ids["eu"], w.ids["us"], w.ids["sales"], w.ids["ops"]
	cases := []struct {
		name, user, org string
		want            []EffectiveRole
	}{
		{"direct", "alice", "", []EffectiveRole{
			{ID: w.ids["viewer"], Name: "viewer", Sources: []RoleSource{{Kind: FromRealmRole}}},
		}},
		{"group", "bob", "", []EffectiveRole{
			{ID: w.ids["approver"], Name: "approver", Sources: []RoleSource{{Kind: FromGroup, GroupID: w.ids["finance"], Group: "finance"}}},
		}},
		{"organizations and a template", "carol", "", []EffectiveRole{
			{ID: w.ids["auditor"], Name: "auditor", Sources: []RoleSource{{Kind: FromOrganization, OrganizationID: us, Organization: "Acme US", DepartmentID: ops, Department: "Ops"}}},
			{ID: w.ids["editor"], Name: "editor", Sources: []RoleSource{{Kind: FromOrganization, OrganizationID: eu, Organization: "Acme EU", DepartmentID: sales, Department: "Sales"}}},
			{ID: w.ids["viewer"], Name: "viewer", Sources: []RoleSource{{Kind: FromTemplate, OrganizationID: us, Organization: "Acme US", DepartmentID: ops, Department: "Ops"}}},
		}},
		{"organization claim by alias", "carol", "eu", []EffectiveRole{
			{ID: w.ids["editor"], Name: "editor", Sources: []RoleSource{{Kind: FromOrganization, OrganizationID: eu, Organization: "Acme EU", DepartmentID: sales, Department: "Sales"}}},
		}},
		{"unknown organization claim", "carol", "nowhere", []EffectiveRole{}},
		{"no roles", "dave", "", []EffectiveRole{}},
		{"unknown user", "nobody", "", []EffectiveRole{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, EffectiveRoles(w.r, w.ids[tc.user], tc.org))
		})
	}
}

// TestEffectiveRolesAreTheDecisionsRoles: for every user and organization
// claim, the explained roles are exactly the set a decision counts, and
// explaining changes no role of the subject.
func TestEffectiveRolesAreTheDecisionsRoles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.ids["alice"]
	_, _, err := w.r.Assign(a, w.ids["ops"], w.r.CreatedAt) // also the template role she holds directly
	require.NoError(t, err)
	for _, user := range []string{"alice", "bob", "carol", "dave", "nobody"} {
		for _, org := range []string{"", w.ids["eu"], "us", "nowhere"} {
			sub := SubjectOf(w.r, w.ids[user], org)
			explained, facts := ExplainSubject(w.r, w.ids[user], org)
			require.Equal(t, sub, explained, "%s under %q", user, org)
			var ids []string
			for _, er := range facts.Roles {
				ids = append(ids, er.ID)
				require.NotEmpty(t, er.Sources)
			}
			require.ElementsMatch(t, slices.Collect(maps.Keys(sub.Roles)), ids, "%s under %q", user, org)
			require.Equal(t, org == "nowhere" && user != "nobody", facts.OrganizationUnknown)
		}
	}
	roles := EffectiveRoles(w.r, a, "")
	require.Equal(t, []RoleSource{{Kind: FromRealmRole}, {Kind: FromTemplate, OrganizationID: w.ids["us"], Organization: "Acme US", DepartmentID: w.ids["ops"], Department: "Ops"}},
		roles[slices.IndexFunc(roles, func(er EffectiveRole) bool { return er.Name == "viewer" })].Sources, "a role held two ways has both sources")
}

// TestExplainIsTheDecision: every request of TestEvaluatePerSubject and
// TestEvaluateExpansion explains to the statuses Evaluate answers, and
// each pair lists exactly the permissions that apply to it.
func TestExplainIsTheDecision(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := Compile(w.client)
	requests := [][]Resource{everything, {{Name: "*"}}, {{Name: "orders", Scopes: []string{"fly", "read", "read"}}}, {{Name: "ghost", Scopes: []string{"read"}}, {Name: "spirit"}}}
	for _, user := range []string{"alice", "bob", "carol", "dave", "nobody"} {
		for _, org := range []string{"", "us", "nowhere"} {
			for _, method := range []string{"GET", "DELETE", ""} {
				for _, res := range requests {
					want := w.eval(user, org, method, res...)
					got := p.Explain(w.r, Request{UserID: w.ids[user], Organization: org, Resources: res, Method: method})
					require.Equal(t, want.Status, got.Status)
					require.Len(t, got.Pairs, len(want.Permissions))
					for i, pe := range got.Pairs {
						require.Equal(t, want.Permissions[i], Permission{Resource: pe.Resource, Scope: pe.Scope, Status: pe.Status})
						granted := slices.ContainsFunc(pe.Permissions, func(pc PermissionCheck) bool { return pc.Matched })
						require.Equal(t, pe.Status == Grant, granted, "%s %s/%s: a GRANT names the permission that grants", user, pe.Resource, pe.Scope)
						require.Equal(t, pe.Status == Error, pe.Undefined != "")
						require.NotEmpty(t, pe.Reason)
					}
				}
			}
		}
	}
}

// TestExplainFacts: the reasons of one DENY name the facts tested and
// their outcomes, and a GRANT past an earlier permission's grant still
// lists every permission that applies.
func TestExplainFacts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := Compile(w.client)
	got := p.Explain(w.r, Request{UserID: w.ids["dave"], Resources: []Resource{{Name: "orders", Scopes: []string{"delete"}}}, Method: "GET"})
	require.Equal(t, Deny, got.Status)
	require.Equal(t, []PermissionCheck{{
		Name:   "p3",
		Method: &MethodCheck{Allowed: []string{"DELETE"}, Method: "GET"},
		Users:  []FactCheck{{ID: w.ids["dave"], Name: "dave", Matched: true}},
	}}, got.Pairs[0].Permissions)

	got = p.Explain(w.r, Request{UserID: w.ids["carol"], Resources: []Resource{{Name: "orders", Scopes: []string{"write"}}}, Method: "DELETE"})
	require.Equal(t, Grant, got.Status)
	require.Equal(t, []PermissionCheck{
		{Name: "p2", Matched: true, Roles: []FactCheck{{ID: w.ids["editor"], Name: "editor", Matched: true, Sources: []RoleSource{
			{Kind: FromOrganization, OrganizationID: w.ids["eu"], Organization: "Acme EU", DepartmentID: w.ids["sales"], Department: "Sales"}}}}},
		{Name: "p3", Method: &MethodCheck{Allowed: []string{"DELETE"}, Method: "DELETE", Matched: true}, Users: []FactCheck{{ID: w.ids["dave"], Name: "dave"}}},
	}, got.Pairs[0].Permissions)
	require.Equal(t, `permission "p2" grants it`, got.Pairs[0].Reason)
}

// TestExplainOwnership: an ownership rule is explained with the instance's
// property, on the Decide path (resource properties).
func TestExplainOwnership(t *testing.T) {
	t.Parallel()
	r := store.NewRealm("acme", time.Unix(0, 0))
	u := testkit.Must(r.AddUser(store.User{Username: "ann", Email: "ann@x.test"}, nil, nil))(t)
	c := testkit.Must(r.AddClient(store.Client{ClientID: "docs", Secret: "s",
		Resources:   []store.ClientResource{{Name: "doc", Scopes: []string{"edit"}}},
		Permissions: []store.ClientPermission{{Name: "owners edit", Resource: "doc", Users: []string{u.ID}, OwnerProperty: "owner"}}}, nil))(t)
	p := Compile(c)
	ask := []Resource{{Name: "doc", Scopes: []string{"edit"}}}
	got := p.Explain(r, Request{UserID: u.ID, Resources: ask, ByPair: true, Properties: map[string]any{"owner": "bea"}})
	require.Equal(t, Deny, got.Status)
	require.Equal(t, &OwnerCheck{Property: "owner", Instance: true, Value: "bea", Present: true}, got.Pairs[0].Permissions[0].Owner)
	got = p.Explain(r, Request{UserID: u.ID, Resources: ask, ByPair: true, Properties: map[string]any{"owner": "ann@x.test"}})
	require.Equal(t, Grant, got.Status)
	for _, byPair := range []bool{true, false} {
		got = p.Explain(r, Request{UserID: u.ID, Resources: ask, ByPair: byPair})
		require.Equal(t, Deny, got.Status, "no instance: an ownership rule never grants")
		require.Equal(t, &OwnerCheck{Property: "owner"}, got.Pairs[0].Permissions[0].Owner)
	}
	got = p.Explain(r, Request{UserID: u.ID, Resources: []Resource{{Name: Wildcard, Scopes: []string{"edit"}}}, ByPair: true})
	require.Equal(t, Error, got.Status, "to Decide, * is no resource")
	require.Equal(t, undefinedResource, got.Pairs[0].Undefined)
}

// TestExplainMaxPairs: past MaxPairs the pairs are decided but not
// recorded, only counted; the status is still the whole request's, a DENY
// past the bound included (issue 28: the web UI's bounded evaluation).
func TestExplainMaxPairs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := Compile(w.client)
	ask := []Resource{{Name: "orders", Scopes: []string{"write", "delete"}}}
	for _, byPair := range []bool{false, true} {
		full := p.Explain(w.r, Request{UserID: w.ids["carol"], Resources: ask, ByPair: byPair})
		require.Len(t, full.Pairs, 2)
		require.Equal(t, Grant, full.Pairs[0].Status)
		require.Equal(t, Deny, full.Pairs[1].Status)
		got := p.Explain(w.r, Request{UserID: w.ids["carol"], Resources: ask, ByPair: byPair, MaxPairs: 1})
		require.Equal(t, Deny, got.Status, "the status counts the pair past the bound")
		require.Equal(t, full.Pairs[:1], got.Pairs)
		require.Equal(t, 1, got.MorePairs)
		require.Zero(t, full.MorePairs)
	}
}

// TestExplainItemsThatExpandToNothing: the ERROR pair of a request item
// that names nothing the client defines says what is missing.
func TestExplainItemsThatExpandToNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := Compile(&store.Client{ClientID: "api", Resources: []store.ClientResource{{Name: "reports"}, {Name: "orders", Scopes: []string{"read"}}}})
	got := p.Explain(w.r, Request{UserID: w.ids["alice"], Resources: []Resource{{Name: "reports"}, {Name: Wildcard, Scopes: []string{"purge"}}}})
	require.Equal(t, Error, got.Status)
	text := got.Text()
	require.Contains(t, text, `reports: ERROR, resource "reports" defines no scopes`)
	require.Contains(t, text, `*#purge: ERROR, no resource of the client defines scope "purge"`)
	got = Compile(&store.Client{ClientID: "bare"}).Explain(w.r, Request{UserID: w.ids["alice"], Resources: []Resource{{Name: Wildcard}}})
	require.Equal(t, Error, got.Status)
	require.Contains(t, got.Text(), `*: ERROR, the client defines no resource with a scope`)
}
