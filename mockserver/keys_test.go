package mockserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeededRSAKeysAreTheSeedsAndTheRealms: servers of one seed publish the
// same RSA key for a realm (the second one's from the memo of derived
// keys); another seed, or another realm, publishes another key.
func TestSeededRSAKeysAreTheSeedsAndTheRealms(t *testing.T) {
	t.Parallel()
	jwks := func(seed, realm string) string {
		s := mustNew(t, WithKeySeed(bytes.Repeat([]byte(seed), 32)), WithFixture(Fixture{Realms: []FixtureRealm{{Name: "acme"}}}))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/realms/"+realm+"/protocol/openid-connect/certs", nil))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		return w.Body.String()
	}
	first := jwks("m", "acme")
	require.Equal(t, first, jwks("m", "acme"), "the same seed and realm")
	require.NotEqual(t, first, jwks("n", "acme"), "another seed")
	require.NotEqual(t, first, jwks("m", "master"), "another realm")
}
