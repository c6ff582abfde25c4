package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
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

// readRSAKey reads the PKCS #8 RSA key of bits bits at path (a fixed
// test key: generating one takes seconds under -race).
func readRSAKey(t testing.TB, path string, bits int) *rsa.PrivateKey {
	t.Helper()
	data := testkit.Must(os.ReadFile(path))(t)
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	parsed := testkit.Must(x509.ParsePKCS8PrivateKey(block.Bytes))(t)
	key := parsed.(*rsa.PrivateKey)
	require.Equal(t, bits, key.N.BitLen())
	return key
}

// testKeys returns one key per algorithm a Signer supports.
func testKeys(t testing.TB) map[string]crypto.Signer {
	loadKeys(t)
	return map[string]crypto.Signer{"ES256": testP256, "EdDSA": testEd, "PS256": testRSA}
}

func mustSigner(t testing.TB, key crypto.Signer) *Signer {
	t.Helper()
	return testkit.Must(NewSigner(key))(t)
}

// decodeProof splits a compact JWS and decodes header and claims without
// verifying anything.
func decodeProof(t testing.TB, proof string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3)
	decode := func(s string) map[string]any {
		b := unbase64(t, s)
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

// forgeSign signs arbitrary header and claims bytes with key under alg using
// the standard library directly, so tests can build proofs Signer never
// would: wrong typ, alg none, HMAC, private jwk, duplicate members...
func forgeSign(t testing.TB, alg string, key any, header, claims []byte) string {
	t.Helper()
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	var sig []byte
	var err error
	switch alg {
	case "none":
	case "HS256":
		mac := hmac.New(sha256.New, key.([]byte))
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	case "ES256", "ES384":
		h := crypto.SHA256
		size := 32
		if alg == "ES384" {
			h, size = crypto.SHA384, 48
		}
		d := h.New()
		d.Write([]byte(input))
		var der []byte
		der = testkit.Must(ecdsa.SignASN1(rand.Reader, key.(*ecdsa.PrivateKey), d.Sum(nil)))(t)
		sig, err = ecdsaDERToJWS(der, size)
	case "EdDSA":
		sig = ed25519.Sign(key.(ed25519.PrivateKey), []byte(input))
	case "PS256":
		d := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPSS(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "RS256":
		d := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, d[:])
	default:
		t.Fatalf("forgeSign: unknown alg %q", alg)
	}
	require.NoError(t, err)
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// publicJWKMap returns the public JWK of key as a JSON object.
func publicJWKMap(t testing.TB, pub crypto.PublicKey) map[string]any {
	t.Helper()
	b := testkit.Must(json.Marshal(jose.JSONWebKey{Key: pub}))(t)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	return testkit.Must(json.Marshal(v))(t)
}

// thumbprintOf returns the RFC 7638 thumbprint of a public key.
func thumbprintOf(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	k := jose.JSONWebKey{Key: pub}
	tp := testkit.Must(k.Thumbprint(crypto.SHA256))(t)
	return base64.RawURLEncoding.EncodeToString(tp)
}

// verified is v.Verify of req with the test's context, failing the test
// when it refuses the proof.
func verified(t testing.TB, v *Verifier, req Request) {
	t.Helper()
	testkit.Must(v.Verify(t.Context(), req))(t)
}

// mustVerifier is NewVerifier, failing the test on an error.
func mustVerifier(t testing.TB, opts ...Option) *Verifier {
	t.Helper()
	return testkit.Must(NewVerifier(opts...))(t)
}

// proofOf is s's proof for method, url, accessToken and nonce, failing the
// test on an error.
func proofOf(t testing.TB, s *Signer, method, url, accessToken, nonce string) string {
	t.Helper()
	return testkit.Must(s.Proof(method, url, accessToken, nonce))(t)
}

// newKey is GenerateKey, failing the test on an error.
func newKey(t testing.TB) *Signer {
	t.Helper()
	return testkit.Must(GenerateKey())(t)
}

// unbase64 decodes s as unpadded base64url, failing the test on an error.
func unbase64(t testing.TB, s string) []byte {
	t.Helper()
	return testkit.Must(base64.RawURLEncoding.DecodeString(s))(t)
}
