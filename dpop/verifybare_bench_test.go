package dpop

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"math/big"
	"strings"
	"testing"
	"time"
)

// BenchmarkVerifyVsBare puts a full Verify (every RFC 9449 check, token hash
// and key binding included, the replay record too) next to the bare
// signature check of the same proof: for ES256 a SHA-256 of the signing
// input and ecdsa.Verify with the key already in hand, for EdDSA
// ed25519.Verify. The two alternate proof by proof, each timed on its own,
// so that the load of a shared machine falls on both alike. It reports
// both times and ratio = Verify / bare (1 is no cost beyond the
// signature); allocations are BenchmarkVerify's. Take medians over several
// runs (BENCHMARKS.md).
func BenchmarkVerifyVsBare(b *testing.B) {
	keys := testKeys(b)
	for _, name := range []string{"ES256", "EdDSA"} {
		key := keys[name]
		s := mustSigner(b, key).WithClock(fixedClock(testNow))
		b.Run(name, func(b *testing.B) {
			type proof struct {
				text, input string
				sig         []byte
			}
			proofs := make([]proof, b.N)
			for i := range proofs {
				p, err := s.Proof("GET", benchURL, testToken, "")
				if err != nil {
					b.Fatal(err)
				}
				dot := strings.LastIndexByte(p, '.')
				sig, err := b64.DecodeString(p[dot+1:])
				if err != nil {
					b.Fatal(err)
				}
				proofs[i] = proof{p, p[:dot], sig}
			}
			bare := func(p proof) bool {
				switch pub := key.Public().(type) {
				case *ecdsa.PublicKey:
					h := sha256.Sum256([]byte(p.input))
					r := new(big.Int).SetBytes(p.sig[:32])
					sv := new(big.Int).SetBytes(p.sig[32:])
					return ecdsa.Verify(pub, h[:], r, sv)
				case ed25519.PublicKey:
					return ed25519.Verify(pub, []byte(p.input), p.sig)
				}
				return false
			}
			v := newTestVerifier(b, WithReplayCacheSize(b.N+1), WithReplayKeyLimit(b.N+1))
			req := Request{Method: "GET", URL: benchURL, AccessToken: testToken, JKT: s.Thumbprint()}
			var bareTime, verifyTime time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if !bare(proofs[i]) {
					b.Fatal("signature does not verify")
				}
				t1 := time.Now()
				req.Proofs = []string{proofs[i].text}
				if _, err := v.Verify(b.Context(), req); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				bareTime += t1.Sub(t0)
				verifyTime += t2.Sub(t1)
			}
			b.ReportMetric(float64(bareTime.Nanoseconds())/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(verifyTime.Nanoseconds())/float64(b.N), "verify-ns/op")
			b.ReportMetric(float64(verifyTime)/float64(bareTime), "ratio")
		})
	}
}
