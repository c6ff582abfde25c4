package telemetry_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/orgauthz/orgauthz/mockserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The names and the fixture below are those of pep's and authzen's own
// tests, which another module cannot import.
const (
	testRealm  = "acme"
	testClient = "orders-api"
	pepToken   = "pep-token-0123456789abcdef"
)

// es256Tokens makes a test's reference server sign access tokens ES256,
// with the P-256 key every realm has from the start, rather than RS256 (the
// default, as Keycloak's) with a 2048-bit RSA key made on the realm's first
// token, 70 to 110 ms of CPU under -race per server, and an RSA signature
// per token. No telemetry test is about the token's algorithm; integration/interop proves the default with OpenID Connect
// libraries. Each server still makes keys of its own: a key shared between
// servers would make one accept another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// corp: ada manages the realm; uma reads docs (a direct role) and sits in South/Desk; wes writes
// docs through the role linked to organization North, where he sits in Ops
// and Night, and may delete docs only with DELETE; vic reads reports through
// the audit group and has no assignment.
var corp = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:   "corp",
	Roles:  []mockserver.FixtureRole{{Name: "reader"}, {Name: "writer"}, {Name: "auditor"}},
	Groups: []mockserver.FixtureGroup{{Name: "audit", Roles: []string{"auditor"}}},
	Users: []mockserver.FixtureUser{
		{Username: "ada", Roles: []string{"realm-admin"}},
		{Username: "uma", Roles: []string{"reader"}},
		{Username: "wes"},
		{Username: "vic", Groups: []string{"audit"}},
	},
	Clients: []mockserver.FixtureClient{{
		ClientID: "docs-api", Secret: "docs-secret",
		Resources: []mockserver.FixtureResource{
			{Name: "docs", Scopes: []string{"read", "write", "delete"}},
			{Name: "reports", Scopes: []string{"read"}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "readers read docs", Resource: "docs", Scopes: []string{"read"}, Roles: []string{"reader"}},
			{Name: "writers write docs", Resource: "docs", Scopes: []string{"write"}, Roles: []string{"writer"}},
			{Name: "writers delete docs with DELETE", Resource: "docs", Scopes: []string{"delete"}, Roles: []string{"writer"}, Methods: []string{"DELETE"}},
			{Name: "auditors read reports", Resource: "reports", Scopes: []string{"read"}, Roles: []string{"auditor"}},
		},
	}},
	Organizations: []mockserver.FixtureOrganization{
		{Name: "North", Alias: "north", Roles: []string{"writer"}, Departments: []mockserver.FixtureDepartment{
			{Name: "Ops", Alias: "ops", Users: []string{"wes"}, Children: []mockserver.FixtureDepartment{
				{Name: "Night", Alias: "night", Users: []string{"wes"}},
			}},
		}},
		{Name: "South", Alias: "south", Departments: []mockserver.FixtureDepartment{
			{Name: "Desk", Alias: "desk", Users: []string{"uma"}},
		}},
	},
}}}
