package mockserver

// The web UI's promise that "every list shows at most 500 entries ... and
// says how many it left out" (docs/reference-server.md, Web UI), on a realm
// past the cap everywhere (from the attack of issue 28). The structural
// guard is TestWebUIPageListsAreBounded; these render the pages.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

const hugeRows = 1200 // well past maxUIRows (500)

// hugeFixture is uiFixture's realm acme plus a client with hugeRows
// resources and permissions, a user with hugeRows direct roles and
// groups, an organization with hugeRows linked roles, and hugeRows
// extra users.
func hugeFixture() Fixture {
	f := uiFixture()
	rm := &f.Realms[0]
	var res []FixtureResource
	var perms []FixturePermission
	var roles []string
	var groups []string
	for i := range hugeRows {
		rn := fmt.Sprintf("big-role-%04d", i)
		gn := fmt.Sprintf("big-group-%04d", i)
		rm.Roles = append(rm.Roles, FixtureRole{Name: rn})
		rm.Groups = append(rm.Groups, FixtureGroup{Name: gn})
		roles, groups = append(roles, rn), append(groups, gn)
		res = append(res, FixtureResource{Name: fmt.Sprintf("big-res-%04d", i), Scopes: []string{"read"}})
		perms = append(perms, FixturePermission{Name: fmt.Sprintf("big-perm-%04d", i), Resource: fmt.Sprintf("big-res-%04d", i),
			Scopes: []string{"read"}, Roles: []string{rn}})
		rm.Users = append(rm.Users, FixtureUser{Username: fmt.Sprintf("big-user-%04d", i)})
	}
	rm.Users = append(rm.Users, FixtureUser{Username: "hoarder", Roles: roles, Groups: groups})
	rm.Clients = append(rm.Clients, FixtureClient{ClientID: "huge-api", Secret: "s", Resources: res, Permissions: perms})
	rm.Organizations = append(rm.Organizations, FixtureOrganization{Name: "Huge", Alias: "huge", Roles: roles,
		Departments: []FixtureDepartment{{Name: "D", Alias: "d", Users: []string{"hoarder"}}}})
	return f
}

