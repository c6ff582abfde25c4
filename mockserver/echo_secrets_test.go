package mockserver

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoErrorRepeatsASecretOfTheServer (a-fix13c F1): every secret the
// server makes has an identifier's shape -- the platform admin's client
// secret (randomSecret(24): 32 bytes of base64url), a tenant's initial
// password (randomSecret(18)), an authorization code -- and so may a
// user's password. The rule that repeated any well-shaped value gave each
// back, word for word, to a PEP configured with its secret where its
// clientId should be: `clientId: unknown client "j_efXXrzpM2zQE9l..."`,
// and pep puts that message into the error string applications log. Each
// secret is sent as a decision's clientId, an AuthZEN subject id and
// resource type, an organization alias and a query parameter's name: no
// answer repeats it, and the decision's message says how long it was.
func TestNoErrorRepeatsASecretOfTheServer(t *testing.T) {
	t.Parallel()
	const redirect = "https://app.test/cb"
	const password = "Xq7_vLm2-RtZ9pWk4sNb8cJd" // a user's password, of an identifier's shape
	fx := orgFixture()
	fx.Realms[0].Users = append(fx.Realms[0].Users, FixtureUser{Username: "erin", Password: password})
	fx.Realms[0].Clients = append(fx.Realms[0].Clients, FixtureClient{ClientID: "web", Public: true, RedirectURIs: []string{redirect}})
	// No WithAdminSecret: the server generates the platform admin's secret.
	a := newOrgAPIWith(t, WithFixture(fx))
	s := a.s
	a.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	pep := a.token("acme", "service-account-orders-api")

	adminSecret := s.AdminSecret()
	require.Len(t, adminSecret, 32)

	// A tenant's initial password, as its provisioning answers it once.
	platform := a.sendRaw("", http.MethodPost, a.url+"/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {adminSecret}}.Encode())
	require.Equal(t, http.StatusOK, platform.Status, string(platform.Body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	platform.into(t, &tok)
	tenant := a.doAs(tok.AccessToken, http.MethodPost, a.url+"/admin/tenants", `{"name":"initech","plan":"free","adminEmail":"boss@initech.test"}`)
	require.Equal(t, http.StatusCreated, tenant.Status, string(tenant.Body))
	var created struct {
		Result struct {
			InitialPassword string `json:"initialPassword"`
		} `json:"result"`
	}
	tenant.into(t, &created)
	initial := created.Result.InitialPassword
	require.NotEmpty(t, initial)

	// An authorization code, unredeemed.
	login := a.sendRaw("", http.MethodPost, a.url+"/realms/acme/protocol/openid-connect/auth", "application/x-www-form-urlencoded",
		url.Values{"response_type": {"code"}, "client_id": {"web"}, "redirect_uri": {redirect},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
			"username": {"erin"}, "password": {password}}.Encode())
	require.Equal(t, http.StatusFound, login.Status, string(login.Body))
	loc, err := url.Parse(login.Header.Get("Location"))
	require.NoError(t, err)
	code := loc.Query().Get("code")
	require.NotEmpty(t, code, loc.String())
	org := a.createOrg("Acme", "acme")
	dept := a.createDept(org, "", "Sales", "sales")

	secrets := []struct{ name, secret string }{
		{"the platform admin's client secret", adminSecret},
		{"a tenant's initial password", initial},
		{"an authorization code", code},
		{"a user's password", password},
	}
	for _, tc := range secrets {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.secret
			// Short enough to be repeated were it known; the password has an
			// identifier's shape always, a random secret most of the time
			// (one that starts with '-' or '_' has not).
			require.LessOrEqual(t, len(v), maxEcho)
			require.True(t, identifierShape(password))
			check := func(where string, r *apiResp, status int) {
				t.Helper()
				require.Equal(t, status, r.Status, "%s: %s", where, redactedURL(string(r.Body), v))
				assert.NotContains(t, string(r.Body), v, "%s: the answer repeats the secret", where)
				for name, vals := range r.Header {
					assert.NotContains(t, strings.Join(vals, " "), v, "%s: header %s repeats the secret", where, name)
				}
			}
			decide := a.doAs(pep, http.MethodPost, a.url+"/realms/acme/authorization-decision-provider/authorize",
				`{"clientId":"`+v+`","resources":[{"name":"orders"}],"context":{}}`)
			check("a decision's clientId", decide, http.StatusBadRequest)
			assert.Contains(t, string(decide.Body), "unknown client (a value of "+strconv.Itoa(len(v))+" bytes, not repeated)")
			check("an AuthZEN subject id", a.doAs(pep, http.MethodPost, a.url+"/realms/acme/access/v1/evaluation",
				`{"subject":{"type":"user","id":"`+v+`"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"}}`), http.StatusOK)
			check("an AuthZEN resource type", a.doAs(pep, http.MethodPost, a.url+"/realms/acme/access/v1/evaluation",
				`{"subject":{"type":"user","id":"bob"},"action":{"name":"read"},"resource":{"type":"`+v+`","id":"1"}}`), http.StatusOK)
			check("an AuthZEN action", a.doAs(pep, http.MethodPost, a.url+"/realms/acme/access/v1/evaluation",
				`{"subject":{"type":"user","id":"bob"},"action":{"name":"`+v+`"},"resource":{"type":"orders","id":"1"}}`), http.StatusOK)
			check("an organization alias", a.doAs(a.admin, http.MethodGet, "/alias/"+v, nil), http.StatusNotFound)
			check("an organization id", a.doAs(a.admin, http.MethodGet, "/"+v, nil), http.StatusNotFound)
			check("a query parameter's name", a.doAs(a.admin, http.MethodGet, a.base+"?offset=0&"+v+"=1;", nil), http.StatusBadRequest)
			check("a member's name", a.doAs(pep, http.MethodPost, a.url+"/realms/acme/authorization-decision-provider/authorize",
				`{"clientId":"orders-api","resources":[{"name":"orders"}],"context":{"attributes":{"`+v+`":"x"}}}`), http.StatusBadRequest)
			check("an unrouted path", a.doAs(a.admin, http.MethodGet, a.url+"/admin/realms/acme/"+v, nil), http.StatusNotFound)
			// A preflight's 403 and the router's 404 and 405 name the
			// path's realm, the Origin and the method (a-server14 F1,
			// TestAttackPreflightRefusalRepeatsNoSecret).
			preflight := http.Header{"Origin": {"https://" + v + ".test"}, "Access-Control-Request-Method": {"POST"}}
			for _, path := range []string{"/realms/" + v + "/protocol/openid-connect/token", "/admin/realms/" + v + "/organizations",
				"/realms/" + v + "/authorization-decision-provider/authorize", "/realms/acme/protocol/openid-connect/token"} {
				check("a preflight of "+redactedURL(path, v), a.sendHeader(t, http.MethodOptions, a.url+path, "", preflight), http.StatusForbidden)
			}
			check("a method on a route", a.sendHeader(t, v, a.url+"/admin/health", "", http.Header{}), http.StatusMethodNotAllowed)
			check("a method on no route", a.sendHeader(t, v, a.url+"/admin/realms/acme/organizations/x/y/z", "", http.Header{}), http.StatusNotFound)
			// Refused admin calls, audited with the id they named
			// (a-server14 F2, TestAttackAuditRecordHoldsNoSecret; the audit
			// is read below).
			check("a deleted organization's id", a.doAs(a.admin, http.MethodDelete, "/"+url.PathEscape(v), nil), http.StatusNotFound)
			check("an assignment's userId", a.doAs(a.admin, http.MethodPost, "/"+org+"/departments/"+dept+"/users", map[string]string{"userId": v}), http.StatusNotFound)
		})
	}
	// The audit keeps or repeats request data by the errors' rule: the
	// platform's operators, who read it, see no tenant's secret, nor its
	// first bytes (a-server14 F2).
	audit := a.doAs(tok.AccessToken, http.MethodGet, a.url+"/admin/audit?count=100", nil)
	require.Equal(t, http.StatusOK, audit.Status, string(audit.Body))
	require.Contains(t, string(audit.Body), `"resourceId":"`+org+`"`, "the audit keeps the ids the server assigned")
	for _, tc := range secrets {
		assert.NotContains(t, string(audit.Body), tc.secret[:16], "%s: the audit holds it", tc.name)
	}
	assert.Contains(t, string(audit.Body), `"resourceId":"(a value of `+strconv.Itoa(len(password))+` bytes, not repeated)"`)
}

// TestNoErrorRepeatsAUUIDShapedSecret (a-fix14 F2): echoable repeated any
// value of a UUID's form (store.IsID: "ids are public"), whether or not
// the server ever assigned it: a rule by shape, which echo.go says decides
// nothing. An id is repeated or kept only while the caller's realm holds
// its object (Realm.TryHoldsID). A secret of that form is common -- `-admin-secret $(uuidgen)`,
// or a fixture client's secret exported from a Keycloak that generated
// UUID secrets -- and a PEP configured with its secret where its clientId
// goes, or a caller pasting it where an id goes, gets it back whole in the
// error string pep logs, and the audit that GET /admin/audit answers to
// the platform's operators keeps it whole (keep: the same rule). The same
// secret of another form is described ("(a value of 36 bytes, not
// repeated)"), as TestNoErrorRepeatsASecretOfTheServer asserts.
func TestNoErrorRepeatsAUUIDShapedSecret(t *testing.T) {
	t.Parallel()
	const adminSecret = "3f1c6a52-9b7e-4d2a-8c4f-1e2d3c4b5a69"  // uuidgen's output: the platform admin's secret
	const clientSecret = "a7d2e9f0-41b3-4c8e-9f6a-2b5c8d1e4f70" // a fixture client's secret, Keycloak-exported
	fx := orgFixture()
	fx.Realms[0].Clients = append(fx.Realms[0].Clients, FixtureClient{ClientID: "legacy-api", Secret: clientSecret})
	a := newOrgAPIWith(t, WithFixture(fx), WithAdminSecret(adminSecret))
	pep := a.token("acme", "service-account-orders-api")

	// The secrets are the server's credentials: the premise.
	platform := a.sendRaw("", http.MethodPost, a.url+"/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {adminSecret}}.Encode())
	require.Equal(t, http.StatusOK, platform.Status, string(platform.Body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	platform.into(t, &tok)
	legacy := a.sendRaw("", http.MethodPost, a.url+"/realms/acme/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"legacy-api"}, "client_secret": {clientSecret}}.Encode())
	require.Equal(t, http.StatusOK, legacy.Status, string(legacy.Body))

	for _, secret := range []string{adminSecret, clientSecret} {
		check := func(where string, r *apiResp, status int) {
			t.Helper()
			require.Equal(t, status, r.Status, "%s", where)
			assert.NotContains(t, string(r.Body), secret, "%s: the answer repeats the secret: %s", where, r.Body)
		}
		// A PEP configured with its secret as its clientId (pep.New(url,
		// realm, secret)): the decision's 400.
		check("a decision's clientId", a.doAs(pep, http.MethodPost, a.url+"/realms/acme/authorization-decision-provider/authorize",
			`{"clientId":"`+secret+`","resources":[{"name":"orders"}],"context":{}}`), http.StatusBadRequest)
		check("an organization id", a.doAs(a.admin, http.MethodGet, "/"+secret, nil), http.StatusNotFound)
		check("an assignment's user", a.doAs(a.admin, http.MethodGet, a.url+"/admin/realms/acme/organizations/users/"+secret+"/assignments", nil), http.StatusNotFound)
		check("a deleted organization's id", a.doAs(a.admin, http.MethodDelete, "/"+secret, nil), http.StatusNotFound)
		check("an unrouted path", a.doAs(a.admin, http.MethodGet, a.url+"/admin/realms/acme/"+secret, nil), http.StatusNotFound)
		// A PEP configured with its secret as the realm, no token yet:
		// the challenge's realm parameter (challengeRealm: keep).
		unauth := a.sendHeader(t, http.MethodPost, a.url+"/realms/"+secret+"/authorization-decision-provider/authorize", "{}",
			http.Header{"Content-Type": {"application/json"}})
		require.Equal(t, http.StatusUnauthorized, unauth.Status)
		assert.NotContains(t, strings.Join(unauth.Header.Values("WWW-Authenticate"), " "), secret, "the challenge's realm repeats the secret")
	}
	// The audit keeps what a refused call named by the same rule: the
	// platform's operators read both secrets there.
	audit := a.doAs(tok.AccessToken, http.MethodGet, a.url+"/admin/audit?count=100", nil)
	require.Equal(t, http.StatusOK, audit.Status, string(audit.Body))
	for _, secret := range []string{adminSecret, clientSecret} {
		assert.False(t, strings.Contains(string(audit.Body), secret), "the audit keeps the secret %s: %s", secret, audit.Body)
	}
}
