package mockserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestAnOrganizationLimitedTokenIsToldOfThatOrganizationOnly: a token
// limited to one organization (claim `organization`) counts only that
// organization's assignments at /authorize, and get-organizations, the
// context a PEP reads (pep.Client.Organizations), names that organization
// alone; a claim that names none gets none (a-server10: it listed every
// organization the user is assigned in, with their departments).
func TestAnOrganizationLimitedTokenIsToldOfThatOrganizationOnly(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixtureFile("../examples/fixtures/acme.json"))
	path := "/realms/acme/authorization-decision-provider/get-organizations"

	// The decision side honours the claim: carol limited to Acme EU has no US roles.
	eu := srv.Token("acme", "carol", mockserver.TokenOrganization("acme-eu"))
	_, got := decide(t, srv, eu, allPairs, `{"attributes":{"method":"DELETE"}}`)
	require.Contains(t, got, "orders/delete=DENY", "the EU-limited token does not count carol's US assignment")

	tenants := func(token string) []string {
		res := bearerCall(t, srv, http.MethodPost, path, token, `{"clientId":"orders-api"}`)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		var out struct {
			Organization struct {
				Tenants []struct {
					TenantName string `json:"tenantName"`
				} `json:"tenants"`
			} `json:"organization"`
		}
		require.NoError(t, json.Unmarshal(res.Body, &out))
		names := []string{}
		for _, tn := range out.Organization.Tenants {
			names = append(names, tn.TenantName)
		}
		return names
	}
	require.Equal(t, []string{"Acme EU", "Acme US"}, tenants(srv.Token("acme", "carol")), "no claim: every organization")
	require.Equal(t, []string{"Acme EU"}, tenants(eu), "a token limited to Acme EU")
	require.Empty(t, tenants(srv.Token("acme", "carol", mockserver.TokenOrganization("nowhere"))), "a claim naming no organization")
}
