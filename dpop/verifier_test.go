package dpop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

const (
	testToken = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	testURL   = "https://rs.example.com/resource"
)

var testNow = time.Unix(1_700_000_000, 0)

func newTestVerifier(t testing.TB, opts ...Option) *Verifier {
	t.Helper()
	v := mustVerifier(t, append([]Option{WithClock(fixedClock(testNow))}, opts...)...)
	return v
}

// sentinels lists every distinct error value Verify can return.
var sentinels = []error{
	ErrMissingProof, ErrMultipleProofs, ErrMalformed, ErrType, ErrAlgorithm, ErrKey,
	ErrPrivateKey, ErrSignature, ErrMissingClaim, ErrMethod, ErrURL, ErrIATTooOld,
	ErrIATInFuture, ErrReplay, ErrReplayCacheFull, ErrReplayStoreUnavailable, ErrUseNonce, ErrNonceRequired,
	ErrNonceStale, ErrTokenHash, ErrKeyMismatch,
}

// requireOnly checks that err matches want and no other sentinel (apart from
// ErrUseNonce, the parent of the nonce errors).
func requireOnly(t *testing.T, err, want error) {
	t.Helper()
	require.ErrorIs(t, err, want)
	for _, s := range sentinels {
		if s == want || (s == ErrUseNonce && (want == ErrNonceRequired || want == ErrNonceStale)) {
			continue
		}
		assert.NotErrorIs(t, err, s, "error %q also matches %q", err, s)
	}
	assert.True(t, strings.HasPrefix(err.Error(), "dpop: "), "error %q lacks the dpop: prefix", err)
	assert.NotContains(t, err.Error(), testToken)
}

// fixture builds proofs around one P-256 key and a resource request.
type fixture struct {
	key *ecdsa.PrivateKey
	jkt string
}

func newFixture(t testing.TB) fixture {
	loadKeys(t)
	return fixture{key: testP256, jkt: thumbprintOf(t, testP256.Public())}
}

func (f fixture) header(t testing.TB) map[string]any {
	return map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": publicJWKMap(t, f.key.Public())}
}

func randomJTI() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (f fixture) claims() map[string]any {
	return map[string]any{
		"jti": randomJTI(), "htm": "GET", "htu": testURL, "iat": testNow.Unix(),
		"ath": TokenHash(testToken),
	}
}

func (f fixture) request(proof string) Request {
	return Request{
		Proofs: []string{proof}, Method: "GET", URL: testURL + "?page=2",
		AccessToken: testToken, JKT: f.jkt,
	}
}

// proof signs header and claims (after mutate) with the fixture's key.
func (f fixture) proof(t testing.TB, mutate func(h, c map[string]any)) string {
	h, c := f.header(t), f.claims()
	if mutate != nil {
		mutate(h, c)
	}
	return forgeSign(t, "ES256", f.key, mustJSON(t, h), mustJSON(t, c))
}

func TestVerifyAcceptsSignerProofs(t *testing.T) {
	t.Parallel()
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustSigner(t, hide(key)).WithClock(fixedClock(testNow))
			v := newTestVerifier(t)
			proof := proofOf(t, s, "DELETE", "https://rs.example.com/orders/7?force=1", testToken, "")
			res, err := v.Verify(t.Context(), Request{
				Proofs: []string{proof}, Method: "DELETE", URL: "https://rs.example.com/orders/7",
				AccessToken: testToken, JKT: s.Thumbprint(),
			})
			require.NoError(t, err)
			assert.Equal(t, name, res.Algorithm)
			assert.Equal(t, s.Thumbprint(), res.Thumbprint)
		})
	}
}

