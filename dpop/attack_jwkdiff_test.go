package dpop

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// TestAttackJWKEncodingsVsGoJose: encodings of one valid key that the
// new reader and go-jose's JWK parser (the old verifier's) may judge
// differently. Reported as a table; a case the new Verifier accepts and
// go-jose refuses is a behaviour change to look at (not a forgery: the
// key is the signer's own).
func TestAttackJWKEncodingsVsGoJose(t *testing.T) {
	loadKeys(t)
	m := publicJWKMap(t, testP256.Public())
	x, y := m["x"].(string), m["y"].(string)
	xb, _ := base64.RawURLEncoding.DecodeString(x)
	cases := map[string]string{
		"plain":           fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, x, y),
		"padded x":        fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, x+"=", y),
		"x with \\n":      fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":"%s\n%s","y":%q}`, x[:10], x[10:], y),
		"x std base64":    fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, base64.StdEncoding.EncodeToString(xb), y),
		"x trailing bits": fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, x[:42]+string(x[42]^1), y),
		"x 33 bytes":      fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, base64.RawURLEncoding.EncodeToString(append([]byte{0}, xb...)), y),
		"kty escaped":     fmt.Sprintf(`{"kty":"\u0045C","crv":"P-256","x":%q,"y":%q}`, x, y),
		"alg member":      fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"alg":"HS256","use":"enc"}`, x, y),
		"x5u jku in jwk":  fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"x5u":"https://evil/","kid":"k"}`, x, y),
		"d null":          fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"d":null}`, x, y),
		"crv lower":       fmt.Sprintf(`{"kty":"EC","crv":"p-256","x":%q,"y":%q}`, x, y),
	}
	v, _ := NewVerifier(WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	for name, jwk := range cases {
		hdr := `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`
		claims := `{"jti":"j-` + strings.ReplaceAll(name, " ", "") + `","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`
		p := forgeSign(t, "ES256", testP256, []byte(hdr), []byte(claims))
		_, newErr := v.Verify(context.Background(), Request{Proofs: []string{p}, Method: "GET", URL: "https://rs.example/r"})
		var k jose.JSONWebKey
		oldErr := k.UnmarshalJSON([]byte(jwk))
		if oldErr == nil && !k.Valid() {
			oldErr = fmt.Errorf("invalid")
		}
		flag := ""
		if newErr == nil && oldErr != nil {
			flag = "  <-- new accepts, go-jose refuses"
		}
		t.Logf("%-16s new=%v go-jose=%v%s", name, newErr, oldErr, flag)
	}
}
