// Package corpfixture is the reference server's fixture that the client's
// end-to-end tests (pep) and its telemetry tests (integration/telemetry)
// share. It is imported by tests only.
package corpfixture

import "github.com/orgauthz/orgauthz/mockserver"

// Corp is the realm "corp": ada manages the realm; uma reads docs (a
// direct role) and sits in South/Desk; wes writes docs through the role linked to organization North, where he sits in Ops
// and Night, and may delete docs only with DELETE; vic reads reports through
// the audit group and has no assignment.
var Corp = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
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