// TestVerify: the proofs and requests Verify accepts (want nil; verify
// reads the Result), and those it refuses, each with one sentinel only,
// recording nothing.
func TestVerify(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p384 := testkit.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))(t)
	other := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t)
	rsa1024 := testkit.Must(rsa.GenerateKey(rand.Reader, 1024))(t)

	// signed builds a proof from raw header and claims JSON, signed by the
	// fixture's key with ES256.
	signed := func(header, claims string) func(t *testing.T) string {
		return func(t *testing.T) string { return forgeSign(t, "ES256", f.key, []byte(header), []byte(claims)) }
	}
	mutated := func(mutate func(h, c map[string]any)) func(t *testing.T) string {
		return func(t *testing.T) string { return f.proof(t, mutate) }
	}
	literal := func(s string) func(t *testing.T) string { return func(*testing.T) string { return s } }
	jwkJSON := string(mustJSON(t, publicJWKMap(t, f.key.Public())))
	claimsJSON := func() string { return string(mustJSON(t, f.claims())) }

	tests := []struct {
		name   string
		proof  func(t *testing.T) string
		req    func(r *Request)
		opts   []Option
		want   error
		verify func(t *testing.T, res *Result)
	}{
		// Accepted.
		{
			name: "resource request with token", proof: mutated(nil),
			verify: func(t *testing.T, res *Result) {
				assert.Equal(t, f.jkt, res.Thumbprint)
				assert.Equal(t, "ES256", res.Algorithm)
				assert.Equal(t, "GET", res.Claims.Method)
				assert.Equal(t, testURL, res.Claims.URL)
				assert.Equal(t, testNow.Unix(), res.Claims.IssuedAt.Unix())
				assert.Equal(t, TokenHash(testToken), res.Claims.AccessTokenHash)
				assert.True(t, f.key.PublicKey.Equal(res.PublicKey))
			},
		},
		{name: "token endpoint without token or jkt", proof: mutated(func(_, c map[string]any) { delete(c, "ath") }), req: func(r *Request) { r.AccessToken, r.JKT, r.Method = "", "", "GET" }},
		{name: "ath ignored without a token", proof: mutated(func(_, c map[string]any) { c["ath"] = "whatever" }), req: func(r *Request) { r.AccessToken, r.JKT = "", "" }},
		{name: "jkt without token (dpop_jkt binding)", proof: mutated(nil), req: func(r *Request) { r.AccessToken = "" }},
		{name: "htu differs only by normalisation", proof: mutated(func(_, c map[string]any) { c["htu"] = "HTTPS://RS.Example.com:443/./resource" }), req: func(r *Request) { r.URL = "https://rs.example.com:443/resource#x" }},
		{name: "iat at the oldest edge", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() - 60 })},
		{name: "iat at the newest edge", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() + 10 })},
		{name: "fractional iat", proof: mutated(func(_, c map[string]any) { c["iat"] = float64(testNow.Unix()) - 0.5 })},
		{name: "unknown claims and headers ignored", proof: mutated(func(h, c map[string]any) { h["kid"] = "x"; c["extra"] = []any{1} })},
		{name: "nonce claim ignored without WithNonces", proof: mutated(func(_, c map[string]any) { c["nonce"] = "n" })},
		{name: "wider window", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() - 300 }), opts: []Option{WithIATWindow(5*time.Minute, 0)}},
		{
			name: "RS256 allowed by default",
			proof: func(t *testing.T) string {
				h := map[string]any{"typ": "dpop+jwt", "alg": "RS256", "jwk": publicJWKMap(t, testRSA.Public())}
				return forgeSign(t, "RS256", testRSA, mustJSON(t, h), mustJSON(t, f.claims()))
			},
			req: func(r *Request) { r.JKT = thumbprintOf(t, testRSA.Public()) },
		},

		// One DPoP header.
		{name: "no DPoP header", proof: literal(""), req: func(r *Request) { r.Proofs = nil }, want: ErrMissingProof},
		{name: "empty DPoP header", proof: literal(""), want: ErrMissingProof},
		{name: "blank DPoP header", proof: literal("  "), want: ErrMissingProof},
		{name: "two DPoP headers", proof: mutated(nil), req: func(r *Request) { r.Proofs = append(r.Proofs, r.Proofs[0]) }, want: ErrMultipleProofs},
		{name: "two proofs folded into one header", proof: mutated(nil), req: func(r *Request) { r.Proofs[0] += ", " + r.Proofs[0] }, want: ErrMultipleProofs},

		// Well-formed compact JWS.
		{name: "oversized", proof: literal(strings.Repeat("a", maxProofSize+1)), want: ErrMalformed},
		{name: "two parts", proof: literal("eyJhbGciOiJFUzI1NiJ9.e30"), want: ErrMalformed},
		{name: "four parts", proof: func(t *testing.T) string { return f.proof(t, nil) + ".x" }, want: ErrMalformed},
		{name: "header not base64url", proof: literal("eyJ0eXAi+/.e30.AA"), want: ErrMalformed},
		{name: "header padded", proof: literal("eyJ0eXAiOiJkcG9wK2p3dCJ9==.e30.AA"), want: ErrMalformed},
		{name: "header not json", proof: signed(`not json`, claimsJSON()), want: ErrMalformed},
		{name: "header json array", proof: signed(`["typ"]`, claimsJSON()), want: ErrMalformed},
		{name: "header json null", proof: signed(`null`, claimsJSON()), want: ErrMalformed},
		{name: "duplicate typ", proof: signed(`{"typ":"jwt","typ":"dpop+jwt","alg":"ES256","jwk":`+jwkJSON+`}`, claimsJSON()), want: ErrMalformed},
		{name: "duplicate alg", proof: signed(`{"typ":"dpop+jwt","alg":"ES256","alg":"none","jwk":`+jwkJSON+`}`, claimsJSON()), want: ErrMalformed},
		{name: "duplicate member inside jwk", proof: signed(`{"typ":"dpop+jwt","alg":"ES256","jwk":`+strings.Replace(jwkJSON, `{`, `{"kty":"RSA",`, 1)+`}`, claimsJSON()), want: ErrMalformed},
		{name: "crit header", proof: mutated(func(h, _ map[string]any) { h["crit"] = []string{"exp"} }), want: ErrMalformed},
		{name: "b64 header", proof: mutated(func(h, _ map[string]any) { h["b64"] = false }), want: ErrMalformed},
		{name: "claims not json", proof: signed(string(mustJSON(t, f.header(t))), `jti`), want: ErrMalformed},
		{name: "claims json array", proof: signed(string(mustJSON(t, f.header(t))), `[]`), want: ErrMalformed},
		{name: "duplicate claim", proof: signed(string(mustJSON(t, f.header(t))), `{"jti":"a","jti":"b","htm":"GET","htu":"`+testURL+`","iat":`+itoa(testNow.Unix())+`}`), want: ErrMalformed},
		{name: "jti not a string", proof: mutated(func(_, c map[string]any) { c["jti"] = 7 }), want: ErrMalformed},
		{name: "htm not a string", proof: mutated(func(_, c map[string]any) { c["htm"] = []string{"GET"} }), want: ErrMalformed},
		{name: "iat a string", proof: mutated(func(_, c map[string]any) { c["iat"] = itoa(testNow.Unix()) }), want: ErrMalformed},
		{name: "iat out of float range", proof: signed(string(mustJSON(t, f.header(t))), `{"jti":"a","htm":"GET","htu":"`+testURL+`","iat":1e300}`), want: ErrMalformed},
		{name: "nonce not a string", proof: mutated(func(_, c map[string]any) { c["nonce"] = true }), want: ErrMalformed},

		// typ.
		{name: "typ missing", proof: mutated(func(h, _ map[string]any) { delete(h, "typ") }), want: ErrType},
		{name: "typ jwt", proof: mutated(func(h, _ map[string]any) { h["typ"] = "JWT" }), want: ErrType},
		{name: "typ upper case", proof: mutated(func(h, _ map[string]any) { h["typ"] = "DPoP+JWT" }), want: ErrType},
		{name: "typ with application prefix", proof: mutated(func(h, _ map[string]any) { h["typ"] = "application/dpop+jwt" }), want: ErrType},
		{name: "typ not a string", proof: mutated(func(h, _ map[string]any) { h["typ"] = 1 }), want: ErrType},

		// alg.
		{name: "alg none", proof: func(t *testing.T) string {
			h := f.header(t)
			h["alg"] = "none"
			return forgeSign(t, "none", nil, mustJSON(t, h), mustJSON(t, f.claims()))
		}, want: ErrAlgorithm},
		{name: "alg HS256 with oct jwk", proof: func(t *testing.T) string {
			secret := []byte("0123456789abcdef0123456789abcdef")
			h := map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": map[string]any{"kty": "oct", "k": base64.RawURLEncoding.EncodeToString(secret)}}
			return forgeSign(t, "HS256", secret, mustJSON(t, h), mustJSON(t, f.claims()))
		}, want: ErrAlgorithm},
		{name: "alg HS256 keyed with the public jwk", proof: func(t *testing.T) string {
			h := f.header(t)
			h["alg"] = "HS256"
			return forgeSign(t, "HS256", []byte(jwkJSON), mustJSON(t, h), mustJSON(t, f.claims()))
		}, want: ErrAlgorithm},
		{name: "alg missing", proof: mutated(func(h, _ map[string]any) { delete(h, "alg") }), want: ErrAlgorithm},
		{name: "alg Ed25519 with an EC key", proof: mutated(func(h, _ map[string]any) { h["alg"] = "Ed25519" }), want: ErrKey},
		{name: "alg Ed25519 outside a narrowed list", proof: mutated(func(h, _ map[string]any) { h["alg"] = "Ed25519" }),
			opts: []Option{WithAlgorithms("ES256", "EdDSA")}, want: ErrAlgorithm},
		{name: "alg lower case", proof: mutated(func(h, _ map[string]any) { h["alg"] = "es256" }), want: ErrAlgorithm},
		{name: "alg ES512 not allowed by default", proof: mutated(func(h, _ map[string]any) { h["alg"] = "ES512" }), want: ErrAlgorithm},
		{name: "alg outside a narrowed list", proof: mutated(nil), opts: []Option{WithAlgorithms("EdDSA")}, want: ErrAlgorithm},

		// jwk.
		{name: "jwk missing", proof: mutated(func(h, _ map[string]any) { delete(h, "jwk") }), want: ErrKey},
		{name: "jwk a string", proof: mutated(func(h, _ map[string]any) { h["jwk"] = jwkJSON }), want: ErrKey},
		{name: "jwk unknown kty", proof: mutated(func(h, _ map[string]any) { h["jwk"] = map[string]any{"kty": "XYZ"} }), want: ErrKey},
		{name: "jwk point not on curve", proof: mutated(func(h, _ map[string]any) {
			h["jwk"].(map[string]any)["y"] = base64.RawURLEncoding.EncodeToString(make([]byte, 32))
		}), want: ErrKey},
		{name: "jwk symmetric without k", proof: mutated(func(h, _ map[string]any) { h["jwk"] = map[string]any{"kty": "oct"} }), want: ErrKey},
		{name: "jwk RSA for ES256", proof: mutated(func(h, _ map[string]any) { h["jwk"] = publicJWKMap(t, testRSA.Public()) }), want: ErrKey},
		{name: "jwk P-384 for ES256", proof: mutated(func(h, _ map[string]any) { h["jwk"] = publicJWKMap(t, p384.Public()) }), want: ErrKey},
		{name: "jwk Ed25519 for ES256", proof: mutated(func(h, _ map[string]any) { h["jwk"] = publicJWKMap(t, testEd.Public()) }), want: ErrKey},
		{name: "jwk RSA 1024 for PS256", proof: func(t *testing.T) string {
			h := map[string]any{"typ": "dpop+jwt", "alg": "PS256", "jwk": publicJWKMap(t, rsa1024.Public())}
			return forgeSign(t, "PS256", rsa1024, mustJSON(t, h), mustJSON(t, f.claims()))
		}, want: ErrKey},
		{name: "jwk private EC", proof: mutated(func(h, _ map[string]any) { h["jwk"] = privateJWKMap(t, f.key) }), want: ErrPrivateKey},
		{name: "jwk private RSA", proof: mutated(func(h, _ map[string]any) { h["jwk"] = privateJWKMap(t, testRSA) }), want: ErrPrivateKey},
		{name: "jwk private Ed25519", proof: mutated(func(h, _ map[string]any) { h["jwk"] = privateJWKMap(t, testEd) }), want: ErrPrivateKey},
		{name: "jwk public with a stray d", proof: mutated(func(h, _ map[string]any) { h["jwk"].(map[string]any)["d"] = "AA" }), want: ErrPrivateKey},
		{name: "jwk public with a stray p", proof: mutated(func(h, _ map[string]any) { h["jwk"].(map[string]any)["p"] = "AA" }), want: ErrPrivateKey},
		{name: "jwk symmetric with k", proof: mutated(func(h, _ map[string]any) { h["jwk"] = map[string]any{"kty": "oct", "k": "c2VjcmV0"} }), want: ErrPrivateKey},

		// Signature.
		{name: "signed by another key", proof: func(t *testing.T) string {
			return forgeSign(t, "ES256", other, mustJSON(t, f.header(t)), mustJSON(t, f.claims()))
		}, want: ErrSignature},
		{name: "signature altered", proof: func(t *testing.T) string {
			p := f.proof(t, nil)
			cut := strings.LastIndexByte(p, '.') + 1
			sig := unbase64(t, p[cut:])
			sig[10] ^= 0x01
			return p[:cut] + base64.RawURLEncoding.EncodeToString(sig)
		}, want: ErrSignature},
		{name: "signature empty", proof: func(t *testing.T) string {
			p := f.proof(t, nil)
			return p[:strings.LastIndexByte(p, '.')+1]
		}, want: ErrSignature},
		{name: "claims swapped after signing", proof: func(t *testing.T) string {
			a, b := strings.Split(f.proof(t, nil), "."), strings.Split(f.proof(t, func(_, c map[string]any) { c["htm"] = "POST" }), ".")
			return a[0] + "." + b[1] + "." + a[2]
		}, want: ErrSignature},

		// Required claims.
		{name: "jti missing", proof: mutated(func(_, c map[string]any) { delete(c, "jti") }), want: ErrMissingClaim},
		{name: "jti empty", proof: mutated(func(_, c map[string]any) { c["jti"] = "" }), want: ErrMissingClaim},
		{name: "htm missing", proof: mutated(func(_, c map[string]any) { delete(c, "htm") }), want: ErrMissingClaim},
		{name: "htu missing", proof: mutated(func(_, c map[string]any) { delete(c, "htu") }), want: ErrMissingClaim},
		{name: "iat missing", proof: mutated(func(_, c map[string]any) { delete(c, "iat") }), want: ErrMissingClaim},

		// One strict JSON rule (internal/strictjson): a member named in
		// another case is no member of the proof's to read, and beside
		// the member it makes the proof mean two things.
		{name: "jti in upper case only", proof: mutated(func(_, c map[string]any) { c["JTI"] = c["jti"]; delete(c, "jti") }), want: ErrMalformed},
		{name: "htm beside HTM", proof: mutated(func(_, c map[string]any) { c["HTM"] = "POST" }), want: ErrMalformed},
		{name: "htu beside hTU", proof: mutated(func(_, c map[string]any) { c["hTU"] = "https://evil.example.com/" }), want: ErrMalformed},
		{name: "typ beside Typ", proof: mutated(func(h, _ map[string]any) { h["Typ"] = "jwt" }), want: ErrMalformed},
		{name: "alg in upper case only", proof: mutated(func(h, _ map[string]any) { h["ALG"] = h["alg"]; delete(h, "alg") }), want: ErrMalformed},
		{name: "two unknown claims differing in case", proof: mutated(func(_, c map[string]any) { c["scope"] = "a"; c["Scope"] = "b" }), want: ErrMalformed},
		{name: "kty beside KTY in the jwk", proof: mutated(func(h, _ map[string]any) { h["jwk"].(map[string]any)["KTY"] = "oct" }), want: ErrKey},
		{name: "kty beside a Kelvin-sign variant in the jwk", proof: mutated(func(h, _ map[string]any) { h["jwk"].(map[string]any)["\u212aty"] = "oct" }), want: ErrKey},
		{name: "a private member in another case", proof: mutated(func(h, _ map[string]any) { h["jwk"].(map[string]any)["D"] = "AA" }), want: ErrKey},

		// htm, htu.
		{name: "htm other method", proof: mutated(func(_, c map[string]any) { c["htm"] = "POST" }), want: ErrMethod},
		{name: "htm lower case", proof: mutated(func(_, c map[string]any) { c["htm"] = "get" }), want: ErrMethod},
		{name: "htu other path", proof: mutated(func(_, c map[string]any) { c["htu"] = "https://rs.example.com/other" }), want: ErrURL},
		{name: "htu other host", proof: mutated(func(_, c map[string]any) { c["htu"] = "https://evil.example.com/resource" }), want: ErrURL},
		{name: "htu http instead of https", proof: mutated(func(_, c map[string]any) { c["htu"] = "http://rs.example.com/resource" }), want: ErrURL},
		{name: "htu other port", proof: mutated(func(_, c map[string]any) { c["htu"] = "https://rs.example.com:8443/resource" }), want: ErrURL},
		{name: "htu path case", proof: mutated(func(_, c map[string]any) { c["htu"] = "https://rs.example.com/Resource" }), want: ErrURL},
		{name: "htu relative", proof: mutated(func(_, c map[string]any) { c["htu"] = "/resource" }), want: ErrURL},
		{name: "request url relative", proof: mutated(nil), req: func(r *Request) { r.URL = "/resource" }, want: ErrURL},

		// iat window.
		{name: "iat too old", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() - 61 }), want: ErrIATTooOld},
		{name: "iat in the far past", proof: mutated(func(_, c map[string]any) { c["iat"] = int64(-9e18) }), want: ErrIATTooOld},
		{name: "iat zero", proof: mutated(func(_, c map[string]any) { c["iat"] = 0 }), want: ErrIATTooOld},
		{name: "iat in the future", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() + 11 }), want: ErrIATInFuture},
		{name: "iat in the far future", proof: mutated(func(_, c map[string]any) { c["iat"] = int64(9e18) }), want: ErrIATInFuture},
		{name: "iat outside a narrowed window", proof: mutated(func(_, c map[string]any) { c["iat"] = testNow.Unix() - 6 }), opts: []Option{WithIATWindow(5*time.Second, 0)}, want: ErrIATTooOld},

		// ath.
		{name: "ath missing", proof: mutated(func(_, c map[string]any) { delete(c, "ath") }), want: ErrTokenHash},
		{name: "ath of another token", proof: mutated(func(_, c map[string]any) { c["ath"] = TokenHash("other") }), want: ErrTokenHash},
		{name: "ath is the raw token", proof: mutated(func(_, c map[string]any) { c["ath"] = testToken }), want: ErrTokenHash},

		// Key binding.
		{name: "jkt of another key", proof: mutated(nil), req: func(r *Request) { r.JKT = thumbprintOf(t, other.Public()) }, want: ErrKeyMismatch},
		{name: "token without jkt", proof: mutated(nil), req: func(r *Request) { r.JKT = "" }, want: ErrKeyMismatch},
		{name: "proof problems reported before a missing jkt", proof: literal(""), req: func(r *Request) { r.Proofs, r.JKT = nil, "" }, want: ErrMissingProof},
		{name: "jkt without token, other key", proof: mutated(nil), req: func(r *Request) { r.AccessToken, r.JKT = "", thumbprintOf(t, other.Public()) }, want: ErrKeyMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newTestVerifier(t, tt.opts...)
			req := f.request(tt.proof(t))
			if tt.req != nil {
				tt.req(&req)
			}
			res, err := v.Verify(t.Context(), req)
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, res)
				if tt.verify != nil {
					tt.verify(t, res)
				}
				return
			}
			require.Nil(t, res)
			requireOnly(t, err, tt.want)
			assert.Zero(t, v.replay.len(), "a rejected proof is not recorded")
		})
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// privateJWKMap returns the full JWK of a private key, private members
// included, as a JSON object.
func privateJWKMap(t testing.TB, key any) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, jose.JSONWebKey{Key: key}), &m))
	return m
}

