package dpop

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerifyAcceptsRSAKeysUpToTheSignersBound: a Signer signs with RSA keys
// of up to 8,192 bits (maxRSABits), and a Verifier made with
// WithMaxRSABits(8192) accepts their proofs; one made without refuses a
// key over DefaultMaxRSABits (4,096) as a key error, so no proof of a
// Signer fails at a Verifier for another reason than that documented
// bound. The key is a fixed test key: generating one this large takes
// seconds.
func TestVerifyAcceptsRSAKeysUpToTheSignersBound(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/rsa4608-test-key.pem")
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	key := parsed.(*rsa.PrivateKey)
	require.Equal(t, 4608, key.N.BitLen())

	s := mustSigner(t, key).WithClock(fixedClock(testNow))
	proof, err := s.Proof("GET", testURL, testToken, "")
	require.NoError(t, err)
	req := Request{Proofs: []string{proof}, Method: "GET", URL: testURL, AccessToken: testToken, JKT: s.Thumbprint()}
	res, err := newTestVerifier(t, WithMaxRSABits(8192)).Verify(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, "PS256", res.Algorithm)
	require.Equal(t, s.Thumbprint(), res.Thumbprint)

	_, err = newTestVerifier(t).Verify(t.Context(), req)
	require.ErrorIs(t, err, ErrKey, "over the default bound")
	require.ErrorContains(t, err, "WithMaxRSABits")
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
