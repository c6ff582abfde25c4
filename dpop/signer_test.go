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
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

func TestNewSigner(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	p384 := testkit.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))(t)
	p521 := testkit.Must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader))(t)
	rsa1024 := testkit.Must(rsa.GenerateKey(rand.Reader, 1024))(t)
	e3 := *testRSA // the Signer signs with no key the Verifier would refuse for its exponent
	e3.E = 3

	tests := []struct {
		name    string
		key     crypto.Signer
		wantAlg string
		wantErr string
		// inMemory: a standard library private key, which cannot block
		inMemory bool
	}{
		{name: "P-256", key: testP256, wantAlg: "ES256", inMemory: true},
		{name: "Ed25519", key: testEd, wantAlg: "EdDSA", inMemory: true},
		{name: "RSA 2048", key: testRSA, wantAlg: "PS256", inMemory: true},
		{name: "P-256 non-exportable", key: hide(testP256), wantAlg: "ES256"},
		{name: "Ed25519 non-exportable", key: hide(testEd), wantAlg: "EdDSA"},
		{name: "RSA non-exportable", key: hide(testRSA), wantAlg: "PS256"},
		{name: "nil key", key: nil, wantErr: "dpop: nil key"},
		{name: "P-384", key: p384, wantErr: "unsupported ecdsa curve P-384"},
		{name: "P-521", key: p521, wantErr: "unsupported ecdsa curve P-521"},
		{name: "RSA 1024", key: rsa1024, wantErr: "rsa key of 1024 bits"},
		{name: "RSA exponent 3", key: &e3, wantErr: "public exponent 3: want 65537"},
		{name: "nil public key", key: opaqueKey{}, wantErr: "signer has no public key"},
		{name: "unknown key type", key: opaqueKey{pub: "not a key"}, wantErr: "unsupported key type string"},
		{name: "empty ecdsa key", key: opaqueKey{pub: &ecdsa.PublicKey{}}, wantErr: "empty ecdsa public key"},
		{name: "short ed25519 key", key: opaqueKey{pub: ed25519.PublicKey{1, 2}}, wantErr: "invalid ed25519 public key"},
		{name: "empty rsa key", key: opaqueKey{pub: &rsa.PublicKey{}}, wantErr: "empty rsa public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSigner(tt.key)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Regexp(t, `^dpop: `, err.Error())
				assert.Nil(t, s)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantAlg, s.Algorithm())
			assert.Equal(t, tt.inMemory, s.InMemory(), "InMemory")

			want := jose.JSONWebKey{Key: tt.key.Public()}
			tp := testkit.Must(want.Thumbprint(crypto.SHA256))(t)
			assert.Equal(t, base64.RawURLEncoding.EncodeToString(tp), s.Thumbprint())

			jwk := s.PublicJWK()
			assert.True(t, jwk.IsPublic())
			raw := testkit.Must(json.Marshal(jwk))(t)
			var members map[string]any
			require.NoError(t, json.Unmarshal(raw, &members))
			for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
				assert.NotContains(t, members, private)
			}
			assert.NotContains(t, members, "kid")
		})
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a := newKey(t)
	b := newKey(t)
	assert.Equal(t, "ES256", a.Algorithm())
	assert.True(t, a.InMemory())
	assert.NotEqual(t, a.Thumbprint(), b.Thumbprint())
	assert.Len(t, a.Thumbprint(), 43)
}