func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now))
	proof := f.proof(t, nil)

	verified(t, v, f.request(proof))
	_, err := v.Verify(t.Context(), f.request(proof))
	requireOnly(t, err, ErrReplay)

	// Same jti under another key is a different proof.
	loadKeys(t)
	h := map[string]any{"typ": "dpop+jwt", "alg": "EdDSA", "jwk": publicJWKMap(t, testEd.Public())}
	_, claims := decodeProof(t, proof)
	otherKey := forgeSign(t, "EdDSA", testEd, mustJSON(t, h), mustJSON(t, claims))
	req := f.request(otherKey)
	req.JKT = thumbprintOf(t, testEd.Public())
	verified(t, v, req)

	// Still a replay at the end of the window, and too old after it.
	clock.Advance(DefaultMaxAge)
	_, err = v.Verify(t.Context(), f.request(proof))
	requireOnly(t, err, ErrReplay)
	clock.Advance(time.Second)
	_, err = v.Verify(t.Context(), f.request(proof))
	requireOnly(t, err, ErrIATTooOld)
}

func TestVerifyClockStepBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(1))
	first := f.proof(t, nil)
	verified(t, v, f.request(first))

	// Later, a new proof purges the first from the cache.
	clock.Advance(2 * time.Minute)
	later := f.proof(t, func(_, c map[string]any) { c["iat"] = testNow.Add(2 * time.Minute).Unix() })
	verified(t, v, f.request(later))

	// The wall clock steps back: the first proof must not become fresh again.
	clock.Set(testNow)
	_, err := v.Verify(t.Context(), f.request(first))
	requireOnly(t, err, ErrIATTooOld)
}