// TestWebUIListsCapped: every list of a page of the huge realm shows at
// most maxUIRows entries and says how many it left out: the client page's
// resources and permissions; the user page's direct roles, groups and
// effective roles; the organization page's linked roles; the evaluator's
// resource names per client and its users; an evaluation of "*" (whose
// decision is still the whole request's). One server serves every row.
func TestWebUIListsCapped(t *testing.T) {
	t.Parallel()
	u := newUIServer(t, WithFixture(hugeFixture()))
	c := u.admin()
	page := func(t *testing.T, path string) string {
		p := u.do(c, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, p.status)
		return p.body
	}
	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{"TestWebUIClientPageCapped", func(t *testing.T) {
			p := page(t, "/ui/realms/acme/clients/huge-api")
			require.LessOrEqual(t, strings.Count(p, "<tr><td>big-res-"), maxUIRows, "resources list past the 500-entry cap")
			require.LessOrEqual(t, strings.Count(p, "<td>big-perm-"), maxUIRows, "permissions list past the 500-entry cap")
			require.Equal(t, 2, strings.Count(p, "and 700 more not shown"), "each list says how many it left out")
		}},
		{"TestWebUIUserPageCapped", func(t *testing.T) {
			p := page(t, "/ui/realms/acme/users/"+u.id("user", "hoarder"))
			require.LessOrEqual(t, strings.Count(p, `<span class="role">big-role-`), maxUIRows, "direct roles past the cap")
			require.LessOrEqual(t, strings.Count(p, `<td class="role-name">big-role-`), maxUIRows, "effective roles past the cap")
			require.LessOrEqual(t, strings.Count(p, "big-group-"), maxUIRows, "groups past the cap")
			require.Equal(t, 3, strings.Count(p, "and 700 more not shown"), "each list says how many it left out")
		}},
		{"TestWebUIOrganizationRolesCapped", func(t *testing.T) {
			p := page(t, "/ui/realms/acme/organizations/"+u.id("org", "huge"))
			require.LessOrEqual(t, strings.Count(p, "big-role-"), maxUIRows, "linked roles past the cap")
			require.Contains(t, p, "and 700 more not shown")
		}},
		{"TestWebUIEvaluatorListsCapped", func(t *testing.T) {
			p := page(t, "/ui/realms/acme/evaluate")
			require.LessOrEqual(t, strings.Count(p, "big-res-"), maxUIRows, "resource names in the client choice past the cap")
			ev := u.do(c, http.MethodPost, "/ui/realms/acme/evaluate", url.Values{"csrf": {csrfInput.FindStringSubmatch(p)[1]},
				"user": {"hoarder"}, "client": {"huge-api"}, "resource": {"*"}, "scope": {"read"}})
			require.Equal(t, http.StatusOK, ev.status)
			require.LessOrEqual(t, strings.Count(ev.body, `<div class="pair">`), maxUIRows, "pairs of an evaluation past the cap")
			require.Contains(t, ev.body, "and 700 more pairs decided, not shown")
			require.Contains(t, ev.body, `<span id="decision" class="grant">GRANT</span>`)
		}},
		{"TestWebUIEvaluatorSaysUsersLeftOut", func(t *testing.T) {
			p := page(t, "/ui/realms/acme/evaluate")
			require.Equal(t, maxUIRows, strings.Count(p, "<option value=\"")-strings.Count(p, "<option value=\"huge-api")-
				strings.Count(p, "<option value=\"orders-api")-len(evalMethods))
			require.Contains(t, p, "704 more", "the user list was cut at 500 without saying how many it left out")
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}

// TestEvaluateAPITrustsTokenRoles records that the policy evaluation route
// (like every realmAdmin route) trusts the token's roles: an administrator
// demoted, or deleted, after the token was issued still gets explanations
// until the token expires, while the UI, which reads the user's live
// roles, refuses the same user at once. The two admin surfaces answer the
// same person differently.
func TestEvaluateAPITrustsTokenRoles(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	tr := u.send(t, http.DefaultClient, http.MethodPost, "/realms/acme/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}.Encode(), nil)
	var tb struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(tr.body), &tb))
	tok := tb.AccessToken
	require.NotEmpty(t, tok)
	require.NoError(t, u.s.store.Write("acme", func(rm *store.Realm) error {
		delete(rm.Users[rm.UserByName["alice"]].RoleIDs, rm.RoleByName[store.RoleRealmAdmin])
		return nil
	}))
	resp := u.send(t, http.DefaultClient, http.MethodPost, "/admin/realms/acme/clients/orders-api/authz/resource-server/policy/evaluate",
		"application/json", `{"username":"bob","resources":[{"name":"orders"}]}`, http.Header{"Authorization": {"Bearer " + tok}})
	require.Equal(t, http.StatusOK, resp.status, "documented token semantics (Keycloak): held until exp")
}

// TestWebUIUnauthenticatedStoresNothing: logins (wrong, right but
// without realm management), forged and foreign cookies, logouts without a
// session, pages of unknown realms: none may leave anything in the UI's
// state. 30 rounds try each realm kind ten times; each kind of request
// stores nothing or something at its first try.
func TestWebUIUnauthenticatedStoresNothing(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	base, _ := url.Parse(u.url + "/ui/realms/acme/home")
	good := c.Jar.Cookies(base)[0].Value
	for i := range 30 {
		b := u.browser()
		realm := []string{"acme", "other", fmt.Sprintf("r%d", i)}[i%3]
		u.login(b, realm, "alice", fmt.Sprintf("pw%d", i))
		u.login(b, realm, "bob", "bob-pw")
		forged := good[:len(good)-2] + fmt.Sprintf("%02d", i%100)
		b.Jar.SetCookies(base, []*http.Cookie{{Name: sessionCookie, Value: forged, Path: "/ui/realms/acme"}})
		u.do(b, http.MethodPost, "/ui/realms/"+realm+"/logout", url.Values{"csrf": {"x"}})
		u.do(b, http.MethodGet, "/ui/realms/"+realm+"/home", nil)
		u.do(b, http.MethodGet, "/ui/?realm="+realm, nil)
	}
	require.Zero(t, u.s.ui.loggedOut.total.Load())
	require.Zero(t, u.s.ui.loggedOut.realms.len())
}
