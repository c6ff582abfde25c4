package dpop

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"sync"
	"testing"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestVerifyResultsAreTheirOwnProofsUnderConcurrency: proofs of different
// key types, some malformed, verified at once by one Verifier; every
// accepted Result holds its own proof's thumbprint, jti, key and claims
// (no pooled buffer of another Verify leaks in). Run with -race.
func TestVerifyResultsAreTheirOwnProofsUnderConcurrency(t *testing.T) {
	loadKeys(t)
	_, ed2, _ := ed25519.GenerateKey(rand.Reader)
	rsa4096 := readRSAKey(t, "testdata/rsa4096-test-key.pem", DefaultMaxRSABits) // a fixed key: generating one takes seconds
	signers := []*Signer{mustSigner(t, testP256), mustSigner(t, testEd), mustSigner(t, testRSA), mustSigner(t, rsa4096), mustSigner(t, ed2)}
	v := testkit.Must(NewVerifier())(t)
	const url = "https://rs.example/resource"
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				s := signers[(g+i)%len(signers)]
				p, err := s.Proof("GET", url, "", "")
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 { // a malformed one in between, to dirty the pool
					_, _ = v.Verify(context.Background(), Request{Proofs: []string{p[:len(p)/2] + "x" + p[len(p)/2:]}, Method: "GET", URL: url})
				}
				res, err := v.Verify(context.Background(), Request{Proofs: []string{p}, Method: "GET", URL: url, JKT: s.Thumbprint()})
				if err != nil {
					t.Errorf("refused a valid proof: %v", err)
					return
				}
				_, c := decodeProof(t, p)
				if res.Thumbprint != s.Thumbprint() || res.Claims.ID != c["jti"] || res.Claims.URL != url || res.Claims.Method != "GET" ||
					!strings.EqualFold(thumbprintOf(t, res.PublicKey), s.Thumbprint()) {
					t.Errorf("the Result of another proof: %+v", res)
					return
				}
			}
		})
	}
	wg.Wait()
}
