package pep_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackBodyRefusalPastASyntaxErrorIsResentAway (a-dpop15 F1, end to
// end): the gateway refuses a revoked DPoP token with a 401 whose JSON body
// says "error":"invalid_token", beside (or after) a nonce request, and
// offers a new DPoP-Nonce. bodyErrors stops at the body's first byte that
// encoding/json refuses (a raw tab a gateway echoed into a message, a
// leading zero, a body cut at MaxBody) and drops every member after it, so
// the invalid_token is never read: the answer is taken for a nonce request,
// resent away, and the same refusal to the resend ends as ErrProofRejected
// (no verdict on the token). The token is never retired: its cached GRANT
// keeps being served while the gateway refuses it on every request.
func TestAttackBodyRefusalPastASyntaxErrorIsResentAway(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 1<<20)
	for _, tc := range []struct{ name, challenge, body string }{
		{"control (well-formed)", `DPoP realm="gw", error="use_dpop_nonce"`,
			`{"message":"proof for GET https://api/","error":"invalid_token"}`},
		{"raw tab in message, nonce challenge", `DPoP realm="gw", error="use_dpop_nonce"`,
			"{\"message\":\"proof for GET\thttps://api/\",\"error\":\"invalid_token\"}"},
		{"raw tab, nonce then refusal in the body", `DPoP realm="gw", algs="ES256"`,
			"{\"error\":\"use_dpop_nonce\",\"message\":\"a\tb\",\"error\":\"invalid_token\"}"},
		{"leading zero, nonce challenge", `DPoP error="use_dpop_nonce"`,
			`{"code":0401,"error":"invalid_token"}`},
		{"refusal past MaxBody, nonce challenge", `DPoP error="use_dpop_nonce"`,
			`{"trace":"` + pad + `","error":"invalid_token"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			var nonce atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := io.ReadAll(r.Body)
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", tc.challenge)
					w.Header().Set("DPoP-Nonce", "n"+string(rune('a'+nonce.Add(1)%26)))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				scope := "read"
				if strings.Contains(string(req), `"write"`) {
					scope = "write"
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"` + scope + `","status":"GRANT"}]}`))
			}))
			defer srv.Close()

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()))
			c.SetDPoPToken("dpop-bound-token", signer)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "cached GRANT")

			revoked.Store(true)
			for range 3 { // the gateway refuses the token on every request
				d, err = c.Check(t.Context(), "orders", "write")
				if err == nil {
					err = d.Cause
				}
				require.Error(t, err)
			}
			t.Logf("the refused call's error: %v", err)
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body's \"error\" is invalid_token")

			d, err = c.Check(t.Context(), "orders", "read")
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached GRANT is still served")
		})
	}
}