func TestProofContents(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, hide(key)).WithClock(fixedClock(now))

			tests := []struct {
				name                string
				method, url         string
				token, nonce        string
				wantHTU             string
				wantATH, wantNonce  bool
				wantATHValue        string
				wantNonceValue      string
				wantHeaderAlgorithm string
			}{
				{
					name: "token endpoint", method: "POST", url: "https://Server.Example.COM:443/token?x=1#frag",
					wantHTU: "https://server.example.com/token",
				},
				{
					name: "resource with token", method: "GET", url: "https://resource.example.org/protectedresource",
					token: "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU", wantHTU: "https://resource.example.org/protectedresource",
					wantATH: true, wantATHValue: "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo",
				},
				{
					name: "with nonce", method: "PATCH", url: "http://localhost:8080/a/b", nonce: "eyJ7S_zG.eyJH0-Z.HX4w-7v",
					wantHTU: "http://localhost:8080/a/b", wantNonce: true, wantNonceValue: "eyJ7S_zG.eyJH0-Z.HX4w-7v",
				},
				{
					// Strings a proof must escape: the claims stay valid
					// JSON and carry the caller's values exactly.
					name: "strings to escape", method: "M\"\\\u00e9\x01", url: "http://localhost/\u00fcber",
					nonce: "n\"\\\x7f\xff", wantHTU: "http://localhost/%C3%BCber",
					wantNonce: true, wantNonceValue: "n\"\\\x7f\ufffd",
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					proof := proofOf(t, s, tt.method, tt.url, tt.token, tt.nonce)
					require.NoError(t, verifyWithGoJose(proof))
					header, claims := decodeProof(t, proof)

					assert.Equal(t, "dpop+jwt", header["typ"])
					assert.Equal(t, name, header["alg"])
					assert.NotContains(t, header, "kid")
					jwk, ok := header["jwk"].(map[string]any)
					require.True(t, ok, "jwk header is an object")
					assert.NotContains(t, jwk, "d")

					jti, ok := claims["jti"].(string)
					require.True(t, ok)
					raw := unbase64(t, jti)
					assert.GreaterOrEqual(t, len(raw)*8, 96)
					assert.Equal(t, tt.method, claims["htm"])
					assert.Equal(t, tt.wantHTU, claims["htu"])
					assert.EqualValues(t, now.Unix(), claims["iat"])
					if tt.wantATH {
						assert.Equal(t, tt.wantATHValue, claims["ath"])
					} else {
						assert.NotContains(t, claims, "ath")
					}
					if tt.wantNonce {
						assert.Equal(t, tt.wantNonceValue, claims["nonce"])
					} else {
						assert.NotContains(t, claims, "nonce")
					}
				})
			}
		})
	}
}

func TestProofUsesRealTimeByDefault(t *testing.T) {
	t.Parallel()
	s := newKey(t)
	before := time.Now().Unix()
	proof := proofOf(t, s, "GET", "https://example.com/", "", "")
	after := time.Now().Unix()
	_, claims := decodeProof(t, proof)
	iat, ok := claims["iat"].(float64)
	require.True(t, ok)
	assert.GreaterOrEqual(t, int64(iat), before)
	assert.LessOrEqual(t, int64(iat), after)

	// WithClock(nil) also means the real clock; the original is unchanged.
	fixed := s.WithClock(fixedClock(time.Unix(42, 0)))
	back := fixed.WithClock(nil)
	proof = proofOf(t, back, "GET", "https://example.com/", "", "")
	_, claims = decodeProof(t, proof)
	assert.GreaterOrEqual(t, int64(claims["iat"].(float64)), before)
	proof = proofOf(t, fixed, "GET", "https://example.com/", "", "")
	_, claims = decodeProof(t, proof)
	assert.EqualValues(t, 42, claims["iat"])
}

func TestProofUniqueJTI(t *testing.T) {
	t.Parallel()
	s := newKey(t)
	seen := make(map[string]bool)
	for range 200 {
		proof := proofOf(t, s, "GET", "https://example.com/", "", "")
		_, claims := decodeProof(t, proof)
		jti := claims["jti"].(string)
		require.False(t, seen[jti], "jti repeated")
		seen[jti] = true
	}
}

