package pep_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// a-fix15 F3: a 401 whose challenge only blames the proof (or asks a
// nonce already used) and whose body is still arriving when the call's
// deadline passes is read as "unclear", and an unclear 401 refuses the
// token: the client's own valid DPoP token is retired (tokenExpired, every
// later call refused without being sent) because the gateway was slow,
// not because it refused the token. A body cut by the client's own
// deadline (or by a reset) is no answer about the token: the call should
// fail ErrUnavailable, and the token stay.
func TestAttackSlowNonceBodyRetiresToken(t *testing.T) {
	t.Parallel()
	signer := testkit.Must(dpop.GenerateKey())(t)
	var slow atomic.Bool
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		if !slow.Load() {
			faultOK(w)
			return
		}
		w.Header().Set("WWW-Authenticate", `DPoP algs="ES256", error="invalid_dpop_proof", error_description="iat too far in the future"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_dpop_proof","message":"the proof's iat is`))
		w.(http.Flusher).Flush()
		gatewaytest.Hold(r) // the rest of the body is late
	})
	rec := &recorder{}
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithEventHandler(rec.handle), pep.WithRetry(0, 0, 0),
		pep.WithHTTPClient(g.Client()))
	c.SetDPoPToken("dpop-bound-token", signer)
	require.True(t, checked(t, c, "orders", "read").Allowed())
	require.Equal(t, 1, c.Stats().CacheEntries)
	slow.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	d, err := c.Check(ctx, "orders", "write")
	if err == nil {
		err = d.Cause
	}
	t.Logf("the call's error: %v", err)
	require.Error(t, err)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "a body cut by the deadline refuses no token")
	assert.Equal(t, 1, c.Stats().CacheEntries, "the valid token's GRANT is not purged for a slow body")
	assert.Eventually(t, func() bool { return len(rec.kinds()) >= 1 }, time.Second, time.Millisecond)
	assert.NotContains(t, rec.kinds(), events.TokenExpired, "no tokenExpired for a slow body")
}
