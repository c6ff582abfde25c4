package dpop

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ed25519Proof builds a proof by hand, as oauth4webapi and openid-client do
// for an Ed25519 key: header and claims base64url-encoded, the signing
// input signed with ed25519.Sign, and the algorithm named alg.
func ed25519Proof(t testing.TB, alg string, key ed25519.PrivateKey, mutate func(h, c map[string]any)) string {
	t.Helper()
	h := map[string]any{"typ": "dpop+jwt", "alg": alg, "jwk": map[string]any{
		"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
	}}
	c := map[string]any{"jti": randomJTI(), "htm": "GET", "htu": testURL, "iat": testNow.Unix(), "ath": TokenHash(testToken)}
	if mutate != nil {
		mutate(h, c)
	}
	input := base64.RawURLEncoding.EncodeToString(mustJSON(t, h)) + "." + base64.RawURLEncoding.EncodeToString(mustJSON(t, c))
	return input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(input)))
}

// TestVerifyAcceptsEd25519AlgorithmName: the Verifier accepts Ed25519 keys
// under both names, "EdDSA" and the fully-specified "Ed25519" of RFC 9864,
// and the proof binds the same key thumbprint either way. It refused
// "Ed25519" as an algorithm not allowed.
func TestVerifyAcceptsEd25519AlgorithmName(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	key := testEd
	jkt := thumbprintOf(t, key.Public())
	v := newVerifierAt(t, testNow)
	req := func(proof string) Request {
		return Request{Proofs: []string{proof}, Method: "GET", URL: testURL, AccessToken: testToken, JKT: jkt}
	}
	for _, alg := range []string{"Ed25519", "EdDSA"} {
		res, err := v.Verify(t.Context(), req(ed25519Proof(t, alg, key, nil)))
		require.NoError(t, err, alg)
		require.Equal(t, alg, res.Algorithm)
		require.Equal(t, jkt, res.Thumbprint)
		require.Equal(t, ed25519.PublicKey(key.Public().(ed25519.PublicKey)), res.PublicKey)
	}
	require.Contains(t, v.Algorithms(), "Ed25519")
	require.Contains(t, v.Algorithms(), "EdDSA")
}

// TestVerifyRejectsBadEd25519Proofs: the hand-checked signature path fails
// closed like go-jose's.
func TestVerifyRejectsBadEd25519Proofs(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	key := testEd
	_, other, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	jkt := thumbprintOf(t, key.Public())
	good := ed25519Proof(t, "Ed25519", key, nil)
	flip := func(proof string) string {
		i := strings.LastIndexByte(proof, '.')
		sig := unbase64(t, proof[i+1:])
		sig[0] ^= 1
		return proof[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
	}
	// truncate drops the signature's last 6 bytes, encoded canonically:
	// a well-formed signature of the wrong length.
	truncate := func(proof string) string {
		i := strings.LastIndexByte(proof, '.')
		sig := unbase64(t, proof[i+1:])
		return proof[:i+1] + base64.RawURLEncoding.EncodeToString(sig[:len(sig)-6])
	}
	signedByOther := func() string {
		// The header names key; the signature is other's.
		input := good[:strings.LastIndexByte(good, '.')]
		return input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(other, []byte(input)))
	}
	tests := []struct {
		name  string
		proof string
		want  error
	}{
		{"signature flipped", flip(good), ErrSignature},
		{"signed by another key", signedByOther(), ErrSignature},
		{"signature truncated", truncate(good), ErrSignature},
		{"RSA key named Ed25519", forgeSign(t, "RS256", testRSA, mustJSON(t, map[string]any{"typ": "dpop+jwt", "alg": "Ed25519",
			"jwk": publicJWKMap(t, testRSA.Public())}), mustJSON(t, map[string]any{"jti": "j", "htm": "GET", "htu": testURL, "iat": testNow.Unix()})), ErrKey},
		{"wrong method", ed25519Proof(t, "Ed25519", key, func(_, c map[string]any) { c["htm"] = "POST" }), ErrMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifierAt(t, testNow)
			_, err := v.Verify(t.Context(), Request{Proofs: []string{tt.proof}, Method: "GET", URL: testURL, AccessToken: testToken, JKT: jkt})
			requireOnly(t, err, tt.want)
		})
	}

	t.Run("replayed", func(t *testing.T) {
		t.Parallel()
		v := newVerifierAt(t, testNow)
		r := Request{Proofs: []string{good}, Method: "GET", URL: testURL, AccessToken: testToken, JKT: jkt}
		verified(t, v, r)
		_, err = v.Verify(t.Context(), r)
		requireOnly(t, err, ErrReplay)
	})
}
