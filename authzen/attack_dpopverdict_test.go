package authzen_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
)

// TestAttackPDPRefusalReadTwoWays (a-dpop15 F1 and F3, authzen): the PDP
// refuses a revoked DPoP token on every request, with a new DPoP-Nonce
// each time, in answers the transport reads as no refusal: a 401 whose
// body's invalid_token follows a byte encoding/json refuses (a raw tab) or
// lies past MaxBody, beside a nonce challenge (resent away, then
// ErrProofRejected), or a 400 whose challenge says invalid_token (not
// resent because it refuses the token, then not blamed because it is not
// a 401). The token is never retired and its cached allow is served.
func TestAttackPDPRefusalReadTwoWays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, challenge, body string
		status                int
	}{
		{"control: 401 well-formed body", `DPoP error="use_dpop_nonce"`, `{"message":"a b","error":"invalid_token"}`, 401},
		{"401 raw tab before the body's invalid_token", `DPoP error="use_dpop_nonce"`, "{\"message\":\"a\tb\",\"error\":\"invalid_token\"}", 401},
		{"401 invalid_token past MaxBody", `DPoP error="use_dpop_nonce"`, `{"trace":"` + strings.Repeat("x", 1<<20) + `","error":"invalid_token"}`, 401},
		{"400 invalid_token challenge", `DPoP realm="pdp", error="invalid_token"`, `{"error":"Bad Request"}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			var nonce atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", tc.challenge)
					w.Header().Set("DPoP-Nonce", "n"+string(rune('a'+nonce.Add(1)%26)))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"decision":true}`))
			}))
			defer srv.Close()

			c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
				authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", signer)
			cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
				Resource: authzen.Resource{Type: "document", ID: "42"}}
			d, err := c.Evaluate(t.Context(), cached)
			require.NoError(t, err)
			require.True(t, d.Allowed(), "cached allow")

			revoked.Store(true)
			miss := cached
			for i := range 3 {
				miss.Resource.ID = "miss-" + string(rune('0'+i))
				d, err = c.Evaluate(t.Context(), miss)
				if err == nil {
					err = d.Cause
				}
				require.Error(t, err)
			}
			t.Logf("the refused evaluation's error: %v", err)
			assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP refused the token")

			d, err = c.Evaluate(t.Context(), cached)
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
		})
	}
}
