package redisstore

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The promise of these tests: a token is served only by a process that can
// see every refusal that could apply to it, in every mix of processes with
// and without a shared store (mockserver's boot.go), against a real Redis.

// scopeSeed is the key seed of every process of these tests: the realms'
// keys outlive each process, so only the refusal scope can refuse.
const scopeSeed = "refusal-scope-seed-0123456789abcdef"

// scopeServer starts an in-process reference server (the acme fixture, the
// seed, the admin secret and, when store is not nil, the shared store).
func scopeServer(t *testing.T, store *ReplayStore) (string, func()) {
	t.Helper()
	return inProcess(t, store, scopeSeed, mockserver.WithAdminSecret("platform-secret"), acmeFixture)
}

// oldKeyspace returns a shared store on a fresh Redis whose keyspace
// vouches for the last hour, as a long-running deployment's does.
func oldKeyspace(t *testing.T, prefix string) *ReplayStore {
	t.Helper()
	c := redistest.Start(t).Client()
	settled(t, c, prefix)
	return NewReplayStore(c, prefix)
}

// provisionAt provisions tenant name for adminEmail at base and returns
// its tenant id and a token of its admin.
func provisionAt(t *testing.T, base, name, adminEmail string) (tenantID, adminToken string) {
	t.Helper()
	platform := tokenAt(t, base, "master", nil, url.Values{"grant_type": {"client_credentials"},
		"client_id": {"platform-admin"}, "client_secret": {"platform-secret"}})
	status, _, body := frontCall(t, base, http.MethodPost, "/admin/tenants", http.Header{"Authorization": {"Bearer " + platform}},
		"application/json", `{"name":"`+name+`","plan":"free","adminEmail":"`+adminEmail+`"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	var out struct {
		Result struct {
			TenantID        string `json:"tenantId"`
			InitialPassword string `json:"initialPassword"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	adminToken = tokenAt(t, base, name, nil, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {adminEmail}, "password": {out.Result.InitialPassword}})
	return out.Result.TenantID, adminToken
}

// decommissionAt decommissions tenantID at base.
func decommissionAt(t *testing.T, base, tenantID string) {
	t.Helper()
	platform := tokenAt(t, base, "master", nil, url.Values{"grant_type": {"client_credentials"},
		"client_id": {"platform-admin"}, "client_secret": {"platform-secret"}})
	status, _, body := frontCall(t, base, http.MethodDelete, "/admin/tenants/"+tenantID,
		http.Header{"Authorization": {"Bearer " + platform}}, "", "")
	require.Equal(t, http.StatusOK, status, string(body))
}

// newcoOrgs lists (GET) or creates (POST) organizations of realm newco at
// base with token, and returns the status and body.
func newcoOrgs(t *testing.T, base, method, token string) (int, string) {
	t.Helper()
	body, ctype := "", ""
	if method == http.MethodPost {
		body, ctype = `{"name":"Planted","alias":"planted"}`, "application/json"
	}
	status, _, b := frontCall(t, base, method, "/admin/realms/newco/organizations",
		http.Header{"Authorization": {"Bearer " + token}}, ctype, body)
	return status, string(b)
}

// TestDecommissionedTenantTokenIsRefusedByTheNextTenantOfItsName (a-server8
// #1): with -redis and -key-seed, tenant newco of one customer is
// decommissioned after its admin signed in; after a restart the name is
// provisioned for another customer. The first customer's admin token must
// be refused there (it listed and created the new customer's
// organizations as realm-admin), while the new admin's is served.
func TestDecommissionedTenantTokenIsRefusedByTheNextTenantOfItsName(t *testing.T) {
	t.Parallel()
	store := oldKeyspace(t, "scope-tenant:")
	base1, stop1 := scopeServer(t, store)
	tenantID, oldAdmin := provisionAt(t, base1, "newco", "admin@old.example")
	status, body := newcoOrgs(t, base1, http.MethodGet, oldAdmin)
	require.Equal(t, http.StatusOK, status, body)
	decommissionAt(t, base1, tenantID)
	status, body = newcoOrgs(t, base1, http.MethodGet, oldAdmin)
	require.Equal(t, http.StatusUnauthorized, status, "decommissioned: %s", body)
	stop1()

	base2, _ := scopeServer(t, store) // the restart
	_, newAdmin := provisionAt(t, base2, "newco", "admin@new.example")
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		status, body := newcoOrgs(t, base2, method, oldAdmin)
		require.Equal(t, http.StatusUnauthorized, status, "%s with the decommissioned tenant's admin token: %s", method, body)
	}
	status, body = newcoOrgs(t, base2, http.MethodGet, newAdmin)
	require.Equal(t, http.StatusOK, status, "the new tenant's own admin: %s", body)
}

// TestTokenRevokedWithoutSharedStoreStaysRefusedWithIt (a-server8 #2): a
// token revoked (RFC 7009, 200) at a -key-seed server without -redis must
// stay refused by the next run of the same server with -redis, which
// cannot see that revocation; so must the tokens of that run that were not
// revoked, which it cannot tell apart. Its own tokens it serves.
func TestTokenRevokedWithoutSharedStoreStaysRefusedWithIt(t *testing.T) {
	t.Parallel()
	store := oldKeyspace(t, "scope-boot:")
	base1, stop1 := scopeServer(t, nil)
	bob := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob"}}
	revoked, kept := tokenAt(t, base1, "acme", nil, bob), tokenAt(t, base1, "acme", nil, bob)
	status, body := revokeAt(t, base1, revoked)
	require.Equal(t, http.StatusOK, status, body)
	status, body = decideAt(t, base1, revoked)
	require.Equal(t, http.StatusUnauthorized, status, "revoked: %s", body)
	stop1()

	base2, _ := scopeServer(t, store) // the next run, now with -redis
	status, body = decideAt(t, base2, revoked)
	require.Equal(t, http.StatusUnauthorized, status, "revoked (200) by the previous run without -redis: %s", body)
	status, body = decideAt(t, base2, kept)
	require.Equal(t, http.StatusUnauthorized, status, "minted by the previous run without -redis: %s", body)
	status, body = decideAt(t, base2, tokenAt(t, base2, "acme", nil, bob))
	require.Equal(t, http.StatusOK, status, "its own token: %s", body)
}
