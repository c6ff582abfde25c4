package transport

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// remoteKey is a crypto.Signer that answers at once but is not one of the
// standard library's keys, so its proofs are made on a goroutine of their
// own, in one of the key's slots: a KMS key at its fastest.
type remoteKey struct{ crypto.Signer }

// BenchmarkProve measures one proof as the clients make it: for a key held
// in memory, on the call's goroutine; for any other key, in a slot of the
// key's bound, on a goroutine of its own. Run it in parallel as well
// (-cpu) to see the bound's lock.
func BenchmarkProve(b *testing.B) {
	priv := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(b)
	for _, bc := range []struct {
		name string
		key  crypto.Signer
	}{{"in-memory", priv}, {"off-goroutine", remoteKey{priv}}} {
		s, err := dpop.NewSigner(bc.key)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := prove(ctx, s, "POST", "https://gateway.example/authorize", "a-token", ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
