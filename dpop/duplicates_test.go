package dpop

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVerifyRefusesDuplicateMembersUnderAnySpelling: a member given twice
// under two spellings of one name (JSON escapes), or in another case
// (Unicode folding included), in the header, the jwk or the claims, makes
// the proof malformed (a key error within the jwk), as does anything after
// the header's JSON: no two readers can see two proofs in it.
func TestVerifyRefusesDuplicateMembersUnderAnySpelling(t *testing.T) {
	loadKeys(t)
	m := publicJWKMap(t, testP256.Public())
	jwk := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, m["x"], m["y"])
	other := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, m["y"], m["x"])
	claims := `{"jti":"a","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`
	v := mustVerifier(t, WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	for _, tc := range []struct {
		name, header, claims string
		want                 error
	}{
		{"jwk escaped twice", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"\u006awk":` + other + `}`, claims, ErrMalformed},
		{"alg escaped twice", `{"typ":"dpop+jwt","alg":"ES256","\u0061lg":"none","jwk":` + jwk + `}`, claims, ErrMalformed},
		{"kty in jwk twice", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk[:len(jwk)-1] + `,"\u006bty":"oct"}}`, claims, ErrMalformed},
		{"htm escaped twice", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","\u0068tm":"POST","htu":"https://rs.example/r","iat":1700000000}`, ErrMalformed},
		{"Jwk case variant", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"JWK":` + other + `}`, claims, ErrMalformed},
		{"HTM variant", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","HTM":"x","htu":"https://rs.example/r","iat":1700000000}`, ErrMalformed},
		{"Kelvin sign in the jwk's kty", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk[:len(jwk)-1] + `,"\u212aty":"oct"}}`, claims, ErrKey},
		{"nested duplicate in the header", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"ext":{"a":1,"a":2}}`, claims, ErrMalformed},
		{"iat twice", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","htu":"https://rs.example/r","iat":1700000000,"iat":1}`, ErrMalformed},
		{"data after the header", `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}{}`, claims, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := forgeSign(t, "ES256", testP256, []byte(tc.header), []byte(tc.claims))
			_, err := v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: "https://rs.example/r"})
			require.ErrorIs(t, err, tc.want)
		})
	}
}