// TestVerifyOneWrongClockReadingAhead: a wall clock read once while it was
// wrong ahead (a VM resumed before NTP corrected it, an operator's mistake
// undone at once) costs the proofs it made too old for that reading, not
// every proof until the real time passes it. The Verifier used to keep the
// latest reading as "now": an hour's step ahead, corrected at once,
// refused every DPoP caller for an hour. The proof that reading purged
// stays refused when the clock is right again.
func TestVerifyOneWrongClockReadingAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now))
	first := f.at(t, testNow)
	verified(t, v, f.request(first))

	clock.Set(testNow.Add(time.Hour)) // one request verified while the clock is an hour ahead
	_, err := v.Verify(t.Context(), f.request(f.at(t, testNow)))
	requireOnly(t, err, ErrIATTooOld)

	clock.Set(testNow.Add(time.Second)) // the clock is right again
	_, err = v.Verify(t.Context(), f.request(f.at(t, testNow.Add(time.Second))))
	require.NoError(t, err, "a fresh proof after the clock was corrected")
	_, err = v.Verify(t.Context(), f.request(first))
	require.Error(t, err, "the proof the wrong reading purged is not taken again")
}

// otherFixture is a fixture around a fresh P-256 key of its own.
func otherFixture(t testing.TB) fixture {
	k := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t)
	return fixture{key: k, jkt: thumbprintOf(t, k.Public())}
}

