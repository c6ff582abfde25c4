package dpop

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

// TestVerifyRefusesEveryJWKGoJoseRefuses: encodings of one valid key that
// a JWK parser may judge differently. The Verifier accepts exactly the
// ones listed as accepted, and never one that go-jose (the JOSE library
// most Go services hold, and this package's former parser) refuses: a key
// is one key to every reader. Padding is refused (RFC 7515 section 2
// base64url has none), as by go-jose.
func TestVerifyRefusesEveryJWKGoJoseRefuses(t *testing.T) {
	loadKeys(t)
	m := publicJWKMap(t, testP256.Public())
	x, y := m["x"].(string), m["y"].(string)
	xb := unbase64(t, x)
	ec := func(x, y string) string { return fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, x, y) }
	v := mustVerifier(t, WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	for _, tc := range []struct {
		name, jwk string
		accepted  bool
		want      error // when not accepted; ErrKey when nil
	}{
		{"plain", ec(x, y), true, nil},
		{"padded x", ec(x+"=", y), false, nil},
		{"padded y", ec(x, y+"="), false, nil},
		{"padded twice", ec(x+"==", y), false, nil},
		{"x with a line break", fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":"%s\n%s","y":%q}`, x[:10], x[10:], y), true, nil},
		{"x in standard base64", ec(base64.StdEncoding.EncodeToString(xb), y), false, nil},
		{"x with non-zero unused bits", ec(x[:42]+unusedBitSet(x[42]), y), true, nil}, // the same bytes
		{"x with another last character", ec(x[:42]+otherValue(x[42]), y), false, nil},
		{"x of 33 bytes", ec(base64.RawURLEncoding.EncodeToString(append([]byte{0}, xb...)), y), false, nil},
		{"kty escaped", fmt.Sprintf(`{"kty":"\u0045C","crv":"P-256","x":%q,"y":%q}`, x, y), true, nil},
		{"alg and use members", fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"alg":"HS256","use":"enc"}`, x, y), true, nil},
		{"x5u and kid members", fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"x5u":"https://evil/","kid":"k"}`, x, y), true, nil},
		{"d null", fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"d":null}`, x, y), false, ErrPrivateKey},
		{"crv in lower case", fmt.Sprintf(`{"kty":"EC","crv":"p-256","x":%q,"y":%q}`, x, y), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := `{"typ":"dpop+jwt","alg":"ES256","jwk":` + tc.jwk + `}`
			claims := `{"jti":"j-` + strings.ReplaceAll(tc.name, " ", "") + `","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`
			p := forgeSign(t, "ES256", testP256, []byte(hdr), []byte(claims))
			_, err := v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: "https://rs.example/r"})
			if tc.accepted {
				require.NoError(t, err)
			} else {
				want := tc.want
				if want == nil {
					want = ErrKey
				}
				require.ErrorIs(t, err, want)
			}
			var k jose.JSONWebKey
			if k.UnmarshalJSON([]byte(tc.jwk)) != nil || !k.Valid() {
				require.Error(t, err, "go-jose refuses this jwk")
			}
		})
	}
}

const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// unusedBitSet returns the last character of a 32-byte value's base64url
// (43 characters, the last 2 of 258 bits unused) with an unused bit set.
func unusedBitSet(c byte) string { return string(b64url[strings.IndexByte(b64url, c)|1]) }

// otherValue returns a last character that changes the value's last byte.
func otherValue(c byte) string { return string(b64url[strings.IndexByte(b64url, c)^4]) }
