package mockserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
)

// TestReusedCodesSharedRecordLastsAsLongAsItsToken (a-server10b): with a
// shared store (-redis), a code is sealed (no per-user or per-realm bound
// holds it) and a reused one writes its token's revocation to the store
// for the code's minute plus a whole day (store.MaxTokenLifetimeSeconds),
// though the token, minted with the default 300 s lifetime, is dead after
// five minutes. One signed-in user repeating sign-in, redeem, redeem again
// leaves a day-long key per cycle in the shared store (noeviction Redis:
// once its maxmemory is reached every replica's writes fail, and every
// caller's DPoP proofs, revocations and code redemptions with them).
func TestReusedCodesSharedRecordLastsAsLongAsItsToken(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(webFixture()))
	const cycles = 50
	for i := range cycles {
		code := f.authCode("a", webRedirect)
		res := f.redeemCode("a", code)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		res = f.redeemCode("b", code)
		require.Equal(t, http.StatusBadRequest, res.Status, "cycle %d: %s", i, res.Body)
	}
	// Every token these cycles minted expires within 300 s (and the
	// clocks' margin): nothing of theirs need outlive an hour.
	horizon := time.Now().Add(time.Hour)
	store.mu.Lock()
	longLived := 0
	for _, until := range store.keys {
		if until.After(horizon) {
			longLived++
		}
	}
	store.mu.Unlock()
	require.Zero(t, longLived,
		"%d shared-store keys outlive every token of theirs by most of a day (one per reused code)", longLived)
}