// at returns a proof of f issued at iat.
func (f fixture) at(t testing.TB, iat time.Time) string {
	return f.proof(t, func(_, c map[string]any) { c["iat"] = iat.Unix() })
}

// TestVerifyFullReplayCacheForgetsTheOldest: a full cache forgets its
// oldest proof and refuses what it can no longer tell from a replay (that
// proof, and any other no newer), never more: a newer proof of any key is
// accepted. It used to refuse every proof until entries expired, so
// whoever filled it denied DPoP to every caller for a minute.
func TestVerifyFullReplayCacheForgetsTheOldest(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(3))
	a, b := otherFixture(t), otherFixture(t)
	var olds []string
	for range 3 {
		p := a.at(t, testNow)
		olds = append(olds, p)
		verified(t, v, a.request(p))
	}

	clock.Advance(time.Second)
	_, err := v.Verify(t.Context(), b.request(b.at(t, clock.Now())))
	require.NoError(t, err, "a newer proof of another key is accepted")
	_, err = v.Verify(t.Context(), a.request(a.at(t, clock.Now())))
	require.NoError(t, err, "so is a newer proof of the key that filled the cache")
	assert.Equal(t, 3, v.replay.len(), "within its size")

	for _, p := range olds { // two forgotten, one still recorded
		_, err = v.Verify(t.Context(), a.request(p))
		require.Error(t, err, "a replay is never accepted")
		require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "%v", err)
	}
	_, err = v.Verify(t.Context(), a.request(a.at(t, testNow)))
	requireOnly(t, err, ErrReplayCacheFull) // as old as a forgotten one: cannot tell
	_, err = v.Verify(t.Context(), b.request(b.at(t, testNow)))
	requireOnly(t, err, ErrReplayCacheFull) // older than every proof kept

	// Once the entries expire the cache is whole again.
	clock.Advance(DefaultMaxAge + time.Second)
	verified(t, v, a.request(a.at(t, clock.Now())))
	assert.Equal(t, 1, v.replay.len())
}

