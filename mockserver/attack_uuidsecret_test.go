package mockserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackUUIDShapedSecretIsRepeated (a-fix14): echoable repeats any
// value of a UUID's form (store.IsID: "ids are public"), whether or not
// the server ever assigned it: a rule by shape, which echo.go says decides
// nothing. A secret of that form is common -- `-admin-secret $(uuidgen)`,
// or a fixture client's secret exported from a Keycloak that generated
// UUID secrets -- and a PEP configured with its secret where its clientId
// goes, or a caller pasting it where an id goes, gets it back whole in the
// error string pep logs, and the audit that GET /admin/audit answers to
// the platform's operators keeps it whole (keep: the same rule). The same
// secret of another form is described ("(a value of 36 bytes, not
// repeated)"), as TestNoErrorRepeatsASecretOfTheServer asserts.
func TestAttackUUIDShapedSecretIsRepeated(t *testing.T) {
	t.Parallel()
	const adminSecret = "3f1c6a52-9b7e-4d2a-8c4f-1e2d3c4b5a69" // uuidgen's output: the platform admin's secret
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