func TestProofErrors(t *testing.T) {
	t.Parallel()
	loadKeys(t)
	failing := opaqueKey{pub: testP256.Public(), sign: func(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
		return nil, errors.New("hsm unplugged")
	}}
	garbage := opaqueKey{pub: testP256.Public(), sign: func(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
		return []byte{0x30, 0x01}, nil
	}}
	short := func(key crypto.Signer, cut int) crypto.Signer {
		return opaqueKey{pub: key.Public(), sign: func(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
			sig, err := key.Sign(r, d, o)
			return sig[:len(sig)-cut], err
		}}
	}
	const token = "secret-token-value"
	tests := []struct {
		name    string
		key     crypto.Signer
		method  string
		url     string
		wantIs  error
		wantMsg string
	}{
		{name: "empty method", key: testP256, method: "", url: "https://example.com/", wantMsg: "dpop: empty http method"},
		{name: "relative url", key: testP256, method: "GET", url: "/token", wantIs: ErrURL},
		{name: "ftp url", key: testP256, method: "GET", url: "ftp://example.com/", wantIs: ErrURL},
		{name: "unparsable url", key: testP256, method: "GET", url: "https://exa mple.com/%zz", wantIs: ErrURL},
		{name: "key fails", key: failing, method: "GET", url: "https://example.com/", wantMsg: "hsm unplugged"},
		{name: "key returns garbage", key: garbage, method: "GET", url: "https://example.com/", wantMsg: "malformed ecdsa signature"},
		{name: "short Ed25519 signature", key: short(testEd, 1), method: "GET", url: "https://example.com/", wantMsg: "63-byte EdDSA signature, want 64"},
		{name: "short RSA signature", key: short(testRSA, 1), method: "GET", url: "https://example.com/", wantMsg: "signature, want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, tt.key)
			proof, err := s.Proof(tt.method, tt.url, token, "")
			require.Error(t, err)
			assert.Empty(t, proof)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), token)
			assert.Regexp(t, `^dpop: `, err.Error())
		})
	}

	t.Run("url remembered as a copy", func(t *testing.T) {
		t.Parallel()
		// The signer remembers the last url's htu; it must not keep the
		// caller's larger string alive (a header, a whole config file).
		s := mustSigner(t, testP256)
		page := "https://example.com/orders" + strings.Repeat(" ", 1<<16)
		url := page[:len("https://example.com/orders")]
		proofOf(t, s, "GET", url, token, "")
		m := s.lastHTU.Load()
		require.NotNil(t, m)
		assert.Equal(t, url, m.url)
		assert.NotSame(t, unsafe.StringData(page), unsafe.StringData(m.url))
	})

	t.Run("zero Signer", func(t *testing.T) {
		t.Parallel()
		var s Signer
		_, err := s.Proof("GET", "https://example.com/", "", "")
		require.Error(t, err)
	})
}

func TestSignerConcurrentUse(t *testing.T) {
	t.Parallel()
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, key)
			// Goroutines alternate between URLs and tokens, so that the
			// signer's memo of the last htu and ath is replaced under
			// them: every proof must still carry its own request's values.
			urls := []string{"https://example.com/r", "https://EXAMPLE.com:443/s?q=1", "http://other.example/t"}
			wantHTU := []string{"https://example.com/r", "https://example.com/s", "http://other.example/t"}
			tokens := []string{"tok", "another-token", ""}
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for g := range 8 {
				wg.Go(func() {
					for i := range 12 {
						u, tok := (g+i)%len(urls), (g+2*i)%len(tokens)
						proof, err := s.Proof("GET", urls[u], tokens[tok], "")
						if err == nil {
							err = verifyWithGoJose(proof)
						}
						if err == nil {
							err = checkBinding(proof, wantHTU[u], tokens[tok])
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// checkBinding reports whether proof's htu is htu and its ath the hash of
// token (no ath for no token).
func checkBinding(proof, htu, token string) error {
	parts := strings.Split(proof, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var c struct{ HTU, ATH string }
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	wantATH := ""
	if token != "" {
		wantATH = TokenHash(token)
	}
	if c.HTU != htu || c.ATH != wantATH {
		return fmt.Errorf("proof for %s with token %q carries htu %s, ath %s", htu, token, c.HTU, c.ATH)
	}
	return nil
}

// verifyWithGoJose checks a proof's signature with the key in its own header.
func verifyWithGoJose(proof string) error {
	jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA, jose.PS256})
	if err != nil {
		return err
	}
	_, err = jws.Verify(jws.Signatures[0].Header.JSONWebKey)
	return err
}
