package mockserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/orgauthz/orgauthz/mockserver"
)

// Example seeds a server with a fixture, mints a token for a user and asks
// the decision endpoint about two scopes, in process.
func Example() {
	srv, err := mockserver.New(
		mockserver.WithIssuer("http://example.com"),
		mockserver.WithFixture(mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
			Name:  "acme",
			Roles: []mockserver.FixtureRole{{Name: "viewer"}},
			Users: []mockserver.FixtureUser{{Username: "alice", Roles: []string{"viewer"}}},
			Clients: []mockserver.FixtureClient{{
				ClientID:  "orders-api",
				Secret:    "orders-secret",
				Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
				Permissions: []mockserver.FixturePermission{
					{Name: "viewers read", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
				},
			}},
		}}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	token, err := srv.IssueToken("acme", "alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := httptest.NewRequest(http.MethodPost, "http://example.com/realms/acme/authorization-decision-provider/authorize",
		strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":[]}],"context":{}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 200 {"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"DENY"}]}
}
