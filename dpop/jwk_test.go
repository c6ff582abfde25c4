package dpop

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSignerAndDefaultVerifierShareTheRSABound: a Signer signs with RSA
// keys of up to DefaultMaxRSABits, the bound of a Verifier made without
// WithMaxRSABits, so no Signer makes proofs every default Verifier
// refuses. A 4,096-bit key signs and a default Verifier accepts its
// proof; NewSigner refuses a 4,608-bit key, saying which keys it takes
// (it took keys up to 8,192 bits, whose proofs a default Verifier
// refuses), while a proof made with that key by another signer is still
// refused by a default Verifier, as a key error naming WithMaxRSABits,
// and accepted by one made with WithMaxRSABits(8192). The keys are fixed
// test keys: generating them takes seconds.
func TestSignerAndDefaultVerifierShareTheRSABound(t *testing.T) {
	t.Parallel()
	t.Run("at the bound", func(t *testing.T) {
		t.Parallel()
		key := readRSAKey(t, "testdata/rsa4096-test-key.pem", DefaultMaxRSABits)
		s := mustSigner(t, key).WithClock(fixedClock(testNow))
		proof := proofOf(t, s, "GET", testURL, testToken, "")
		req := Request{Proofs: []string{proof}, Method: "GET", URL: testURL, AccessToken: testToken, JKT: s.Thumbprint()}
		res, err := newTestVerifier(t).Verify(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, "PS256", res.Algorithm)
		require.Equal(t, s.Thumbprint(), res.Thumbprint)
	})

	t.Run("over the bound", func(t *testing.T) {
		t.Parallel()
		key := readRSAKey(t, "testdata/rsa4608-test-key.pem", 4608)
		_, err := NewSigner(key)
		require.ErrorContains(t, err, "rsa key of 4608 bits: want 2048 to 4096 bits (DefaultMaxRSABits")
		require.ErrorContains(t, err, "or a P-256 or Ed25519 key")

		h := map[string]any{"typ": "dpop+jwt", "alg": "PS256", "jwk": publicJWKMap(t, key.Public())}
		c := map[string]any{"jti": randomJTI(), "htm": "GET", "htu": testURL, "iat": testNow.Unix()}
		proof := forgeSign(t, "PS256", key, mustJSON(t, h), mustJSON(t, c))
		req := Request{Proofs: []string{proof}, Method: "GET", URL: testURL}
		_, err = newTestVerifier(t).Verify(t.Context(), req)
		require.ErrorIs(t, err, ErrKey, "over the default bound")
		require.ErrorContains(t, err, "WithMaxRSABits")
		res, err := newTestVerifier(t, WithMaxRSABits(8192)).Verify(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, "PS256", res.Algorithm)
	})
}

// TestVerifyRejectsSmallOrderEd25519Keys: an Ed25519 "key" of small order
// verifies signatures nobody made with a private key (for the neutral
// point, R = the neutral point and S = 0 verify for every message); it is
// no key.
func TestVerifyRejectsSmallOrderEd25519Keys(t *testing.T) {
	t.Parallel()
	forged := make([]byte, 64)
	forged[0] = 1 // R: the encoding of the neutral point; S: 0
	for weak := range weakEd25519Keys {
		h := map[string]any{"typ": "dpop+jwt", "alg": "EdDSA", "jwk": map[string]any{
			"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(weak[:])}}
		c := map[string]any{"jti": randomJTI(), "htm": "GET", "htu": testURL, "iat": testNow.Unix()}
		proof := forgeSign(t, "none", nil, mustJSON(t, h), mustJSON(t, c)) + base64.RawURLEncoding.EncodeToString(forged)
		_, err := newTestVerifier(t).Verify(t.Context(), Request{Proofs: []string{proof}, Method: "GET", URL: testURL})
		requireOnly(t, err, ErrKey)
	}
}
