package decision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// world is a realm whose expected decisions are worked out by hand below.
//
//	roles: viewer, editor, approver, auditor; group finance holds approver
//	alice: viewer directly; bob: in finance; dave: named by a permission
//	carol: assigned to EU/sales and US/ops
//	org EU links editor; org US (alias us) links auditor; US/ops gives viewer (template role)
//	client api: orders{read,write,delete}, invoices{read,approve}
//	  orders[read] <- viewer; orders[write] <- editor; orders[*] <- user dave, DELETE only
//	  invoices[approve] <- group finance; invoices[read] <- auditor
type world struct {
	r      *store.Realm
	client *store.Client
	ids    map[string]string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	now := time.Unix(0, 0)
	r := store.NewRealm("acme", now)
	w := &world{r: r, ids: map[string]string{}}
	role := func(n string) string {
		ro := testkit.Must(r.AddRole(n, "", nil))(t)
		w.ids[n] = ro.ID
		return ro.ID
	}
	viewer, editor, approver, auditor := role("viewer"), role("editor"), role("approver"), role("auditor")
	fin := testkit.Must(r.AddGroup("finance", nil, []string{approver}))(t)
	w.ids["finance"] = fin.ID
	user := func(n string, roles, groups []string) string {
		u := testkit.Must(r.AddUser(store.User{Username: n}, roles, groups))(t)
		w.ids[n] = u.ID
		return u.ID
	}
	user("alice", []string{viewer}, nil)
	user("bob", nil, []string{fin.ID})
	carol := user("carol", nil, nil)
	dave := user("dave", nil, nil)

	eu := testkit.Must(r.CreateOrganization(store.OrgSpec{Name: "Acme EU", Alias: "eu"}, now))(t)
	us := testkit.Must(r.CreateOrganization(store.OrgSpec{Name: "Acme US", Alias: "us"}, now))(t)
	w.ids["eu"], w.ids["us"] = eu.ID, us.ID
	testkit.Must(r.LinkRole(eu.ID, editor))(t)
	testkit.Must(r.LinkRole(us.ID, auditor))(t)
	sales := testkit.Must(r.CreateDepartment(eu.ID, "", store.DeptSpec{Name: "Sales", Alias: "sales"}, now))(t)
	ops := testkit.Must(r.CreateDepartment(us.ID, "", store.DeptSpec{Name: "Ops", Alias: "ops", TemplateRoleIDs: []string{viewer}}, now))(t)
	w.ids["sales"], w.ids["ops"] = sales.ID, ops.ID
	for _, d := range []string{sales.ID, ops.ID} {
		testkit.Must2(r.Assign(carol, d, now))(t)
	}

	c := testkit.Must(r.AddClient(store.Client{ClientID: "api", Secret: "s",
		Resources: []store.ClientResource{{Name: "orders", Scopes: []string{"read", "write", "delete"}}, {Name: "invoices", Scopes: []string{"read", "approve"}}},
		Permissions: []store.ClientPermission{
			{Name: "p1", Resource: "orders", Scopes: []string{"read"}, Roles: []string{viewer}},
			{Name: "p2", Resource: "orders", Scopes: []string{"write"}, Roles: []string{editor}},
			{Name: "p3", Resource: "orders", Users: []string{dave}, Methods: []string{"DELETE"}},
			{Name: "p4", Resource: "invoices", Scopes: []string{"approve"}, Groups: []string{fin.ID}},
			{Name: "p5", Resource: "invoices", Scopes: []string{"read"}, Roles: []string{auditor}},
		}}, nil))(t)
	w.client = c
	return w
}

func (w *world) eval(user, org, method string, res ...Resource) Result {
	sub := SubjectOf(w.r, w.ids[user], org)
	return Compile(w.client).Evaluate(&sub, res, method)
}

// statuses returns "resource/scope=STATUS" for each pair.
func statuses(r Result) []string {
	out := make([]string, len(r.Permissions))
	for i, p := range r.Permissions {
		out[i] = p.Resource + "/" + p.Scope + "=" + string(p.Status)
	}
	return out
}

var everything = []Resource{{Name: "orders"}, {Name: "invoices"}}