// TestVerifyReplayKeyLimit: one key past its share of the cache forgets
// its own oldest proofs and refuses its own proofs no newer than them;
// another key's proofs of the very same second are accepted, however many
// the first key sends.
func TestVerifyReplayKeyLimit(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(100), WithReplayKeyLimit(3))
	flooder, other := otherFixture(t), otherFixture(t)
	first := flooder.at(t, testNow)
	verified(t, v, flooder.request(first))
	for range 2 {
		verified(t, v, flooder.request(flooder.at(t, testNow)))
	}
	_, err := v.Verify(t.Context(), flooder.request(flooder.at(t, testNow)))
	requireOnly(t, err, ErrReplayCacheFull) // its limit is reached within one second

	for range 10 {
		clock.Advance(time.Second)
		_, err = v.Verify(t.Context(), flooder.request(flooder.at(t, clock.Now())))
		require.NoError(t, err, "past its limit a key forgets its own oldest proofs")
	}
	assert.Equal(t, 3, v.replay.len())
	_, err = v.Verify(t.Context(), flooder.request(first))
	requireOnly(t, err, ErrReplayCacheFull) // forgotten, so refused

	for range 3 {
		_, err = v.Verify(t.Context(), other.request(other.at(t, testNow)))
		require.NoError(t, err, "another key keeps its whole window")
	}
}

// TestVerifyReplayCacheOfOneProofPerKey: when every key holds one proof
// the cache forgets the oldest key's, and from then on refuses every proof
// no newer than it, whatever its key, and only those.
func TestVerifyReplayCacheOfOneProofPerKey(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(3))
	keys := []fixture{otherFixture(t), otherFixture(t), otherFixture(t), otherFixture(t)}
	var firsts []string
	for _, k := range keys[:3] {
		p := k.at(t, testNow)
		firsts = append(firsts, p)
		verified(t, v, k.request(p))
	}
	clock.Advance(time.Second)
	verified(t, v, keys[3].request(keys[3].at(t, clock.Now())))
	for i, p := range firsts {
		_, err := v.Verify(t.Context(), keys[i].request(p))
		require.Error(t, err, "a replay is never accepted")
	}
	_, err := v.Verify(t.Context(), keys[3].request(keys[3].at(t, testNow)))
	requireOnly(t, err, ErrReplayCacheFull)
	verified(t, v, keys[0].request(keys[0].at(t, clock.Now())))
}

// TestCheckRecordsNothing: Check runs Verify's checks without recording,
// so a proof checked for a request whose caller then fails authentication
// may come again; Record records it once, and then both refuse it.
func TestCheckRecordsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(1))
	proof := f.proof(t, nil)
	for range 3 {
		testkit.Must(v.Check(t.Context(), f.request(proof)))(t)
	}
	_, err := v.Check(t.Context(), f.request(f.proof(t, nil)))
	require.NoError(t, err, "nothing checked filled the cache of one")
	assert.Zero(t, v.replay.len())

	res := testkit.Must(v.Check(t.Context(), f.request(proof)))(t)
	late := testkit.Must(v.Check(t.Context(), f.request(f.proof(t, nil))))(t)
	require.NoError(t, v.Record(res))
	requireOnly(t, v.Record(res), ErrReplay)
	_, err = v.Check(t.Context(), f.request(proof))
	requireOnly(t, err, ErrReplay)

	clock.Advance(DefaultMaxAge + time.Second)
	requireOnly(t, v.Record(late), ErrIATTooOld)
	require.Error(t, v.Record(nil))
	require.Error(t, v.Record(&Result{}))
}

func TestVerifyConcurrentReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	v := newTestVerifier(t)
	proofs := make([]string, 8)
	for i := range proofs {
		proofs[i] = f.proof(t, nil)
	}
	var accepted, replays atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		for _, p := range proofs {
			wg.Go(func() {
				_, err := v.Verify(context.Background(), f.request(p))
				switch {
				case err == nil:
					accepted.Add(1)
				case errors.Is(err, ErrReplay):
					replays.Add(1)
				}
			})
		}
	}
	wg.Wait()
	assert.EqualValues(t, len(proofs), accepted.Load(), "each proof accepted exactly once")
	assert.EqualValues(t, 3*len(proofs), replays.Load())
}

// fakeNonces accepts one current nonce and counts the nonces it mints.
type fakeNonces struct {
	current  string
	optional bool
	minted   atomic.Int32
	mintErr  error
}

func (n *fakeNonces) Valid(_ context.Context, nonce string) bool {
	if nonce == "" {
		return n.optional
	}
	return nonce == n.current
}

func (n *fakeNonces) Next(context.Context) (string, error) {
	n.minted.Add(1)
	if n.mintErr != nil {
		return "ignored", n.mintErr
	}
	return n.current, nil
}

func TestVerifyNonce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name      string
		nonces    *fakeNonces
		nonce     string
		want      error
		wantNonce string
		wantMint  bool
	}{
		{name: "current nonce accepted", nonces: &fakeNonces{current: "n-1"}, nonce: "n-1"},
		{name: "missing nonce", nonces: &fakeNonces{current: "n-1"}, want: ErrNonceRequired, wantNonce: "n-1", wantMint: true},
		{name: "stale nonce", nonces: &fakeNonces{current: "n-2"}, nonce: "n-1", want: ErrNonceStale, wantNonce: "n-2", wantMint: true},
		{name: "nonce optional right now", nonces: &fakeNonces{current: "n-1", optional: true}},
		{name: "minting fails", nonces: &fakeNonces{current: "n-1", mintErr: errors.New("store down")}, want: ErrNonceRequired, wantMint: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newTestVerifier(t, WithNonces(tt.nonces))
			proof := f.proof(t, func(_, c map[string]any) {
				if tt.nonce != "" {
					c["nonce"] = tt.nonce
				}
			})
			res, err := v.Verify(t.Context(), f.request(proof))
			assert.Equal(t, tt.wantMint, tt.nonces.minted.Load() > 0)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.nonce, res.Claims.Nonce)
				return
			}
			requireOnlyNonce(t, err, tt.want, tt.nonces.mintErr)
			var nerr *NonceError
			require.ErrorAs(t, err, &nerr)
			assert.Equal(t, tt.wantNonce, nerr.Nonce)
			assert.Equal(t, CodeUseNonce, ErrorCode(err))
			assert.Zero(t, v.replay.len(), "a proof refused for its nonce is not recorded")

			if tt.nonces.mintErr == nil {
				// The client retries with the nonce it was given.
				retry := f.proof(t, func(_, c map[string]any) { c["nonce"] = nerr.Nonce })
				verified(t, v, f.request(retry))
			}
		})
	}
}

func requireOnlyNonce(t *testing.T, err, want, mintErr error) {
	t.Helper()
	requireOnly(t, err, want)
	require.ErrorIs(t, err, ErrUseNonce)
	if mintErr != nil {
		require.ErrorIs(t, err, mintErr)
	}
}

func TestNewVerifierOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []Option
		wantErr  string
		wantAlgs []string
	}{
		{name: "defaults", wantAlgs: []string{"ES256", "ES384", "PS256", "RS256", "EdDSA", "Ed25519"}},
		{name: "narrowed and deduplicated", opts: []Option{WithAlgorithms("EdDSA", "ES256", "EdDSA")}, wantAlgs: []string{"EdDSA", "ES256"}},
		{name: "every supported algorithm", opts: []Option{WithAlgorithms("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA", "Ed25519")},
			wantAlgs: []string{"ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA", "Ed25519"}},
		{name: "nil option ignored", opts: []Option{nil}, wantAlgs: []string{"ES256", "ES384", "PS256", "RS256", "EdDSA", "Ed25519"}},
		{name: "none refused", opts: []Option{WithAlgorithms("ES256", "none")}, wantErr: `"none" is not an allowed DPoP algorithm`},
		{name: "HS256 refused", opts: []Option{WithAlgorithms("HS256")}, wantErr: `"HS256" is not an allowed`},
		{name: "unknown refused", opts: []Option{WithAlgorithms("ES256K")}, wantErr: `"ES256K" is not an allowed`},
		{name: "empty list refused", opts: []Option{WithAlgorithms()}, wantErr: "empty list"},
		{name: "zero max age refused", opts: []Option{WithIATWindow(0, time.Second)},
			wantErr: "dpop: WithIATWindow(0s, 1s): maxAge must be from 1s to 1h0m0s and maxSkew from 0 to 1h0m0s"},
		{name: "negative skew refused", opts: []Option{WithIATWindow(time.Second, -time.Second)}, wantErr: "WithIATWindow(1s, -1s): maxAge must be from 1s"},
		// iat counts whole seconds: a shorter maxAge refuses proofs of this very second.
		{name: "a max age under a second refused", opts: []Option{WithIATWindow(999*time.Millisecond, 0)}, wantErr: "WithIATWindow(999ms, 0s)"},
		// a window of years, or math.MaxInt64 as "no bound", keeps every proof valid
		// and its record for as long.
		{name: "a max age past an hour refused", opts: []Option{WithIATWindow(math.MaxInt64, 0)}, wantErr: "WithIATWindow(2562047h47m16.854775807s, 0s)"},
		{name: "a skew past an hour refused", opts: []Option{WithIATWindow(time.Minute, time.Hour+time.Second)}, wantErr: "WithIATWindow(1m0s, 1h0m1s)"},
		{name: "the widest window", opts: []Option{WithIATWindow(time.Hour, time.Hour)}, wantAlgs: []string{"ES256", "ES384", "PS256", "RS256", "EdDSA", "Ed25519"}},
		{name: "the narrowest window", opts: []Option{WithIATWindow(time.Second, 0)}, wantAlgs: []string{"ES256", "ES384", "PS256", "RS256", "EdDSA", "Ed25519"}},
		{name: "nil clock refused", opts: []Option{WithClock(nil)}, wantErr: "nil clock"},
		{name: "zero cache refused", opts: []Option{WithReplayCacheSize(0)}, wantErr: "dpop: WithReplayCacheSize(0): size must be from 1 to 10000000"},
		// a-client13 F3's rule: one key at its limit would make the Verifier
		// allocate marks for the whole size at once.
		{name: "a cache past its bound refused", opts: []Option{WithReplayCacheSize(1 << 30)}, wantErr: "WithReplayCacheSize(1073741824): size must be from 1 to 10000000"},
		{name: "the largest cache", opts: []Option{WithReplayCacheSize(10_000_000)}, wantAlgs: []string{"ES256", "ES384", "PS256", "RS256", "EdDSA", "Ed25519"}},
		{name: "zero key limit refused", opts: []Option{WithReplayKeyLimit(0)}, wantErr: "limit must be positive"},
		{name: "nil nonces refused", opts: []Option{WithNonces(nil)}, wantErr: "nil Nonces"},
		{name: "nil replay store refused", opts: []Option{WithReplayStore(nil)}, wantErr: "WithReplayStore: nil ReplayStore"},
		// A bound below RFC 7518's 2048 bits or above the Signer's 8192.
		{name: "no RSA bound refused", opts: []Option{WithMaxRSABits(0)}, wantErr: "WithMaxRSABits"},
		{name: "an RSA bound below 2048 refused", opts: []Option{WithMaxRSABits(2047)}, wantErr: "WithMaxRSABits"},
		{name: "an RSA bound above 8192 refused", opts: []Option{WithMaxRSABits(8193)}, wantErr: "WithMaxRSABits"},
		{name: "all errors reported", opts: []Option{WithClock(nil), WithReplayCacheSize(-1)}, wantErr: "nil clock\ndpop: WithReplayCacheSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(tt.opts...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.True(t, strings.HasPrefix(err.Error(), "dpop: "))
				assert.Nil(t, v)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantAlgs, v.Algorithms())
		})
	}
}

func TestVerifyZeroVerifier(t *testing.T) {
	t.Parallel()
	var v Verifier
	_, err := v.Verify(t.Context(), Request{Proofs: []string{"x"}})
	require.Error(t, err)
}

func TestChallengeAndErrorCode(t *testing.T) {
	t.Parallel()
	v := newTestVerifier(t, WithAlgorithms("ES256", "EdDSA"))
	tests := []struct {
		name      string
		err       error
		wantCode  string
		challenge string
	}{
		{name: "no error", err: nil, wantCode: "", challenge: `DPoP algs="ES256 EdDSA"`},
		{name: "proof too old", err: ErrIATTooOld, wantCode: CodeInvalidProof,
			challenge: `DPoP error="invalid_dpop_proof", error_description="proof is too old", algs="ES256 EdDSA"`},
		{name: "wrapped malformed", err: errors.Join(errors.New("context"), ErrMalformed), wantCode: CodeInvalidProof,
			challenge: `DPoP error="invalid_dpop_proof", error_description="malformed DPoP proof", algs="ES256 EdDSA"`},
		{name: "nonce required", err: &NonceError{Err: ErrNonceRequired, Nonce: "n"}, wantCode: CodeUseNonce,
			challenge: `DPoP error="use_dpop_nonce", error_description="nonce required", algs="ES256 EdDSA"`},
		{name: "nonce stale", err: &NonceError{Err: ErrNonceStale, Nonce: "n"}, wantCode: CodeUseNonce,
			challenge: `DPoP error="use_dpop_nonce", error_description="nonce is invalid or stale", algs="ES256 EdDSA"`},
		{name: "key binding", err: ErrKeyMismatch, wantCode: CodeInvalidToken,
			challenge: `DPoP error="invalid_token", error_description="proof key does not match the token binding", algs="ES256 EdDSA"`},
		{name: "unknown error fails closed", err: errors.New("boom"), wantCode: CodeInvalidProof,
			challenge: `DPoP error="invalid_dpop_proof", error_description="invalid DPoP proof", algs="ES256 EdDSA"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.wantCode, ErrorCode(tt.err))
			assert.Equal(t, tt.challenge, v.Challenge(tt.err))
		})
	}

	t.Run("every sentinel has a header-safe description", func(t *testing.T) {
		t.Parallel()
		for _, s := range sentinels {
			d := ErrorDescription(s)
			assert.NotEmpty(t, d)
			assert.NotContains(t, d, `"`)
			assert.NotContains(t, d, `\`)
			assert.NotContains(t, d, "dpop: ")
		}
	})
}
