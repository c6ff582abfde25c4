package dpop

import (
	"testing"
)

const benchURL = "https://rs.example.com/orders/42?expand=items"

func BenchmarkProof(b *testing.B) {
	keys := testKeys(b)
	for _, name := range []string{"ES256", "EdDSA", "PS256"} {
		b.Run(name, func(b *testing.B) {
			s := mustSigner(b, keys[name])
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Proof("GET", benchURL, testToken, "nonce-1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerify measures a full successful verification of a resource
// request (token hash and key binding included). Proofs are made before the
// timer starts, one per iteration, since each can be accepted only once.
func BenchmarkVerify(b *testing.B) {
	keys := testKeys(b)
	for _, name := range []string{"ES256", "EdDSA", "PS256"} {
		b.Run(name, func(b *testing.B) {
			s := mustSigner(b, keys[name]).WithClock(fixedClock(testNow))
			proofs := make([]string, b.N)
			for i := range proofs {
				p, err := s.Proof("GET", benchURL, testToken, "")
				if err != nil {
					b.Fatal(err)
				}
				proofs[i] = p
			}
			v := newTestVerifier(b, WithReplayCacheSize(b.N+1), WithReplayKeyLimit(b.N+1))
			req := Request{Method: "GET", URL: benchURL, AccessToken: testToken, JKT: s.Thumbprint()}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req.Proofs = []string{proofs[i]}
				if _, err := v.Verify(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
