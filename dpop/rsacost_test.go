package dpop

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// attackRSAProof builds a proof whose jwk is an RSA "key" of the given size
// (a random odd modulus nobody holds the factors of) and exponent, with a
// garbage signature of the modulus's length: the Verifier does the whole
// RSA public operation before refusing it. No authentication is needed:
// checkHeader and the signature run before anything else.
func attackRSAProof(t testing.TB, bits int, e int64) string {
	t.Helper()
	n := testkit.Must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits))))(t)
	n.SetBit(n, bits-1, 1)
	n.SetBit(n, 0, 1)
	eb := big.NewInt(e).Bytes()
	jwk := `{"kty":"RSA","n":"` + base64.RawURLEncoding.EncodeToString(n.Bytes()) + `","e":"` + base64.RawURLEncoding.EncodeToString(eb) + `"}`
	hdr := `{"typ":"dpop+jwt","alg":"RS256","jwk":` + jwk + `}`
	claims := `{"jti":"x","htm":"POST","htu":"https://as.example/token","iat":` + "1" + `}`
	sig := make([]byte, bits/8)
	_, _ = rand.Read(sig)
	sig[0] &= 0x7f
	return base64.RawURLEncoding.EncodeToString([]byte(hdr)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestVerifyBoundsTheCostOfAnRSAKey: the key of a proof nobody has
// authenticated yet decides what its signature check costs (an 8192-bit
// modulus with exponent 2^31-1 costs about 90 times an honest 2048-bit
// proof; BenchmarkVerifyRSAKeyCost measures it). A Verifier refuses, as a
// key error and before any RSA operation, a modulus over its bound
// (DefaultMaxRSABits unless WithMaxRSABits raises it, to 8192 at most)
// and an exponent other than 65537; within the bound the garbage
// signature is what fails.
func TestVerifyBoundsTheCostOfAnRSAKey(t *testing.T) {
	t.Parallel()
	def := mustVerifier(t)
	wide := mustVerifier(t, WithMaxRSABits(8192))
	for _, tc := range []struct {
		name string
		v    *Verifier
		bits int
		e    int64
		want error
	}{
		{"2048 bits, 65537", def, 2048, 65537, ErrSignature},
		{"4096 bits, 65537", def, 4096, 65537, ErrSignature},
		{"4097 bits by default", def, 4097, 65537, ErrKey},
		{"8192 bits by default", def, 8192, 65537, ErrKey},
		{"2048 bits, 2^31-1", def, 2048, 1<<31 - 1, ErrKey},
		{"2048 bits, 3", def, 2048, 3, ErrKey},
		{"4096 bits, 65539", def, 4096, 65539, ErrKey},
		{"8192 bits, 65537, allowed", wide, 8192, 65537, ErrSignature},
		{"8192 bits, 2^31-1, allowed bits", wide, 8192, 1<<31 - 1, ErrKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := attackRSAProof(t, tc.bits, tc.e)
			require.LessOrEqual(t, len(p), maxProofSize)
			_, err := tc.v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "POST", URL: "https://as.example/token"})
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// BenchmarkVerifyRSAKeyCost measures what one proof with a garbage
// signature costs a Verifier, by modulus and exponent: what an
// unauthenticated caller can make it spend, with WithMaxRSABits(8192);
// the exponent 2^31-1 row is what its refusal costs now.
func BenchmarkVerifyRSAKeyCost(b *testing.B) {
	v, err := NewVerifier(WithMaxRSABits(8192))
	require.NoError(b, err)
	for _, c := range []struct {
		bits int
		e    int64
	}{{2048, 65537}, {4096, 65537}, {8192, 65537}, {8192, 1<<31 - 1}} {
		b.Run(fmt.Sprintf("%d-bits-e=%d", c.bits, c.e), func(b *testing.B) {
			p := attackRSAProof(b, c.bits, c.e)
			req := Request{Proofs: []string{p}, Method: "POST", URL: "https://as.example/token"}
			for b.Loop() {
				_, _ = v.Verify(context.Background(), req)
			}
		})
	}
}
