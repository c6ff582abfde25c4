package redisstore

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestReferenceServerRefusesForGoodWhatANewKeyspaceCannotVouchFor: the
// reference server on a ReplayStore whose Redis lost its keys (flushed,
// as after a restart without persistence; a new keyspace alike) can never
// serve a token issued before, nor one issued within the clocks' minute
// after: the store cannot vouch that no replica revoked it. Such a token
// is refused for good, 401 invalid_token (get a new one), not 503 with
// "Retry-After: 1" (a retry that can never pass, a PEP's breaker open for
// the token's lifetime); and the token endpoint does not hand out a token
// no replica would serve: 503 with the Retry-After after which a new one
// is served. Once the keyspace vouches for tokens issued now (here an
// operator's marker stands for the minute passing), a new token is served.
func TestReferenceServerRefusesForGoodWhatANewKeyspaceCannotVouchFor(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client()
	const prefix = "refuse8:"
	base, _ := inProcess(t, NewReplayStore(c, prefix), "refuse8-seed-0123456789abcdefghij", acmeFixture)
	vouchFromAnHourAgo := func() { // an operator's bare marker
		require.NoError(t, c.Set(t.Context(), prefix+SinceKey, strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10), 0).Err())
	}
	tokenCall := func() (int, http.Header, []byte) {
		return frontCall(t, base, http.MethodPost, tokenPath, nil, "application/x-www-form-urlencoded", aliceForm.Encode())
	}
	decide := func(token string) (int, http.Header, []byte) {
		return frontCall(t, base, http.MethodPost, decidePath, http.Header{"Authorization": {"Bearer " + token}}, "application/json",
			`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	}

	// A new keyspace: the first call begins it now.
	status, h, body := tokenCall()
	require.Equal(t, http.StatusServiceUnavailable, status, "a token no replica would serve is not handed out: %s", body)
	require.Equal(t, "61", h.Get("Retry-After"))

	vouchFromAnHourAgo()
	old := aliceToken(t, base)
	status, _, body = decide(old)
	require.Equal(t, http.StatusOK, status, string(body))

	require.NoError(t, c.FlushDB(t.Context()).Err()) // Redis lost its keys
	status, h, body = decide(old)
	require.Equal(t, http.StatusUnauthorized, status, "a token older than the keyspace is refused for good: %s", body)
	require.Contains(t, h.Get("WWW-Authenticate"), `error="invalid_token"`)
	require.Empty(t, h.Get("Retry-After"))
	require.Contains(t, string(body), "get a new one")
	status, h, body = tokenCall()
	require.Equal(t, http.StatusServiceUnavailable, status, "within the minute after the loss: %s", body)
	require.Equal(t, "61", h.Get("Retry-After"))

	vouchFromAnHourAgo() // stands for the minute passing
	status, body2 := decideAt(t, base, aliceToken(t, base))
	require.Equal(t, http.StatusOK, status, "the new token is served: %s", body2)
}
