package mockserver_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
)

// The rule of these tests (boot.go): a token is served only by a process
// that can see every refusal that could apply to it, in every mix of
// processes, restarts and tenants.

// platformToken gets a platform-admin token from replica (the bootstrap
// client, secret "platform-secret").
func (f *restartFront) platformToken(replica string) string {
	f.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"platform-secret"}}
	res := f.do(replica, http.MethodPost, "/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
	return res.JSON(f.t)["access_token"].(string)
}

// provision provisions tenant name for adminEmail at replica and returns
// the provisioning's answer.
func (f *restartFront) provision(replica, name, adminEmail string) servertest.Result {
	f.t.Helper()
	return f.do(replica, http.MethodPost, "/admin/tenants", "application/json",
		`{"name":"`+name+`","plan":"free","adminEmail":"`+adminEmail+`"}`,
		http.Header{"Authorization": {"Bearer " + f.platformToken(replica)}})
}

// tenantAdmin provisions tenant name for adminEmail at replica and returns
// its id and a token of its administrator.
func (f *restartFront) tenantAdmin(replica, name, adminEmail string) (tenantID, token string) {
	f.t.Helper()
	res := f.provision(replica, name, adminEmail)
	require.Equal(f.t, http.StatusCreated, res.Status, string(res.Body))
	out := res.JSON(f.t)["result"].(map[string]any)
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {adminEmail},
		"password": {out["initialPassword"].(string)}}
	tok := f.do(replica, http.MethodPost, "/realms/"+name+"/protocol/openid-connect/token",
		"application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, tok.Status, string(tok.Body))
	return out["tenantId"].(string), tok.JSON(f.t)["access_token"].(string)
}

// decommission decommissions tenantID at replica.
func (f *restartFront) decommission(replica, tenantID string) {
	f.t.Helper()
	res := f.do(replica, http.MethodDelete, "/admin/tenants/"+tenantID, "", "",
		http.Header{"Authorization": {"Bearer " + f.platformToken(replica)}})
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
}

// orgs lists (GET) or creates (POST) organizations of realm at replica as
// token's holder.
func (f *restartFront) orgs(replica, method, realm, token string) servertest.Result {
	f.t.Helper()
	body, ctype := "", ""
	if method == http.MethodPost {
		body, ctype = `{"name":"Planted","alias":"planted"}`, "application/json"
	}
	return f.do(replica, method, "/admin/realms/"+realm+"/organizations", ctype, body,
		http.Header{"Authorization": {"Bearer " + token}})
}

