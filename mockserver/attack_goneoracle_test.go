package mockserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackDecommissionedTenantNameIsNoOracle (a-server14 F3): the error
// writers' knower (Server.publicName -> store.Store.PublicName) repeats a
// value when it is the name of any realm in the store, decommissioned ones
// included, on the premise that "realms are public (each answers its
// discovery document to anyone)". A decommissioned tenant's realm answers
// no discovery document: every route of it is the same 404 as a realm that
// never existed. Yet the 404's message names the former tenant's realm
// ("realm \"initech\"") and describes a name that never existed ("realm (a
// value of 7 bytes, not repeated)"), so any unauthenticated caller can
// test a list of company names and learn which were once tenants of the
// platform -- after they left, when nothing else tells. What should hold:
// an answer about a name that is not public now (not a live realm) is the
// same whether or not the name was ever used.
func TestAttackDecommissionedTenantNameIsNoOracle(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	platform := a.token("master", "service-account-platform-admin")
	res := a.doAs(platform, http.MethodPost, a.url+"/admin/tenants", map[string]any{"name": "initech", "plan": "free", "adminEmail": "root@initech.test"})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	var out struct {
		Result struct {
			TenantID string `json:"tenantId"`
		} `json:"result"`
	}
	res.into(t, &out)
	res = a.doAs(platform, http.MethodDelete, a.url+"/admin/tenants/"+out.Result.TenantID, nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))

	// Unauthenticated: the former tenant's name against one of the same
	// length that never was a tenant.
	for _, path := range []string{
		"/realms/%s/.well-known/openid-configuration",
		"/realms/%s/protocol/openid-connect/certs",
		"/.well-known/oauth-authorization-server/realms/%s",
		"/realms/%s/protocol/openid-connect/auth?client_id=x&redirect_uri=y",
	} {
		gone := a.doAs("", http.MethodGet, a.url+strings.Replace(path, "%s", "initech", 1), nil)
		never := a.doAs("", http.MethodGet, a.url+strings.Replace(path, "%s", "hooliXX", 1), nil)
		t.Logf("%s: gone %d %s | never %d %s", path, gone.Status, gone.Body, never.Status, never.Body)
		assert.Equal(t, never.Status, gone.Status, path)
		assert.Equal(t, strings.ReplaceAll(string(never.Body), "hooliXX", "initech"), string(gone.Body),
			"%s: the answer tells a former tenant from a name never used", path)
		assert.NotContains(t, string(gone.Body), "initech", "%s: the 404 names the decommissioned tenant", path)
	}
}
