package dpop

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVerifyDecodesEveryPartStrictly: a proof has one encoding. The
// header, the payload and the signature are each refused when re-encoded
// with an unused trailing bit set, with padding or with a line break
// (which encoding/base64 skips even when strict), even where the signature
// covers the re-encoded text: a signature's trailing bits, which no
// signature covers, let anyone who saw a proof re-encode it. The
// payload and the signature were decoded leniently, and took all these.
func TestVerifyDecodesEveryPartStrictly(t *testing.T) {
	loadKeys(t)
	const iat = 1700000000
	enc := base64.RawURLEncoding.EncodeToString
	jwk := publicJWKMap(t, testP256.Public())
	jwk["kid"] = "k1" // so that the header's length is not a multiple of 3 bytes
	hdr := enc(mustJSON(t, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}))
	payload := enc([]byte(`{"jti":"strict-decoding","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`))
	// sign returns input with its ES256 signature, as a compact JWS.
	sign := func(input string) string {
		t.Helper()
		d := sha256.Sum256([]byte(input))
		der, err := ecdsa.SignASN1(rand.Reader, testP256, d[:])
		require.NoError(t, err)
		sig, err := ecdsaDERToJWS(der, 32)
		require.NoError(t, err)
		return input + "." + enc(sig)
	}
	// Each part must have unused trailing bits for the test to mean
	// anything: its length is not a multiple of 4 characters.
	for _, part := range []string{hdr, payload, sign(hdr + "." + payload)[len(hdr)+len(payload)+2:]} {
		require.NotZero(t, len(part)%4, "a part without unused bits")
	}
	bitSet := func(part string) string { return part[:len(part)-1] + unusedBitSet(part[len(part)-1]) }
	lineBreak := func(part string) string { return part[:10] + "\n" + part[10:] }
	padded := func(part string) string {
		for len(part)%4 != 0 {
			part += "="
		}
		return part
	}
	// signedAs returns a proof of header and payload as given, signed over
	// that text; withSig one whose signature part is changed by edit.
	signedAs := func(h, p string) string { return sign(h + "." + p) }
	withSig := func(edit func(string) string) string {
		proof := sign(hdr + "." + payload)
		cut := len(hdr) + len(payload) + 2
		return proof[:cut] + edit(proof[cut:])
	}

	for _, tc := range []struct {
		name     string
		proof    string
		accepted bool
	}{
		{"canonical", signedAs(hdr, payload), true},
		{"signature with an unused bit set", withSig(bitSet), false},
		{"signature with a line break", withSig(lineBreak), false},
		{"signature padded", withSig(padded), false},
		{"payload with an unused bit set, signed as sent", signedAs(hdr, bitSet(payload)), false},
		{"payload with a line break, signed as sent", signedAs(hdr, lineBreak(payload)), false},
		{"payload padded, signed as sent", signedAs(hdr, padded(payload)), false},
		{"header with an unused bit set, signed as sent", signedAs(bitSet(hdr), payload), false},
		{"header with a line break, signed as sent", signedAs(lineBreak(hdr), payload), false},
		{"header padded, signed as sent", signedAs(padded(hdr), payload), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A verifier per case: the proofs share one jti.
			v := mustVerifier(t, WithClock(func() time.Time { return time.Unix(iat, 0) }))
			_, err := v.Verify(t.Context(), Request{Proofs: []string{tc.proof}, Method: "GET", URL: "https://rs.example/r"})
			if tc.accepted {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrMalformed)
		})
	}
}
