package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// opaqueKey exposes only the crypto.Signer methods of a key, like an HSM or
// KMS handle whose private half cannot be exported.
type opaqueKey struct {
	pub  crypto.PublicKey
	sign func(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error)
}

func (k opaqueKey) Public() crypto.PublicKey { return k.pub }

func (k opaqueKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return k.sign(r, digest, opts)
}

func hide(s crypto.Signer) crypto.Signer {
	return opaqueKey{pub: s.Public(), sign: s.Sign}
}

// Test keys are generated once: RSA generation is slow under -race.
var (
	keysOnce sync.Once
	testP256 *ecdsa.PrivateKey
	testEd   ed25519.PrivateKey
	testRSA  *rsa.PrivateKey
)

func loadKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		testP256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		_, testEd, err = ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		testRSA, err = rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
	})
}

// testKeys returns one key per algorithm a Signer supports.
func testKeys(t testing.TB) map[string]crypto.Signer {
	loadKeys(t)
	return map[string]crypto.Signer{"ES256": testP256, "EdDSA": testEd, "PS256": testRSA}
}

func mustSigner(t testing.TB, key crypto.Signer) *Signer {
	t.Helper()
	s, err := NewSigner(key)
	require.NoError(t, err)
	return s
}

// decodeProof splits a compact JWS and decodes header and claims without
// verifying anything.
func decodeProof(t testing.TB, proof string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3)
	decode := func(s string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(s)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	return decode(parts[0]), decode(parts[1])
}

// fixedClock returns a clock standing still at t.
func fixedClock(t time.Time) func() time.Time {
	return func() time.Time { return t }
}
