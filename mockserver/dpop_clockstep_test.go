package mockserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestADPoPTokenIsIssuedAfterTheServersClockSteppedBack (a-fix11 F4): a
// clock that steps back after the server started (NTP correcting a host
// that booted ahead, or a test driving WithClock) must not make the realm
// verifiers refuse DPoP clients' fresh proofs as issued before they began:
// the server's tokens die with the process, so no proof dated before its
// start can be a replay of one it had not seen.
func TestADPoPTokenIsIssuedAfterTheServersClockSteppedBack(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Now().Add(10 * time.Minute)) // the host booted 10 minutes ahead
	srv := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithClock(clock.Now))
	key := newKey(t)
	signer := key.WithClock(clock.Now) // the client shares the server's clock
	res := servertest.DPoPToken(t, srv, signer, "")
	require.Equal(t, http.StatusOK, res.Status, "before the step: %s", res.Body)

	clock.Advance(-10 * time.Minute) // NTP steps it back to the true time
	res = servertest.DPoPToken(t, srv, signer, "")
	require.Equal(t, http.StatusOK, res.Status, "a fresh proof on the server's own clock: %s", res.Body)
}