// requireTenantRefused checks that replica refuses token at realm's
// organizations, read and write, with 401 invalid_token.
func (f *restartFront) requireTenantRefused(replica, realm, token, why string) {
	f.t.Helper()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		res := f.orgs(replica, method, realm, token)
		require.Equal(f.t, http.StatusUnauthorized, res.Status, "%s: %s %s", why, method, res.Body)
		require.Contains(f.t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`, why)
	}
}

// requireTenantServed checks that replica serves token realm's
// organizations.
func (f *restartFront) requireTenantServed(replica, realm, token, why string) {
	f.t.Helper()
	res := f.orgs(replica, http.MethodGet, realm, token)
	require.Equal(f.t, http.StatusOK, res.Status, "%s: %s", why, res.Body)
}

// scopeOptions are the options of every process of these tests: one key
// seed (so keys never refuse a token), an admin secret, and a shared store
// when store is not nil.
func scopeOptions(store *sharedStore) []mockserver.Option {
	opts := []mockserver.Option{mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithAdminSecret("platform-secret")}
	if store != nil {
		opts = append(opts, mockserver.WithReplayStore(store))
	}
	return opts
}

// TestTenantTokenIsServedOnlyByItsOwnTenant: a tenant's token is served by
// the tenant that minted it and by no other tenant of its name: not after
// the tenant was decommissioned and the name provisioned again (a restart
// in between, with or without a shared store; the decommission was the
// process's memory and the realm's key comes from the seed and the name),
// not by a re-provisioning after a restart without decommission (a new
// tenant), not by another replica that provisioned the name for itself;
// and one process never re-provisions a decommissioned name. Each new
// tenant serves its own administrator.
func TestTenantTokenIsServedOnlyByItsOwnTenant(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		store := func() *sharedStore {
			if shared {
				return &sharedStore{keys: map[string]time.Time{}}
			}
			return nil
		}
		name := map[bool]string{false: "without a shared store", true: "with a shared store"}[shared]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("decommissioned, restarted, provisioned again", func(t *testing.T) {
				t.Parallel()
				opts := scopeOptions(store())
				f := newRestartFront(t)
				f.start("a", opts...)
				id, old := f.tenantAdmin("a", "newco", "admin@old.example")
				f.requireTenantServed("a", "newco", old, "its own tenant")
				f.decommission("a", id)
				f.requireTenantRefused("a", "newco", old, "decommissioned")
				f.start("a", opts...)
				_, fresh := f.tenantAdmin("a", "newco", "admin@new.example")
				f.requireTenantRefused("a", "newco", old, "the decommissioned tenant's token at the next tenant of its name")
				f.requireTenantServed("a", "newco", fresh, "the new tenant's own administrator")
			})
			t.Run("restarted, provisioned again without decommission", func(t *testing.T) {
				t.Parallel()
				opts := scopeOptions(store())
				f := newRestartFront(t)
				f.start("a", opts...)
				_, old := f.tenantAdmin("a", "newco", "admin@newco.example")
				f.start("a", opts...)
				f.requireTenantRefused("a", "newco", old, "the tenant is gone with its process")
				_, fresh := f.tenantAdmin("a", "newco", "admin@newco.example") // the same administrator
				f.requireTenantRefused("a", "newco", old, "the earlier run's tenant's token at the new tenant")
				f.requireTenantServed("a", "newco", fresh, "the new tenant's own administrator")
			})
			t.Run("replicas provisioning the same name", func(t *testing.T) {
				t.Parallel()
				s := store()
				f := newRestartFront(t)
				f.start("a", scopeOptions(s)...)
				f.start("b", scopeOptions(s)...)
				_, byA := f.tenantAdmin("a", "newco", "admin@newco.example")
				_, byB := f.tenantAdmin("b", "newco", "admin@newco.example")
				f.requireTenantRefused("b", "newco", byA, "a's tenant's token at b's tenant of the name")
				f.requireTenantRefused("a", "newco", byB, "b's tenant's token at a's tenant of the name")
				f.requireTenantServed("a", "newco", byA, "a's own tenant")
				f.requireTenantServed("b", "newco", byB, "b's own tenant")
			})
			t.Run("one process", func(t *testing.T) {
				t.Parallel()
				f := newRestartFront(t)
				f.start("a", scopeOptions(store())...)
				id, old := f.tenantAdmin("a", "newco", "admin@old.example")
				f.decommission("a", id)
				res := f.provision("a", "newco", "admin@new.example")
				require.Equal(t, http.StatusConflict, res.Status, "a decommissioned name is not provisioned again: %s", res.Body)
				f.requireTenantRefused("a", "newco", old, "decommissioned")
			})
		})
	}
}

// TestTokenOfAProcessWithoutSharedStoreIsRefusedWithOne: a process with a
// shared store serves every replica's tokens that shares it, but never a
// token minted by a process whose refusals were its own memory: an earlier
// run without the store (a revocation there answered 200, and the token
// must stay refused; a token not revoked cannot be told apart), or a
// replica started without it. The process without the store refuses the
// others' tokens as before, and each serves its own.
func TestTokenOfAProcessWithoutSharedStoreIsRefusedWithOne(t *testing.T) {
	t.Parallel()
	t.Run("restart with a shared store", func(t *testing.T) {
		t.Parallel()
		f := newRestartFront(t)
		f.start("a", scopeOptions(nil)...)
		revoked, kept := f.passwordToken("a"), f.passwordToken("a")
		f.revoke("a", revoked)
		f.requireRevoked("a", revoked, "revoked before the restart")

		f.start("a", scopeOptions(&sharedStore{keys: map[string]time.Time{}})...)
		f.requireRevoked("a", revoked, "revoked by the run without a shared store")
		f.requireRevoked("a", kept, "minted by the run without a shared store")
		f.requireGrant("a", f.passwordToken("a"), "its own token")
	})
	t.Run("replicas with and without", func(t *testing.T) {
		t.Parallel()
		s := &sharedStore{keys: map[string]time.Time{}}
		f := newRestartFront(t)
		f.start("with", scopeOptions(s)...)
		f.start("peer", scopeOptions(s)...)
		f.start("without", scopeOptions(nil)...)
		with, without := f.passwordToken("with"), f.passwordToken("without")
		f.requireRevoked("with", without, "a token of the replica without the store, at one with it")
		f.requireRevoked("without", with, "a token of a replica with the store, at one without it")
		f.requireGrant("peer", with, "a token of a replica sharing the store")
		f.requireGrant("with", with, "its own token")
		f.requireGrant("without", without, "its own token")
	})
}
