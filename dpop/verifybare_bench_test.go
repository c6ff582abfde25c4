package dpop

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"math/big"
	"strings"
	"testing"
)

// BenchmarkVerifyVsBare puts a full Verify (every RFC 9449 check, token hash
// and key binding included) next to the bare signature check of the same
// proofs in the same run: for ES256 a SHA-256 of the signing input and
// ecdsa.Verify with the key already in hand, for EdDSA ed25519.Verify. The
// ratio of the two ns/op is what everything but the signature costs.
// Compare medians of several -count rounds (BENCHMARKS.md).
func BenchmarkVerifyVsBare(b *testing.B) {
	keys := testKeys(b)
	for _, name := range []string{"ES256", "EdDSA"} {
		key := keys[name]
		s := mustSigner(b, key).WithClock(fixedClock(testNow))
		proofs := func(b *testing.B) []string {
			b.Helper()
			ps := make([]string, b.N)
			for i := range ps {
				p, err := s.Proof("GET", benchURL, testToken, "")
				if err != nil {
					b.Fatal(err)
				}
				ps[i] = p
			}
			return ps
		}
		b.Run(name+"/bare", func(b *testing.B) {
			ps := proofs(b)
			type signed struct {
				input string
				sig   []byte
			}
			in := make([]signed, len(ps))
			for i, p := range ps {
				dot := strings.LastIndexByte(p, '.')
				sig, err := b64.DecodeString(p[dot+1:])
				if err != nil {
					b.Fatal(err)
				}
				in[i] = signed{p[:dot], sig}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ok := false
				switch pub := key.Public().(type) {
				case *ecdsa.PublicKey:
					h := sha256.Sum256([]byte(in[i].input))
					r := new(big.Int).SetBytes(in[i].sig[:32])
					sv := new(big.Int).SetBytes(in[i].sig[32:])
					ok = ecdsa.Verify(pub, h[:], r, sv)
				case ed25519.PublicKey:
					ok = ed25519.Verify(pub, []byte(in[i].input), in[i].sig)
				}
				if !ok {
					b.Fatal("signature does not verify")
				}
			}
		})
		b.Run(name+"/verify", func(b *testing.B) {
			ps := proofs(b)
			v := newTestVerifier(b, WithReplayCacheSize(b.N+1), WithReplayKeyLimit(b.N+1))
			req := Request{Method: "GET", URL: benchURL, AccessToken: testToken, JKT: s.Thumbprint()}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req.Proofs = []string{ps[i]}
				if _, err := v.Verify(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
