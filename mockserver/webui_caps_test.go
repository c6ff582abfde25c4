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

func newHugeUIServer(t *testing.T) *uiServer {
	t.Helper()
	return newUIServer(t, WithFixture(hugeFixture()))
}

// TestWebUIClientPageCapped: the client page shows at most maxUIRows
// resources and permissions, and says how many of each it left out.
func TestWebUIClientPageCapped(t *testing.T) {
	t.Parallel()
	u := newHugeUIServer(t)
	c := u.admin()
	p := u.do(c, http.MethodGet, "/ui/realms/acme/clients/huge-api", nil)
	require.Equal(t, http.StatusOK, p.status)
	t.Logf("client page: %d bytes, %d resources, %d permissions shown", len(p.body),
		strings.Count(p.body, "<tr><td>big-res-"), strings.Count(p.body, "<td>big-perm-"))
	require.LessOrEqual(t, strings.Count(p.body, "<tr><td>big-res-"), maxUIRows, "resources list past the 500-entry cap")
	require.LessOrEqual(t, strings.Count(p.body, "<td>big-perm-"), maxUIRows, "permissions list past the 500-entry cap")
	require.Equal(t, 2, strings.Count(p.body, "and 700 more not shown"), "each list says how many it left out")
}

// TestWebUIUserPageCapped: the user page's direct roles, groups and
// effective roles are each cut at maxUIRows, saying how many are left out.
func TestWebUIUserPageCapped(t *testing.T) {
	t.Parallel()
	u := newHugeUIServer(t)
	c := u.admin()
	p := u.do(c, http.MethodGet, "/ui/realms/acme/users/"+u.id("user", "hoarder"), nil)
	require.Equal(t, http.StatusOK, p.status)
	direct := strings.Count(p.body, `<span class="role">big-role-`)
	eff := strings.Count(p.body, `<td class="role-name">big-role-`)
	grp := strings.Count(p.body, "big-group-")
	t.Logf("user page: %d bytes, %d direct roles, %d effective roles, %d groups", len(p.body), direct, eff, grp)
	require.LessOrEqual(t, direct, maxUIRows, "direct roles past the cap")
	require.LessOrEqual(t, eff, maxUIRows, "effective roles past the cap")
	require.LessOrEqual(t, grp, maxUIRows, "groups past the cap")
	require.Equal(t, 3, strings.Count(p.body, "and 700 more not shown"), "each list says how many it left out")
}

// TestWebUIOrganizationRolesCapped: the organization page's linked roles
// are cut at maxUIRows, saying how many are left out.
func TestWebUIOrganizationRolesCapped(t *testing.T) {
	t.Parallel()
	u := newHugeUIServer(t)
	c := u.admin()
	p := u.do(c, http.MethodGet, "/ui/realms/acme/organizations/"+u.id("org", "huge"), nil)
	require.Equal(t, http.StatusOK, p.status)
	n := strings.Count(p.body, "big-role-")
	t.Logf("organization page: %d bytes, %d linked roles", len(p.body), n)
	require.LessOrEqual(t, n, maxUIRows, "linked roles past the cap")
	require.Contains(t, p.body, "and 700 more not shown")
}

// TestWebUIEvaluatorListsCapped: the evaluator's client choice names a
// few of each client's resources, not all; an evaluation of "*" shows at
// most maxUIRows pairs, says how many more it decided, and its decision
// is the whole request's.
func TestWebUIEvaluatorListsCapped(t *testing.T) {
	t.Parallel()
	u := newHugeUIServer(t)
	c := u.admin()
	p := u.do(c, http.MethodGet, "/ui/realms/acme/evaluate", nil)
	require.Equal(t, http.StatusOK, p.status)
	names := strings.Count(p.body, "big-res-")
	opts := strings.Count(p.body, `<option value="big-user-`)
	t.Logf("evaluator form: %d bytes, %d resource names in the client choice, %d of %d users offered", len(p.body), names, opts, hugeRows)
	csrf := csrfInput.FindStringSubmatch(p.body)[1]
	ev := u.do(c, http.MethodPost, "/ui/realms/acme/evaluate", url.Values{"csrf": {csrf}, "user": {"hoarder"},
		"client": {"huge-api"}, "resource": {"*"}, "scope": {"read"}})
	require.Equal(t, http.StatusOK, ev.status)
	pairs := strings.Count(ev.body, `<div class="pair">`)
	t.Logf("evaluation of *: %d bytes, %d pairs shown", len(ev.body), pairs)
	require.LessOrEqual(t, names, maxUIRows, "resource names in the client choice past the cap")
	require.LessOrEqual(t, pairs, maxUIRows, "pairs of an evaluation past the cap")
	require.Contains(t, ev.body, "and 700 more pairs decided, not shown")
	require.Contains(t, ev.body, `<span id="decision" class="grant">GRANT</span>`)
}

// TestWebUIEvaluatorSaysUsersLeftOut: the evaluator offers the first
// maxUIRows users and says how many it left out.
func TestWebUIEvaluatorSaysUsersLeftOut(t *testing.T) {
	t.Parallel()
	u := newHugeUIServer(t)
	c := u.admin()
	p := u.do(c, http.MethodGet, "/ui/realms/acme/evaluate", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Equal(t, maxUIRows, strings.Count(p.body, "<option value=\"")-strings.Count(p.body, "<option value=\"huge-api")-
		strings.Count(p.body, "<option value=\"orders-api")-len(evalMethods))
	require.Contains(t, p.body, "704 more", "the user list was cut at 500 without saying how many it left out")
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
// state.
func TestWebUIUnauthenticatedStoresNothing(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	base, _ := url.Parse(u.url + "/ui/realms/acme/home")
	good := c.Jar.Cookies(base)[0].Value
	for i := range 300 {
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
