package pep_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// proofNonce returns the nonce claim of the request's DPoP proof.
func proofNonce(r *http.Request) string {
	parts := strings.Split(r.Header.Get("DPoP"), ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Nonce string `json:"nonce"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.Nonce
}

// TestAttackNonceRequestReadAsRefusal (a-dpop15 F2, end to end): a gateway
// that requires DPoP nonces asks for one with a 401, a new DPoP-Nonce and
// a DPoP challenge saying error="use_dpop_nonce", but writes a parameter
// before the error unquoted with a character that is not a token character
// (algs=ES256 PS256, a realm or error_uri with '/' or ':'), or puts a
// UTF-8 BOM before its JSON body {"error":"use_dpop_nonce"}. challengeErrors
// takes the word after that character for a new auth-scheme, so the
// error="use_dpop_nonce" belongs to "ps256" or "v1", not to DPoP; the BOM
// makes bodyErrors read nothing. The answer then carries "no DPoP signal":
// it is not resent and refuses the token (ErrUnauthorized), so a valid
// token is retired (its decisions purged on every replica, tokenExpired
// emitted) by a mere nonce request, which the resend would have met.
func TestAttackNonceRequestReadAsRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, challenge, body string }{
		{"control (well-formed)", `DPoP algs="ES256 PS256", error="use_dpop_nonce"`, `{"error":"Unauthorized"}`},
		{"unquoted algs list", `DPoP algs=ES256 PS256, error="use_dpop_nonce"`, `{"error":"Unauthorized"}`},
		{"unquoted realm with a slash", `DPoP realm=api.example.com/v1, error="use_dpop_nonce"`, `{"error":"Unauthorized"}`},
		{"unquoted error_uri", `DPoP error_uri=https://gw.example/errors, error="use_dpop_nonce"`, `{"error":"Unauthorized"}`},
		{"BOM before a body asking the nonce", `DPoP realm="gw"`, "\ufeff{\"error\":\"use_dpop_nonce\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			const want = "nonce-2"
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := io.ReadAll(r.Body)
				if proofNonce(r) != want {
					w.Header().Set("WWW-Authenticate", tc.challenge)
					w.Header().Set("DPoP-Nonce", want)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				scope := "read"
				if strings.Contains(string(req), `"write"`) {
					scope = "write"
				}
				w.Header().Set("DPoP-Nonce", want)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"` + scope + `","status":"GRANT"}]}`))
			}))
			defer srv.Close()

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()))
			c.SetDPoPToken("dpop-bound-token", signer)
			d, err := c.Check(t.Context(), "orders", "read")
			if err == nil {
				err = d.Cause
			}
			assert.NoError(t, err, "a nonce request is met by the one resend with the new nonce")
			assert.NotErrorIs(t, err, pep.ErrUnauthorized, "a nonce request does not refuse the token")
			assert.True(t, d.Allowed(), "the valid token's GRANT")
		})
	}
}
