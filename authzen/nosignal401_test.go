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

// TestAPDPRefusalNamingNoDPoPErrorIsNotResent (a-fix14b F2, authzen):
// a PDP 401 with no DPoP signal refuses the token (the blame), but carrying
// a new DPoP-Nonce it is resent as a possible nonce request; when the
// resend meets a 503 the refusal is lost: the token is not retired and its
// cached allow keeps being served. The control (no nonce) retires it.
//
// a-dpop15 F1 and F3, the same refusals read two ways: a 401 whose body
// names invalid_token after a byte encoding/json refuses (a raw tab), or
// past MaxBody, beside a nonce challenge (resent away, then
// ErrProofRejected), and a 400 whose challenge or body says invalid_token
// (not resent, then not blamed: not a 401). Now one reading: a body not
// read whole is unclear, a resend clears it only with a 2xx, and an
// unclear 401, or any answer naming invalid_token, refuses the token.
func TestAPDPRefusalNamingNoDPoPErrorIsNotResent(t *testing.T) {
	t.Parallel()
	const noSignal = `{"error":"Unauthorized","message":"the token was revoked"}`
	for _, tc := range []struct {
		name, challenge, nonce, body string
		status                       int
	}{
		{"401 without a nonce (control)", `DPoP realm="pdp", algs="ES256"`, "", noSignal, 401},
		{"401 with a new nonce", `DPoP realm="pdp", algs="ES256"`, "fresh-nonce-1", noSignal, 401},
		{"401 asking a nonce, its body well-formed (control)", `DPoP error="use_dpop_nonce"`, "fresh-nonce-1",
			`{"message":"a b","error":"invalid_token"}`, 401},
		{"401 asking a nonce, a raw tab before the body's invalid_token", `DPoP error="use_dpop_nonce"`, "fresh-nonce-1",
			"{\"message\":\"a\tb\",\"error\":\"invalid_token\"}", 401},
		{"401 asking a nonce, the body's invalid_token past MaxBody", `DPoP error="use_dpop_nonce"`, "fresh-nonce-1",
			`{"trace":"` + strings.Repeat("x", 1<<20) + `","error":"invalid_token"}`, 401},
		{"400 whose challenge says invalid_token", `DPoP realm="pdp", error="invalid_token"`, "fresh-nonce-1", `{"error":"Bad Request"}`, 400},
		{"400 whose body says invalid_token", `DPoP realm="pdp", algs="ES256"`, "fresh-nonce-1", `{"error":"invalid_token"}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			var afterRefusal atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				if revoked.Load() {
					if afterRefusal.Add(1) > 1 {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					w.Header().Set("WWW-Authenticate", tc.challenge)
					if tc.nonce != "" {
						w.Header().Set("DPoP-Nonce", tc.nonce)
					}
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
			miss.Resource.ID = "43"
			d, err = c.Evaluate(t.Context(), miss)
			if err == nil {
				err = d.Cause
			}
			require.Error(t, err)
			t.Logf("the refused evaluation's error: %v", err)
			assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP refused the token")

			d, err = c.Evaluate(t.Context(), cached)
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
		})
	}
}
