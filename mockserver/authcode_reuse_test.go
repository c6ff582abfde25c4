package mockserver_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
)

// TestAReusedCodesRevocationOutlivesItsToken: a reused authorization code
// revokes the code's token at every replica for as long as the token can
// live, whatever the configuration says when the reuse comes (a-server10:
// the revocation lasted by the tokenLifetimeSeconds read at the reuse, so
// a token minted for an hour, its code reused after the lifetime was
// lowered to 5 minutes, was served again once the shared store expired the
// shorter record).
func TestAReusedCodesRevocationOutlivesItsToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	skew := time.Duration(0)
	store := &sharedStore{keys: map[string]time.Time{}}
	store.clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	f := startSharedFront(t, store, mockserver.WithFixture(webFixture()))

	admin := f.do("a", http.MethodPost, "/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"admin-secret"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, admin.Status, string(admin.Body))
	adminToken := admin.JSON(t)["access_token"].(string)
	setLifetime := func(secs string) {
		for _, r := range []string{"a", "b"} {
			res := f.do(r, http.MethodPatch, "/admin/config", "application/json", `{"tokenLifetimeSeconds":`+secs+`}`,
				http.Header{"Authorization": {"Bearer " + adminToken}})
			require.Equal(t, http.StatusOK, res.Status, "replica %s: %s", r, res.Body)
		}
	}
	setLifetime("3600")
	code := f.authCode("a", webRedirect)
	res := f.redeemCode("a", code)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	token := res.JSON(t)["access_token"].(string)
	require.Equal(t, http.StatusOK, f.bearerDecide("a", token).Status)

	setLifetime("300") // an operator shortens the lifetime of new tokens
	res = f.redeemCode("b", code)
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	require.Equal(t, http.StatusUnauthorized, f.bearerDecide("a", token).Status, "revoked by the reuse")

	// Redis expires the revocation record by its own clock: 10 minutes
	// later (the code's 60 s + 300 s + 60 s have passed), the token, valid
	// for an hour, is still live.
	mu.Lock()
	skew = 10 * time.Minute
	mu.Unlock()
	served := f.bearerDecide("a", token)
	require.Equal(t, http.StatusUnauthorized, served.Status,
		"the token revoked by the code's reuse is served again once the shorter revocation record expired: %s", served.Body)
}