func TestEvaluatePerSubject(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cases := []struct {
		name, user, org, method string
		want                    []string
	}{
		{"direct role", "alice", "", "GET", []string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"group", "bob", "", "GET", []string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=GRANT"}},
		{"two organizations and a template role", "carol", "", "GET", []string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=GRANT", "invoices/approve=DENY"}},
		{"organization claim by id", "carol", "EU", "GET", []string{"orders/read=DENY", "orders/write=GRANT", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"organization claim by alias", "carol", "us", "GET", []string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY", "invoices/read=GRANT", "invoices/approve=DENY"}},
		{"unknown organization claim", "carol", "nowhere", "GET", []string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"user with method", "dave", "", "delete", []string{"orders/read=GRANT", "orders/write=GRANT", "orders/delete=GRANT", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"user with other method", "dave", "", "GET", []string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"user without method", "dave", "", "", []string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"unknown user", "nobody", "", "GET", []string{"orders/read=DENY", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			org := tc.org
			if org == "EU" {
				org = w.ids["eu"]
			}
			require.Equal(t, tc.want, statuses(w.eval(tc.user, org, tc.method, everything...)))
		})
	}
}

func TestEvaluateLiveAssignments(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ask := Resource{Name: "orders", Scopes: []string{"write"}}
	require.Equal(t, Grant, w.eval("carol", "", "GET", ask).Status)
	require.NoError(t, w.r.Unassign(w.ids["carol"], w.ids["sales"]))
	require.Equal(t, Deny, w.eval("carol", "", "GET", ask).Status)
}

func TestEvaluateExpansion(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cases := []struct {
		name string
		res  []Resource
		want []string
	}{
		{"duplicates removed in request order", []Resource{{Name: "orders", Scopes: []string{"write", "read", "write"}}, {Name: "orders", Scopes: []string{"read"}}, {Name: "orders"}},
			[]string{"orders/write=DENY", "orders/read=GRANT", "orders/delete=DENY"}},
		{"wildcard", []Resource{{Name: "*"}}, []string{"orders/read=GRANT", "orders/write=DENY", "orders/delete=DENY", "invoices/read=DENY", "invoices/approve=DENY"}},
		{"wildcard with scopes", []Resource{{Name: "*", Scopes: []string{"read", "fly"}}}, []string{"orders/read=GRANT", "invoices/read=DENY", "*/fly=ERROR"}},
		{"undefined scope", []Resource{{Name: "orders", Scopes: []string{"fly", "read"}}}, []string{"orders/fly=ERROR", "orders/read=GRANT"}},
		{"undefined resource", []Resource{{Name: "ghost", Scopes: []string{"read"}}, {Name: "spirit"}}, []string{"ghost/read=ERROR", "spirit/=ERROR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, statuses(w.eval("alice", "", "GET", tc.res...)))
		})
	}

	// Many pairs switch duplicate detection to a map; the answer is the same.
	var many []Resource
	for range 20 {
		many = append(many, Resource{Name: "*"})
	}
	require.Len(t, w.eval("alice", "", "GET", many...).Permissions, 5)
	var scopes []string
	for i := range 40 {
		scopes = append(scopes, "s"+string(rune('a'+i%20)))
	}
	require.Len(t, w.eval("alice", "", "GET", Resource{Name: "orders", Scopes: scopes}).Permissions, 20)
}

// TestEveryItemYieldsAPair: a request item that expands to no pair of the
// client's (a resource that defines no scopes, "*" with a scope no resource
// defines, "*" on a client that defines no scope) is answered by ERROR
// pairs of what it asked for, so that it cannot vanish and leave the answer
// to the other items: beside a granted pair the request is not GRANT.
func TestEveryItemYieldsAPair(t *testing.T) {
	t.Parallel()
	sub := Subject{UserID: "u-bob", Roles: store.Set{"r-viewer": {}}}
	withReports := Compile(&store.Client{ClientID: "api",
		Resources: []store.ClientResource{{Name: "reports"}, {Name: "orders", Scopes: []string{"read"}}},
		Permissions: []store.ClientPermission{
			{Name: "viewers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"r-viewer"}},
			{Name: "viewers see reports", Resource: "reports", Roles: []string{"r-viewer"}},
		}})
	scopeless := Compile(&store.Client{ClientID: "bare", Resources: []store.ClientResource{{Name: "reports"}}})
	readOrders := Resource{Name: "orders", Scopes: []string{"read"}}
	cases := []struct {
		name   string
		p      *Policy
		res    []Resource
		want   []string
		status Status
	}{
		{"a resource without scopes, alone", withReports, []Resource{{Name: "reports"}}, []string{"reports/=ERROR"}, Error},
		{"a resource without scopes beside a grant", withReports, []Resource{{Name: "reports"}, readOrders},
			[]string{"reports/=ERROR", "orders/read=GRANT"}, Error},
		{"* with a scope nothing defines, alone", withReports, []Resource{{Name: "*", Scopes: []string{"purge"}}}, []string{"*/purge=ERROR"}, Error},
		{"* with a scope nothing defines beside a grant", withReports, []Resource{readOrders, {Name: "*", Scopes: []string{"purge"}}},
			[]string{"orders/read=GRANT", "*/purge=ERROR"}, Error},
		{"* with a defined and an undefined scope", withReports, []Resource{{Name: "*", Scopes: []string{"purge", "read"}}},
			[]string{"orders/read=GRANT", "*/purge=ERROR"}, Error},
		{"* on a client without scopes", scopeless, []Resource{{Name: "*"}}, []string{"*/=ERROR"}, Error},
		{"* on a client without scopes, twice", scopeless, []Resource{{Name: "*"}, {Name: "*", Scopes: []string{}}}, []string{"*/=ERROR"}, Error},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Evaluate(&sub, tc.res, "GET")
			require.Equal(t, tc.want, statuses(got))
			require.Equal(t, tc.status, got.Status)
		})
	}
}

func TestOverall(t *testing.T) {
	t.Parallel()
	p := func(ss ...Status) []Permission {
		out := make([]Permission, len(ss))
		for i, s := range ss {
			out[i].Status = s
		}
		return out
	}
	cases := []struct {
		name  string
		perms []Permission
		want  Status
	}{
		{"all grant", p(Grant, Grant), Grant},
		{"one deny", p(Grant, Deny), Deny},
		{"one error", p(Grant, Error), Error},
		{"deny beats error", p(Error, Deny, Grant), Deny},
		{"error then deny", p(Deny, Error), Deny},
		{"only errors", p(Error, Error), Error},
		{"no pairs", nil, Deny},
		{"zero status", p(Grant, ""), Deny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Overall(tc.perms))
		})
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var c Cache
	require.Same(t, c.Policy(w.client), c.Policy(w.client))
}

// TestEvaluateAllocatesOnlyItsResult: a decision's subject and role set
// stay on the caller's stack (SubjectOf is inlined, and Evaluate does not
// let the subject escape); the pairs it returns are its one allocation.
func TestEvaluateAllocatesOnlyItsResult(t *testing.T) {
	w := newWorld(t)
	p := Compile(w.client)
	res := []Resource{{Name: "orders", Scopes: []string{"read", "write"}}, {Name: "invoices", Scopes: []string{"read"}}}
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		sub := SubjectOf(w.r, w.ids["carol"], "")
		_ = p.Evaluate(&sub, res, "GET")
	}))
}

