package transport

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAttackErrorNameContradictsTheVerdict (a-dpop15 F5): the verdict of a
// 401 to a DPoP request reads every top-level member named exactly
// "error" (bodyErrors), but ResponseError.ErrorName, the text the error and
// every log line show, is what encoding/json keeps: the last member whose
// name matches "error" in any case. So the error's text names one DPoP
// error while errors.Is answers the other: a refusal of the token that
// reads "(use_dpop_nonce)", a proof rejection that reads "(invalid_token)".
// One answer, two readings, and an operator told the opposite of what the
// client did.
func TestAttackErrorNameContradictsTheVerdict(t *testing.T) {
	for _, body := range []string{
		`{"error":"invalid_token","error":"use_dpop_nonce"}`,
		`{"error":"use_dpop_nonce","Error":"invalid_token"}`,
		`{"error":"invalid_dpop_proof","ERROR":"invalid_token"}`,
	} {
		t.Run(body, func(t *testing.T) {
			resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
			resp.Header.Set("WWW-Authenticate", `DPoP realm="gw", algs="ES256"`)
			e := Peer("").NewResponseError(resp, []byte(body), Ident{Scheme: SchemeDPoP, Token: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"})
			refused := errors.Is(e, ErrUnauthorized)
			t.Logf("%s -> %q, ErrUnauthorized=%v", body, e.Error(), refused)
			switch e.ErrorName {
			case "invalid_token":
				assert.True(t, refused, "the text says invalid_token but the client took it for the proof's fault: %s", e)
			case "use_dpop_nonce", "invalid_dpop_proof":
				assert.False(t, refused, "the text says %s but the client retired the token: %s", e.ErrorName, e)
			}
		})
	}
}
