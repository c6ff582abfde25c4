package interop_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// The dpop package's proofs checked with an independent JOSE
// implementation, lestrrat-go/jwx, both ways.

// hide exposes only the crypto.Signer methods of s, like an HSM or KMS
// handle whose private half cannot be exported.
func hide(s crypto.Signer) crypto.Signer { return struct{ crypto.Signer }{s} }

// Test keys are generated once: RSA generation is slow under -race.
var (
	keysOnce sync.Once
	testP256 *ecdsa.PrivateKey
	testEd   ed25519.PrivateKey
	testRSA  *rsa.PrivateKey
)

// testKeys returns one key per algorithm a Signer supports.
func testKeys(t testing.TB) map[string]crypto.Signer {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if testP256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, testEd, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
		if testRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return map[string]crypto.Signer{"ES256": testP256, "EdDSA": testEd, "PS256": testRSA}
}

func mustSigner(t testing.TB, key crypto.Signer) *dpop.Signer {
	t.Helper()
	return testkit.Must(dpop.NewSigner(key))(t)
}

// TestProofVerifiedByJWX checks proofs made by Signer with an independent JOSE
// implementation: lestrrat-go/jwx parses the jwk from the header, verifies the
// signature with it, and reads the claims.
func TestProofVerifiedByJWX(t *testing.T) {
	t.Parallel()
	const token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, hide(key))
			before := time.Now().Unix()
			proof := testkit.Must(s.Proof("POST", "https://Server.Example.com:443/token?q=1", token, "n-0S6_WzA2Mj"))(t)

			msg := testkit.Must(jws.Parse([]byte(proof)))(t)
			require.Len(t, msg.Signatures(), 1)
			hdr := msg.Signatures()[0].ProtectedHeaders()
			typ, ok := hdr.Type()
			require.True(t, ok)
			assert.Equal(t, "dpop+jwt", typ)
			alg, ok := hdr.Algorithm()
			require.True(t, ok)
			assert.Equal(t, name, alg.String())
			key, ok := hdr.JWK()
			require.True(t, ok, "jwk header present")
			for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
				assert.False(t, key.Has(private), "jwk has private member %q", private)
			}
			tp := testkit.Must(key.Thumbprint(crypto.SHA256))(t)
			assert.Equal(t, s.Thumbprint(), base64.RawURLEncoding.EncodeToString(tp))

			_, err := jws.Verify([]byte(proof), jws.WithKey(alg, key))
			require.NoError(t, err, "jwx verifies the signature")

			other := mustSigner(t, testP256)
			if name == "ES256" {
				other = mustSigner(t, testEd)
			}
			otherKey := testkit.Must(jwk.Import(other.PublicJWK().Key))(t)
			_, err = jws.Verify([]byte(proof), jws.WithKey(alg, otherKey))
			require.Error(t, err, "jwx rejects the signature with another key")

			tok := testkit.Must(jwt.Parse([]byte(proof), jwt.WithKey(alg, key)))(t)
			jti, ok := tok.JwtID()
			require.True(t, ok)
			raw := testkit.Must(base64.RawURLEncoding.DecodeString(jti))(t)
			assert.GreaterOrEqual(t, len(raw)*8, 96)
			iat, ok := tok.IssuedAt()
			require.True(t, ok)
			assert.GreaterOrEqual(t, iat.Unix(), before)
			for claim, want := range map[string]string{
				"htm":   "POST",
				"htu":   "https://server.example.com/token",
				"ath":   "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo",
				"nonce": "n-0S6_WzA2Mj",
			} {
				var got string
				require.NoError(t, tok.Get(claim, &got), claim)
				assert.Equal(t, want, got, claim)
			}
		})
	}
}

// TestVerifyAcceptsJWXProofs: proofs made by an independent implementation
// (lestrrat-go/jwx) pass the Verifier, which reports the key's RFC 7638
// thumbprint as jwx computes it.
func TestVerifyAcceptsJWXProofs(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			priv := testkit.Must(jwk.Import(key))(t)
			pub := testkit.Must(jwk.PublicKeyOf(priv))(t)
			hdr := jws.NewHeaders()
			require.NoError(t, hdr.Set(jws.TypeKey, "dpop+jwt"))
			require.NoError(t, hdr.Set(jws.JWKKey, pub))
			alg, ok := jwa.LookupSignatureAlgorithm(name)
			require.True(t, ok)
			jti := make([]byte, 16)
			_, _ = rand.Read(jti)
			claims, err := json.Marshal(map[string]any{
				"jti": base64.RawURLEncoding.EncodeToString(jti), "htm": "POST",
				"htu": "https://as.example.com/token", "iat": now.Unix(),
			})
			require.NoError(t, err)
			proof := testkit.Must(jws.Sign(claims, jws.WithKey(alg, priv, jws.WithProtectedHeaders(hdr))))(t)

			v := testkit.Must(dpop.NewVerifier(dpop.WithClock(func() time.Time { return now })))(t)
			res, err := v.Verify(t.Context(), dpop.Request{
				Proofs: []string{string(proof)}, Method: "POST", URL: "https://as.example.com/token",
			})
			require.NoError(t, err)
			tp := testkit.Must(pub.Thumbprint(crypto.SHA256))(t)
			assert.Equal(t, base64.RawURLEncoding.EncodeToString(tp), res.Thumbprint)
		})
	}
}

// TestThumbprintVectorsAgreeWithJWX: the RFC 7638 thumbprints of the
// shared test vectors (dpop's testdata copy), which dpop's own tests check
// its Signer and Verifier against, are what jwx computes too.
func TestThumbprintVectorsAgreeWithJWX(t *testing.T) {
	t.Parallel()
	raw := testkit.Must(os.ReadFile("../../dpop/testdata/dpop-vectors.json"))(t)
	var vec struct {
		Thumbprints []struct {
			Source string          `json:"source"`
			JWK    json.RawMessage `json:"jwk"`
			JKT    string          `json:"jkt"`
		} `json:"thumbprints"`
	}
	require.NoError(t, json.Unmarshal(raw, &vec))
	require.Len(t, vec.Thumbprints, 3)
	for _, tv := range vec.Thumbprints {
		t.Run(tv.Source, func(t *testing.T) {
			t.Parallel()
			key := testkit.Must(jwk.ParseKey(tv.JWK))(t)
			tp := testkit.Must(key.Thumbprint(crypto.SHA256))(t)
			assert.Equal(t, tv.JKT, base64.RawURLEncoding.EncodeToString(tp))
		})
	}
}