func BenchmarkEvaluate(b *testing.B) {
	w := newWorld(b)
	p := Compile(w.client)
	res := []Resource{{Name: "orders", Scopes: []string{"read", "write"}}, {Name: "invoices", Scopes: []string{"read"}}}
	b.ReportAllocs()
	for b.Loop() {
		sub := SubjectOf(w.r, w.ids["carol"], "")
		_ = p.Evaluate(&sub, res, "GET")
	}
}

// TestDecideOwnership: a permission with an ownership condition grants only
// on an instance whose named property holds the subject's username or
// email, and never when the request names no instance (the authorize
// route), whatever else matches.
func TestDecideOwnership(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	r := store.NewRealm("acme", now)
	editor := testkit.Must(r.AddRole("editor", "", nil))(t)
	morty := testkit.Must(r.AddUser(store.User{Username: "morty", Email: "morty@citadel.test"}, []string{editor.ID}, nil))(t)
	c := testkit.Must(r.AddClient(store.Client{ClientID: "todo", Secret: "s",
		Resources:   []store.ClientResource{{Name: "todo", Scopes: []string{"update"}}},
		Permissions: []store.ClientPermission{{Name: "own", Resource: "todo", Roles: []string{editor.ID}, OwnerProperty: "ownerID"}}}, nil))(t)
	p := Compile(c)
	sub := SubjectOf(r, morty.ID, "")
	cases := []struct {
		name  string
		props map[string]any
		want  Status
	}{
		{"owner by email", map[string]any{"ownerID": "morty@citadel.test"}, Grant},
		{"owner by username", map[string]any{"ownerID": "morty"}, Grant},
		{"another owner", map[string]any{"ownerID": "rick@citadel.test"}, Deny},
		{"case differs", map[string]any{"ownerID": "Morty@citadel.test"}, Deny},
		{"not a string", map[string]any{"ownerID": []any{"morty"}}, Deny},
		{"other property", map[string]any{"owner": "morty"}, Deny},
		{"no instance", nil, Deny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, p.Decide(&sub, "todo", "update", "GET", tc.props))
		})
	}
	require.Equal(t, Deny, p.Evaluate(&sub, []Resource{{Name: "todo"}}, "GET").Status, "the authorize route names no instance")
	require.Equal(t, Error, p.Decide(&sub, "todo", "delete", "", nil), "undefined scope")
	require.Equal(t, Error, p.Decide(&sub, "*", "update", "", nil), "no wildcard in Decide")
	nobody := SubjectOf(r, "no-such-id", "")
	require.Equal(t, Deny, p.Decide(&nobody, "todo", "update", "", map[string]any{"ownerID": ""}), "an empty name owns nothing")
}

// Resources and Scopes list what the client defines, for the AuthZEN
// searches, and cannot change the policy.
func TestResourcesAndScopes(t *testing.T) {
	t.Parallel()
	p := Compile(newWorld(t).client)
	rs := p.Resources()
	require.Equal(t, []string{"orders", "invoices"}, rs)
	rs[0] = "changed"
	require.Equal(t, []string{"orders", "invoices"}, p.Resources())
	s, ok := p.Scopes("orders")
	require.True(t, ok)
	require.Equal(t, []string{"read", "write", "delete"}, s)
	s[0] = "changed"
	s, _ = p.Scopes("orders")
	require.Equal(t, "read", s[0])
	_, ok = p.Scopes("ghost")
	require.False(t, ok)
	_, ok = p.Scopes(Wildcard)
	require.False(t, ok)
}
