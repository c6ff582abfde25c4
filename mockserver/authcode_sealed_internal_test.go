package mockserver

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestASealedCodeOpensToEverythingItStandsFor: a code sealed for replicas
// (-redis) opens to every field of what it stands for, so that no binding
// a kept code holds (scope, nonce, PKCE challenge, dpop_jkt, ...) is lost
// on the sealed path. Every field of authCode but spent (a kept code's
// state) is set here: a field added to authCode fails this test until
// sealCode and openCode carry it.
func TestASealedCodeOpensToEverythingItStandsFor(t *testing.T) {
	t.Parallel()
	authTime := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	c := &authCode{realm: "acme", clientID: "web", redirectURI: "https://app.test/cb", username: "alice",
		scope: "openid", scopeGiven: true, nonce: "n-1", challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", authTime: authTime, expires: authTime.Add(codeLifetime),
		lifetime: 300 * time.Second}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "spent" {
			require.False(t, v.Field(i).IsZero(), "authCode.%s is not set in this test: set it, and carry it in sealCode and openCode", name)
		}
	}
	key := derivedKey([]byte("seed"), labelCodeKey)
	got, id, ok := openCode(key, "acme", sealCode(key, c))
	require.True(t, ok)
	require.NotEmpty(t, id)
	require.True(t, got.authTime.Equal(c.authTime) && got.expires.Equal(c.expires))
	got.authTime, got.expires = c.authTime, c.expires // same instants; time.Unix gives another location
	require.Equal(t, c, got)
}
