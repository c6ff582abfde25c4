package dpop

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestAttackEscapedDuplicateMembers: a member given twice under two
// spellings of one name (JSON escapes), or in another case, in the header,
// the jwk or the claims, is refused.
func TestAttackEscapedDuplicateMembers(t *testing.T) {
	loadKeys(t)
	m := publicJWKMap(t, testP256.Public())
	jwk := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, m["x"], m["y"])
	other := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, m["y"], m["x"])
	claims := `{"jti":"a","htm":"GET","htu":"https://rs.example/r","iat":1700000000}`
	cases := map[string][2]string{
		"jwk escaped twice":  {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"\u006awk":` + other + `}`, claims},
		"alg escaped twice":  {`{"typ":"dpop+jwt","alg":"ES256","\u0061lg":"none","jwk":` + jwk + `}`, claims},
		"kty in jwk twice":   {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk[:len(jwk)-1] + `,"\u006bty":"oct"}}`, claims},
		"htm escaped twice":  {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","\u0068tm":"POST","htu":"https://rs.example/r","iat":1700000000}`},
		"Jwk case variant":   {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"JWK":` + other + `}`, claims},
		"HTM variant":        {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","HTM":"x","htu":"https://rs.example/r","iat":1700000000}`},
		"kelvin in jwk kty":  {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk[:len(jwk)-1] + `,"\u212aty":"oct"}}`, claims},
		"nested dup in hdr":  {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `,"ext":{"a":1,"a":2}}`, claims},
		"iat twice":          {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`, `{"jti":"a","htm":"GET","htu":"https://rs.example/r","iat":1700000000,"iat":1}`},
		"trailing after hdr": {`{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}{}`, claims},
	}
	v, _ := NewVerifier(WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	for name, c := range cases {
		p := forgeSign(t, "ES256", testP256, []byte(c[0]), []byte(c[1]))
		if _, err := v.Verify(context.Background(), Request{Proofs: []string{p}, Method: "GET", URL: "https://rs.example/r"}); err == nil {
			t.Errorf("BREAK: %s accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
