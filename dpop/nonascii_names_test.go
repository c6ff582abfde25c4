package dpop

import (
	"fmt"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestVerifyTakesNonASCIIValuesAndExtensionNames: a valid proof (RFC 9449;
// RFC 7515 and 7519 have unknown header parameters and claims ignored) whose
// values, or whose extension members' names, are not ASCII is taken: only a
// name holding a letter some reader takes for ASCII letters (ı, ſ, ß) could
// name a known member, and only such a name is refused.
func TestVerifyTakesNonASCIIValuesAndExtensionNames(t *testing.T) {
	loadKeys(t)
	m := publicJWKMap(t, testP256.Public())
	jwk := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, m["x"], m["y"])
	v := testkit.Must(NewVerifier(WithClock(func() time.Time { return time.Unix(1700000000, 0) })))(t)
	for i, tc := range []struct {
		name, header, claims string
	}{
		{"non-ASCII jti value", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"é-ı-ß-%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`},
		{"non-ASCII escaped jti value", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"\u00e9-%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`},
		{"non-ASCII kid value in header", `{"typ":"dpop+jwt","alg":"ES256","kid":"clé","jwk":` + jwk + `}`, `{"jti":"a%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`},
		{"non-ASCII private claim value", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"b%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000,"loc":"Zürich"}`},
		{"non-ASCII names inside an extension claim object", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"c%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000,"ext":{"région":"x"}}`},
		{"non-ASCII private claim name", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"d%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000,"région":"eu"}`},
		{"non-ASCII header parameter name", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"x-région":"eu"}`, `{"jti":"e%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`},
		{"non-ASCII jwk member name", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk[:len(jwk)-1] + `,"x-région":"eu"}}`, `{"jti":"f%d","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := forgeSign(t, "ES256", testP256, []byte(tc.header), fmt.Appendf(nil, tc.claims, i))
			if _, err := v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: "https://rs.example/r"}); err != nil {
				t.Errorf("valid proof refused: %v", err)
			}
		})
	}
}
