package mockserver

// Test fixtures that both test packages use: exported here, in a test file,
// for the external tests (mockserver_test).

// DecisionFixture is the world whose decisions the tests work out by hand
// (decisions_test.go) or ask of the engine (the answer cache's tests). It
// is exported to the external tests.
//
//	roles viewer (global), editor, approver, auditor; group finance holds approver
//	alice: viewer directly          bob: member of finance
//	carol: EU/Sales, US/Ops, US/Audit  dave: named by a permission, DELETE only
//	EU links editor; US links auditor; US/Ops gives viewer to its members (template role)
//	orders-api: orders{read,write,delete}, invoices{read,approve}
//	  orders[read] <- viewer        orders[write] <- editor
//	  orders[all scopes] <- user dave, methods DELETE
//	  invoices[approve] <- group finance   invoices[read] <- auditor
func DecisionFixture() Fixture {
	return Fixture{Realms: []FixtureRealm{
		{
			Name: "acme",
			Roles: []FixtureRole{{Name: "viewer", Attributes: map[string][]string{"global": {"true"}}},
				{Name: "editor"}, {Name: "approver"}, {Name: "auditor"}},
			Groups: []FixtureGroup{{Name: "finance", Roles: []string{"approver"}}},
			Users: []FixtureUser{
				{Username: "admin", Password: "admin", Roles: []string{"realm-admin"}},
				{Username: "alice", Roles: []string{"viewer"}},
				{Username: "bob", Groups: []string{"finance"}},
				{Username: "carol"},
				{Username: "dave"},
			},
			Clients: []FixtureClient{{
				ClientID: "orders-api", Secret: "orders-secret",
				Resources: []FixtureResource{{Name: "orders", Scopes: []string{"read", "write", "delete"}},
					{Name: "invoices", Scopes: []string{"read", "approve"}}},
				Permissions: []FixturePermission{
					{Name: "viewers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
					{Name: "editors write orders", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"editor"}},
					{Name: "dave deletes", Resource: "orders", Users: []string{"dave"}, Methods: []string{"DELETE"}},
					{Name: "finance approves", Resource: "invoices", Scopes: []string{"approve"}, Groups: []string{"finance"}},
					{Name: "auditors read invoices", Resource: "invoices", Scopes: []string{"read"}, Roles: []string{"auditor"}},
				},
			}},
			Organizations: []FixtureOrganization{
				{Name: "Acme EU", Alias: "eu", Roles: []string{"editor"},
					Departments: []FixtureDepartment{{Name: "Sales", Alias: "sales", Users: []string{"carol"}}}},
				{Name: "Acme US", Alias: "us", Roles: []string{"auditor"},
					Departments: []FixtureDepartment{
						{Name: "Ops", Alias: "ops", Users: []string{"carol"}, Roles: []string{"viewer"}},
						{Name: "Audit", Alias: "audit", Users: []string{"carol"}},
					}},
			},
		},
		{Name: "globex", Users: []FixtureUser{{Username: "gina"}}},
	}}
}
