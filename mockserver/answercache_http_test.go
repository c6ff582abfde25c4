package mockserver_test

// Over loopback HTTP: every write of the organization API is
// seen by the next /authorize of a caller whose answer is cached.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func TestAnswersFollowAdminWritesOverHTTP(t *testing.T) {
	t.Parallel()
	fx := mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:  "acme",
		Roles: []mockserver.FixtureRole{{Name: "viewer"}, {Name: "editor"}},
		Users: []mockserver.FixtureUser{
			{Username: "admin", Roles: []string{"realm-admin"}},
			{Username: "carol"},
		},
		Clients: []mockserver.FixtureClient{{
			ClientID: "orders-api", Secret: "orders-secret",
			Resources: []mockserver.FixtureResource{{Name: "orders", Scopes: []string{"read", "write"}}},
			Permissions: []mockserver.FixturePermission{
				{Name: "editors write", Resource: "orders", Scopes: []string{"write"}, Roles: []string{"editor"}},
			},
		}},
		Organizations: []mockserver.FixtureOrganization{{Name: "Acme EU", Alias: "eu", Roles: []string{"editor"}}},
	}}}
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(fx))
	admin := srv.Token("acme", "admin")
	carol := srv.Token("acme", "carol")
	carolEU := srv.Token("acme", "carol", mockserver.TokenOrganization("eu"))
	do := func(tok, method, path, body string) (int, map[string]any) {
		t.Helper()
		ctype := ""
		if body != "" {
			ctype = "application/json"
		}
		res := send(t, srv, method, path, ctype, strings.NewReader(body), http.Header{"Authorization": {"Bearer " + tok}})
		var out map[string]any
		_ = json.Unmarshal(res.body, &out)
		return res.status, out
	}
	decide := func(tok string) string {
		t.Helper()
		var st string
		for i := range 3 { // the second and third from the cache
			code, out := do(tok, "POST", "/realms/acme/authorization-decision-provider/authorize",
				`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["write"]}],"context":{}}`)
			require.Equal(t, 200, code)
			s, _ := out["status"].(string)
			if i > 0 {
				require.Equal(t, st, s, "ask %d", i)
			}
			st = s
		}
		return st
	}
	id := func(out map[string]any) string {
		r, _ := out["result"].(map[string]any)
		if r == nil {
			r = out
		}
		s, _ := r["id"].(string)
		return s
	}
	code, out := do(admin, "GET", "/admin/realms/acme/organizations/alias/eu", "")
	require.Equal(t, 200, code, out)
	org := id(out)
	require.NotEmpty(t, org)
	code, out = do(admin, "GET", "/admin/realms/acme/organizations/"+org+"/roles", "")
	require.Equal(t, 200, code, out)
	results, _ := out["results"].([]any)
	if results == nil {
		results, _ = out["result"].([]any)
	}
	require.Len(t, results, 1, out)
	editor, _ := results[0].(map[string]any)["id"].(string)
	require.NotEmpty(t, editor)
	var carolID string
	// carol's id: the subject of her token, through userinfo
	code, out = do(carol, "GET", "/realms/acme/protocol/openid-connect/userinfo", "")
	require.Equal(t, 200, code, out)
	carolID, _ = out["sub"].(string)
	require.NotEmpty(t, carolID)

	require.Equal(t, "DENY", decide(carol))
	require.Equal(t, "DENY", decide(carolEU))
	code, out = do(admin, "POST", "/admin/realms/acme/organizations/"+org+"/departments", `{"name":"Ops"}`)
	require.Equal(t, 201, code, out)
	dept := id(out)
	users := "/admin/realms/acme/organizations/" + org + "/departments/" + dept + "/users"
	code, out = do(admin, "POST", users, `{"userId":"`+carolID+`"}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "GRANT", decide(carol), "assigned")
	require.Equal(t, "GRANT", decide(carolEU), "assigned")
	code, out = do(admin, "DELETE", "/admin/realms/acme/organizations/"+org+"/roles/"+editor, "")
	require.Equal(t, 200, code, out)
	require.Equal(t, "DENY", decide(carol), "role unlinked")
	require.Equal(t, "DENY", decide(carolEU), "role unlinked")
	code, out = do(admin, "POST", "/admin/realms/acme/organizations/"+org+"/roles", `{"roleId":"`+editor+`"}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "GRANT", decide(carol), "role linked again")
	code, out = do(admin, "DELETE", "/admin/realms/acme/organizations/"+org+"/departments/"+dept, "")
	require.Equal(t, 200, code, out)
	require.Equal(t, "DENY", decide(carol), "department deleted")
	require.Equal(t, "DENY", decide(carolEU), "department deleted")
	// assigned again, then the organization deleted
	code, out = do(admin, "POST", "/admin/realms/acme/organizations/"+org+"/departments", `{"name":"Ops2"}`)
	require.Equal(t, 201, code, out)
	dept = id(out)
	code, out = do(admin, "POST", "/admin/realms/acme/organizations/"+org+"/departments/"+dept+"/users", `{"userId":"`+carolID+`"}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "GRANT", decide(carolEU), "assigned again")
	code, out = do(admin, "DELETE", "/admin/realms/acme/organizations/"+org, "")
	require.Equal(t, 200, code, out)
	require.Equal(t, "DENY", decide(carol), "organization deleted")
	require.Equal(t, "DENY", decide(carolEU), "organization deleted")
}
