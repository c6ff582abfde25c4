package dpop

import (
	"crypto"
	"encoding/base64"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			proof, err := s.Proof("POST", "https://Server.Example.com:443/token?q=1", token, "n-0S6_WzA2Mj")
			require.NoError(t, err)

			msg, err := jws.Parse([]byte(proof))
			require.NoError(t, err)
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
			tp, err := key.Thumbprint(crypto.SHA256)
			require.NoError(t, err)
			assert.Equal(t, s.Thumbprint(), base64.RawURLEncoding.EncodeToString(tp))

			_, err = jws.Verify([]byte(proof), jws.WithKey(alg, key))
			require.NoError(t, err, "jwx verifies the signature")

			other := mustSigner(t, testP256)
			if name == "ES256" {
				other = mustSigner(t, testEd)
			}
			otherKey, err := jwk.Import(other.PublicJWK().Key)
			require.NoError(t, err)
			_, err = jws.Verify([]byte(proof), jws.WithKey(alg, otherKey))
			require.Error(t, err, "jwx rejects the signature with another key")

			tok, err := jwt.Parse([]byte(proof), jwt.WithKey(alg, key))
			require.NoError(t, err)
			jti, ok := tok.JwtID()
			require.True(t, ok)
			raw, err := base64.RawURLEncoding.DecodeString(jti)
			require.NoError(t, err)
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
