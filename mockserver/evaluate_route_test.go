package mockserver_test

// Probes of the policy evaluation route (from the attack of issue 28): who
// may call it, and hostile bodies, none of which is a 5xx or echoes the
// token.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func twoRealmFixture() mockserver.Fixture {
	realm := func(name string) mockserver.FixtureRealm {
		return mockserver.FixtureRealm{Name: name,
			Roles: []mockserver.FixtureRole{{Name: "viewer"}},
			Users: []mockserver.FixtureUser{
				{Username: "alice", Password: "a", Roles: []string{"realm-admin"}},
				{Username: "bob", Password: "b", Roles: []string{"viewer"}},
			},
			Clients: []mockserver.FixtureClient{{ClientID: "orders-api", Secret: "s",
				Resources:   []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read"}}},
				Permissions: []mockserver.FixturePermission{{Name: "p", Resource: "orders", Roles: []string{"viewer"}}}}},
		}
	}
	return mockserver.Fixture{Realms: []mockserver.FixtureRealm{realm("acme"), realm("globex"), {Name: "master", Users: []mockserver.FixtureUser{{Username: "mike"}}}}}
}

func TestEvaluateWhoMayCall(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(twoRealmFixture()))
	body := `{"username":"bob","resources":[{"name":"orders"}]}`
	path := "/admin/realms/acme/clients/orders-api/authz/resource-server/policy/evaluate"
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"user without realm management", srv.Token("acme", "bob"), http.StatusForbidden},
		{"admin of another realm", srv.Token("globex", "alice"), http.StatusUnauthorized},
		{"platform admin (master)", srv.AdminToken(), http.StatusUnauthorized},
		{"garbage", "x.y.z", http.StatusUnauthorized},
		{"admin", srv.Token("acme", "alice"), http.StatusOK},
	} {
		res := bearerCall(t, srv, http.MethodPost, path, tc.token, body)
		require.Equal(t, tc.want, res.Status, "%s: %s", tc.name, res.Body)
		if tc.token != "" && tc.want != http.StatusOK {
			require.NotContains(t, string(res.Body), tc.token, tc.name)
		}
	}

	// Hostile bodies (TestEvaluateHostileBodies).
	admin := srv.Token("acme", "alice")
	path = "/admin/realms/acme/clients/%s/authz/resource-server/policy/evaluate"
	bodies := []string{
		``, `null`, `[]`, `{}`, `"x"`, `{"username":"bob"}`, `{"username":"bob","resources":null}`,
		`{"username":"bob","resources":[null]}`, `{"username":"bob","resources":[{"name":null}]}`,
		`{"username":"bob","resources":[{"name":"orders","scopes":[null]}]}`,
		`{"username":"bob","resources":[{"name":"orders","scopes":[""]}]}`,
		`{"username":"bob","userId":"x","resources":[{"name":"orders"}]}`,
		`{"username":"nobody","resources":[{"name":"orders"}]}`,
		`{"userId":"../../x","resources":[{"name":"orders"}]}`,
		`{"username":"bob","resources":[{"name":"*"}],"context":null}`,
		`{"username":"bob","resources":[{"name":"*"}],"context":{"organization":null,"attributes":null}}`,
		`{"username":"bob","resources":[{"name":"*"}],"context":{"organization":5}}`,
		`{"username":"bob","resources":[{"name":"*"}],"context":{"attributes":{"method":"GET","headers":"Authorization: Bearer x"}}}`,
		`{"username":"bob","resources":[{"name":"*"}],"context":{"attributes":{"verb":"GET"}}}`,
		`{"username":"bob","resources":[{"name":"orders"}],"extra":1}`,
		`{"username":"bob","resources":[{"name":"orders"}]}{"username":"alice"}`,
		`{"username":"bob","resources":[{"name":"orders"}],"username":"alice"}`,
		`{"username":"\u0000","resources":[{"name":"\ud800"}]}`,
		`{"username":"bob","resources":[` + strings.Repeat(`{"name":"orders"},`, 100) + `{"name":"orders"}]}`,
		`{"username":"bob","resources":[{"name":"orders","scopes":[` + strings.Repeat(`"read",`, 50) + `"read"]}]}`,
		`{"username":"` + strings.Repeat("a", 2<<20) + `","resources":[{"name":"orders"}]}`,
	}
	for _, client := range []string{"orders-api", "nope", "%2e%2e", "orders-api%00"} {
		for i, b := range bodies {
			res := bearerCall(t, srv, http.MethodPost, strings.Replace(path, "%s", client, 1), admin, b)
			require.Less(t, res.Status, 500, "client %s body %d: %s", client, i, res.Body)
			require.NotContains(t, string(res.Body), admin)
		}
	}
}
