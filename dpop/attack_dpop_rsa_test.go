package dpop

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"math/big"
	"testing"
	"time"
)

// attackRSAProof builds a proof whose jwk is an RSA "key" of the given size
// (a random odd modulus nobody holds the factors of) and exponent, with a
// garbage signature of the modulus's length: the Verifier does the whole
// RSA public operation before refusing it. No authentication is needed:
// checkHeader and the signature run before anything else.
func attackRSAProof(t testing.TB, bits int, e int64) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	if err != nil {
		t.Fatal(err)
	}
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

// TestAttackRSAVerifyCost measures what one unauthenticated proof with an
// 8192-bit modulus and the largest exponent the Verifier takes (2^31-1)
// costs, against an honest 2048-bit e=65537 proof.
func TestAttackRSAVerifyCost(t *testing.T) {
	v, err := NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	cost := func(bits int, e int64) time.Duration {
		p := attackRSAProof(t, bits, e)
		if len(p) > maxProofSize {
			t.Fatalf("proof of %d bytes is over the limit", len(p))
		}
		const rounds = 20
		start := time.Now()
		for range rounds {
			_, err := v.Verify(context.Background(), Request{Proofs: []string{p}, Method: "POST", URL: "https://as.example/token"})
			if err == nil {
				t.Fatal("accepted")
			}
		}
		return time.Since(start) / rounds
	}
	base := cost(2048, 65537)
	big := cost(8192, 1<<31-1)
	t.Logf("8192-bit e=65537: %v; 4096-bit e=2^31-1: %v", cost(8192, 65537), cost(4096, 1<<31-1))
	t.Logf("2048-bit e=65537: %v per proof; 8192-bit e=2^31-1: %v per proof (x%.0f)", base, big, float64(big)/float64(base))
}
