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

// TestAttackPDPUnclearNonceRequestRetiresValidToken (authzen, the same
// class as pep's TestAttackUnclearNonceRequestRetiresValidToken): a PDP
// asks a nonce (401, DPoP error="use_dpop_nonce", DPoP-Nonce) with a body
// holding a raw tab and no invalid_token in any form; the resend with the
// nonce meets a 503. Nothing refuses the token, yet the call matches
// ErrUnauthorized (the valid token is retired). The clean-body control
// ends ErrUnavailable.
func TestAttackPDPUnclearNonceRequestRetiresValidToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"control, clean body", `{"error":"use_dpop_nonce","message":"nonce required"}`},
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
