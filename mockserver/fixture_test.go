package mockserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

func TestFixtureRefusesUndefinedNames(t *testing.T) {
	t.Parallel()
	base := func() Fixture {
		return Fixture{Realms: []FixtureRealm{{
			Name:   "acme",
			Roles:  []FixtureRole{{Name: "viewer"}},
			Groups: []FixtureGroup{{Name: "eng", Roles: []string{"viewer"}}},
			Users:  []FixtureUser{{Username: "alice", Roles: []string{"viewer"}, Groups: []string{"eng"}}},
			Clients: []FixtureClient{{ClientID: "orders-api", Secret: "s",
				Resources:   []FixtureResource{{Name: "orders", Scopes: []string{"read"}}},
				Permissions: []FixturePermission{{Name: "p", Resource: "orders", Roles: []string{"viewer"}}}}},
			Organizations: []FixtureOrganization{{Name: "Acme EU", Alias: "acme-eu", Roles: []string{"viewer"},
				Applications: []string{"orders-api"},
				Departments:  []FixtureDepartment{{Name: "Sales", Alias: "sales", Users: []string{"alice"}}}}},
		}}}
	}
	mustNew(t, WithFixture(base()))

	cases := []struct {
		name   string
		break_ func(f *Fixture)
		want   string
	}{
		{"group role", func(f *Fixture) { f.Realms[0].Groups[0].Roles = []string{"ghost"} }, `group "eng": role "ghost" is not defined`},
		{"user role", func(f *Fixture) { f.Realms[0].Users[0].Roles = []string{"ghost"} }, `user "alice": role "ghost" is not defined`},
		{"user group", func(f *Fixture) { f.Realms[0].Users[0].Groups = []string{"ghosts"} }, `group "ghosts" is not defined`},
		{"permission resource", func(f *Fixture) { f.Realms[0].Clients[0].Permissions[0].Resource = "x" }, `resource "x" is not defined`},
		{"permission scope", func(f *Fixture) { f.Realms[0].Clients[0].Permissions[0].Scopes = []string{"fly"} }, `scope "fly" is not defined`},
		{"permission role", func(f *Fixture) { f.Realms[0].Clients[0].Permissions[0].Roles = []string{"ghost"} }, `role "ghost" is not defined`},
		{"permission group", func(f *Fixture) { f.Realms[0].Clients[0].Permissions[0].Groups = []string{"ghosts"} }, `group "ghosts" is not defined`},
		{"permission user", func(f *Fixture) { f.Realms[0].Clients[0].Permissions[0].Users = []string{"zed"} }, `user "zed" is not defined`},
		{"service account role", func(f *Fixture) { f.Realms[0].Clients[0].ServiceAccountRoles = []string{"ghost"} }, `role "ghost" is not defined`},
		{"confidential without secret", func(f *Fixture) { f.Realms[0].Clients[0].Secret = "" }, `needs a secret`},
		{"org role", func(f *Fixture) { f.Realms[0].Organizations[0].Roles = []string{"ghost"} }, `role "ghost" is not defined`},
		{"org application", func(f *Fixture) { f.Realms[0].Organizations[0].Applications = []string{"nope"} }, `application client "nope" is not defined`},
		{"department user", func(f *Fixture) { f.Realms[0].Organizations[0].Departments[0].Users = []string{"zed"} }, `user "zed" is not defined`},
		{"bad alias", func(f *Fixture) { f.Realms[0].Organizations[0].Alias = "Bad Alias" }, `organization "Bad Alias"`},
		{"duplicate org alias", func(f *Fixture) {
			f.Realms[0].Organizations = append(f.Realms[0].Organizations, f.Realms[0].Organizations[0])
		}, `organization "acme-eu": conflict`},
		{"duplicate department alias", func(f *Fixture) {
			d := &f.Realms[0].Organizations[0].Departments[0]
			d.Children = []FixtureDepartment{{Name: "Again", Alias: "sales"}}
		}, `department "sales": conflict`},
		{"duplicate realm", func(f *Fixture) { f.Realms = append(f.Realms, f.Realms[0]) }, `realm "acme" is defined twice`},
		{"duplicate user", func(f *Fixture) { f.Realms[0].Users = append(f.Realms[0].Users, f.Realms[0].Users[0]) }, `user "alice"`},
		{"relative redirect URI", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"/cb"} }, `redirect URI "/cb": the scheme must be http or https`},
		{"redirect URI with fragment", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"https://app.test/cb#x"} }, `a fragment is not allowed`},
		{"redirect URI wildcard", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"https://app.test/*"} }, `wildcards are not supported`},
		{"redirect URI scheme", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"javascript:alert(1)"} }, `the scheme must be http or https`},
		{"redirect URI space", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"https://app.test/c b"} }, `printable ASCII`},
		{"redirect URI user", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{"https://u@app.test/cb"} }, `user information`},
		{"redirect URI empty", func(f *Fixture) { f.Realms[0].Clients[0].RedirectURIs = []string{""} }, `redirect URI ""`},
		{"redirect URI twice", func(f *Fixture) {
			f.Realms[0].Clients[0].RedirectURIs = []string{"https://app.test/cb", "https://app.test/cb"}
		}, `redirect URI "https://app.test/cb" is listed twice`},
		{"platform admin without secret", func(f *Fixture) { f.PlatformAdmins = []FixturePlatformAdmin{{ClientID: "ops"}} }, `platformAdmins[0]`},
		// The bootstrap client defined public (no service account) used to
		// crash New with a nil pointer dereference.
		{"TestFixturePublicBootstrapClientIsRefused", func(f *Fixture) {
			f.Realms = append(f.Realms, FixtureRealm{Name: "master", Clients: []FixtureClient{{ClientID: "platform-admin", Public: true}}})
		}, `"platform-admin"`},
		{"TestFixtureTooDeep", func(f *Fixture) {
			cur := &f.Realms[0].Organizations[0].Departments[0]
			for i := range 32 {
				cur.Children = []FixtureDepartment{{Name: "d", Alias: "d" + string(rune('a'+i%26)) + string(rune('a'+i/26))}}
				cur = &cur.Children[0]
			}
		}, "32 levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := base()
			tc.break_(&f)
			_, err := New(WithFixture(f))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestFixtureBuildsConsistentState(t *testing.T) {
	t.Parallel()
	f := Fixture{Realms: []FixtureRealm{{
		Name:   "acme",
		Roles:  []FixtureRole{{Name: "viewer", Attributes: map[string][]string{"global": {"true"}}}, {Name: "clerk"}},
		Groups: []FixtureGroup{{Name: "eng", Roles: []string{"viewer"}}},
		Users:  []FixtureUser{{Username: "alice", Password: "pw", Email: "a@acme.test", Roles: []string{"realm-admin"}, Groups: []string{"eng"}}, {Username: "bob"}},
		Clients: []FixtureClient{{ClientID: "orders-api", Secret: "s", ServiceAccountRoles: []string{"clerk"},
			Resources: []FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}}}},
		Organizations: []FixtureOrganization{{Name: "Acme EU", Alias: "acme-eu", Roles: []string{"viewer"}, Groups: []string{"eng"},
			Applications: []string{"orders-api"},
			Departments: []FixtureDepartment{{Name: "Sales", Alias: "sales", Users: []string{"alice", "bob"}, Roles: []string{"clerk"},
				Children: []FixtureDepartment{{Name: "Inside Sales", Alias: "inside-sales", Users: []string{"bob"}}}}}}},
	}}}
	s := mustNew(t, WithFixture(f), WithAdminSecret("boot"))
	require.Equal(t, "boot", s.AdminSecret())
	require.NoError(t, s.store.CheckInvariants())
	require.Contains(t, s.store.Realms(), "master")
	require.NoError(t, s.store.Read("acme", func(r *store.Realm) error {
		require.NotNil(t, r.SigningKey)
		for _, n := range []string{"realm-admin", "offline_access", "viewer", "clerk"} {
			require.Contains(t, r.RoleByName, n)
		}
		cli, ok := r.ClientNamed("admin-cli")
		require.True(t, ok)
		require.True(t, cli.Public)
		api, ok := r.ClientNamed("orders-api")
		require.True(t, ok)
		sa := r.Users[api.ServiceAccountUserID]
		require.Equal(t, "service-account-orders-api", sa.Username)
		require.Contains(t, sa.RoleIDs, r.RoleByName["clerk"])

		orgID := r.OrgByAlias["acme-eu"]
		require.Contains(t, r.OrgRoles[orgID], r.RoleByName["viewer"])
		require.Len(t, r.OrgGroups[orgID], 1)
		require.Len(t, r.OrgApps[orgID], 1)
		require.Contains(t, r.AppByID, "orders-api")
		require.Len(t, r.Depts, 2)
		var sales, inside *store.Department
		for _, d := range r.Depts {
			if d.Alias == "sales" {
				sales = d
			} else {
				inside = d
			}
		}
		require.Equal(t, orgID, sales.ParentID)
		require.EqualValues(t, 1, sales.Depth)
		require.Equal(t, sales.ID, inside.ParentID)
		require.EqualValues(t, 2, inside.Depth)
		require.Equal(t, []string{r.RoleByName["clerk"]}, sales.TemplateRoleIDs)
		bob := r.UserByName["bob"]
		require.Len(t, r.AssignmentsByUser()[bob], 2)
		require.Len(t, r.AssignmentsByDept()[sales.ID], 2)
		require.Equal(t, 3, r.AssignmentCount())
		a, ok := r.Assignment(bob, inside.ID)
		require.True(t, ok)
		require.Equal(t, orgID, r.Depts[a.DepartmentID].OrgID)
		return nil
	}))
}

func TestFixtureFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"realms":[{"name":"acme","users":[{"username":"alice"}]}],
		"platformAdmins":[{"clientId":"platform-admin","secret":"from-file"}]}`), 0o600))
	s := mustNew(t, WithFixtureFile(good))
	require.Equal(t, "from-file", s.AdminSecret())
	s = mustNew(t, WithFixtureFile(good), WithAdminSecret("flag"))
	require.Equal(t, "flag", s.AdminSecret())

	typo := filepath.Join(dir, "typo.json")
	require.NoError(t, os.WriteFile(typo, []byte(`{"realms":[{"name":"acme","user":[]}]}`), 0o600))
	_, err := New(WithFixtureFile(typo))
	require.ErrorContains(t, err, `realms[].user: unknown member`)

	_, err = New(WithFixtureFile(filepath.Join(dir, "missing.json")))
	require.Error(t, err)

	// More than one JSON value: a second object was silently ignored
	// (TestLoadFixtureFileRefusesTrailingData).
	two := filepath.Join(dir, "two.json")
	require.NoError(t, os.WriteFile(two, []byte(`{"realms":[{"name":"acme"}]} {"realms":[{"name":"globex"}]}`), 0o600))
	_, err = LoadFixtureFile(two)
	require.Error(t, err)
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	_, err := New(WithIssuer("not a url"))
	require.ErrorContains(t, err, "WithIssuer")
	_, err = New(WithClock(nil))
	require.ErrorContains(t, err, "WithClock")
	s := mustNew(t)
	require.NotEmpty(t, s.AdminSecret(), "a random bootstrap secret is generated")
	_, err = s.IssueToken("master", "service-account-platform-admin")
	require.ErrorIs(t, err, errNoIssuer)
}
