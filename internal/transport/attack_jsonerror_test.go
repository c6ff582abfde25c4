package transport

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackBodyErrorReadOneWayOnly (a-fix14b F1): the body's RFC 9449
// "error" member is read with encoding/json, which matches member names in
// any case and keeps the last of duplicates. So a 401 body whose "error"
// member says invalid_token (or says nothing of DPoP) is read as a proof
// or nonce error when another member spelled "error" in another case, or
// a second "error", follows. The stated precedence is "invalid_token in
// any challenge or in the body wins": the token must be refused (and not
// resent for a nonce), whatever else the body holds.
func TestAttackBodyErrorReadOneWayOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ask   asking
		nonce string
	}{
		{name: "duplicate error members, invalid_token first",
			ask: asking{body: `{"error":"invalid_token","error":"use_dpop_nonce"}`}},
		{name: "invalid_token then Error in another case",
			ask: asking{body: `{"error":"invalid_token","Error":"invalid_dpop_proof"}`}},
		{name: "the server's own error then ERROR asking a nonce",
			ask: asking{body: `{"error":"Unauthorized","ERROR":"use_dpop_nonce"}`}},
		{name: "under a nonce challenge with a new nonce: not resent",
			ask:   asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"error":"invalid_token","Error":"use_dpop_nonce"}`},
			nonce: "n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := &scripted{steps: []step{{http.StatusUnauthorized, tt.nonce}, {http.StatusOK, ""}}, ask: &tt.ask}
			x := scriptedExchanger(rt)
			x.Retry.Max = 0
			_, err := x.Post(t.Context(), nonceCredential{}, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
			assert.Equal(t, []string{""}, rt.sent, "a 401 whose body's error refuses the token is not resent")
			require.Error(t, err, "the call was granted after the resend")
			assert.ErrorIs(t, err, ErrUnauthorized, "the body's \"error\" refuses the token: it must be retired")
			assert.NotErrorIs(t, err, ErrProofRejected)
		})
	}
}
