package authzen_test

import (
	"encoding/base64"
	"encoding/json"
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
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
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
//
// a-fix15 F1 and F2: a challenge split over two WWW-Authenticate lines
// (written here with a newline between them) reads as the lines joined
// with ", ", so a DPoP challenge's error starting the second line refuses
// the token in a 401 as on one line, whatever the body asks; and an
// unclear body's invalid_token is found JSON-escaped too
// ("invalid\u005ftoken"), in a 400 or a 403.
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
		{"401 whose split challenge refuses the token, its body asking a nonce", "DPoP algs=\"ES256\"\nerror=\"invalid_request\", error_description=\"audience mismatch\"",
			"fresh-nonce-1", `{"error":"use_dpop_nonce"}`, 401},
		{"400 naming invalid_token, escaped, after a raw tab", `DPoP realm="pdp", algs="ES256"`, "",
			"{\"message\":\"a\tb\",\"error\":\"invalid\\u005ftoken\"}", 400},
		{"403 naming invalid_token, escaped, after a raw tab, with a new nonce", `DPoP realm="pdp", algs="ES256"`, "fresh-nonce-1",
			"{\"message\":\"a\tb\",\"error\":\"invalid\\u005ftoken\"}", 403},
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
					for _, line := range strings.Split(tc.challenge, "\n") {
						w.Header().Add("WWW-Authenticate", line)
					}
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
	var claims struct {
		Nonce string `json:"nonce"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.Nonce
}

// TestASplitNonceChallengeIsResent: a-fix15 F1 (authzen). A PDP asks a
// nonce with a WWW-Authenticate field split over two lines at a comma (RFC
// 9110 section 5.3: the same as `DPoP algs="ES256",
// error="use_dpop_nonce"` on one line) and accepts the resend carrying
// it. Each line was read alone: no DPoP signal, so the 401 refused the
// valid token, unresent. The lines are read joined with ", ".
func TestASplitNonceChallengeIsResent(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	var asked atomic.Bool
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		if proofNonce(r) != "fresh-1" {
			asked.Store(true)
			w.Header().Add("WWW-Authenticate", `DPoP algs="ES256"`)
			w.Header().Add("WWW-Authenticate", `error="use_dpop_nonce", error_description="a nonce is required"`)
			w.Header().Set("DPoP-Nonce", "fresh-1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	})
	c := mustAuthZEN(t, g.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
		authzen.WithHTTPClient(g.Client()), authzen.WithRetry(0, 0, 0))
	c.SetDPoPToken("dpop-bound-token", signer)
	req := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"}}
	d, err := c.Evaluate(t.Context(), req)
	if err == nil {
		err = d.Cause
	}
	require.True(t, asked.Load())
	assert.NoError(t, err, "a nonce request is answered by a resend with the nonce")
	assert.True(t, d.Allowed(), "the resend with the nonce is allowed")
}
