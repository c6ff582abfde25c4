package authzen_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// TestAPDPUnclearNonceRequestRetiresNoToken (pep's
// TestAnUnclearNonceRequestRetiresNoToken for a PDP): a nonce request with
// a raw tab in its body and no invalid_token anywhere, then a 503 to the
// resend, fails unavailable and keeps the token (a-dpop16 F2).
func TestAPDPUnclearNonceRequestRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"clean body", `{"error":"use_dpop_nonce","message":"nonce required"}`},
		{"raw tab in the message", "{\"error\":\"use_dpop_nonce\",\"message\":\"nonce\trequired\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				if proofNonce(r) == "n1" {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
				w.Header().Set("DPoP-Nonce", "n1")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(tc.body))
			})
			c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
				authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", signer)
			d, err := c.Evaluate(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"},
				Action: authzen.Action{Name: "can_read"}, Resource: authzen.Resource{Type: "document", ID: "42"}})
			if err == nil {
				err = d.Cause
			}
			require.Error(t, err)
			assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "nothing refused the token; got %v", err)
			assert.ErrorIs(t, err, authzen.ErrUnavailable, "the resend met a 503; got %v", err)
		})
	}
}
