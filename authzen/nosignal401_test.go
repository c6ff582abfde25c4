package authzen_test

import (
	"io"
	"net/http"
	"net/http/httptest"
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
func TestAPDPRefusalNamingNoDPoPErrorIsNotResent(t *testing.T) {
	t.Parallel()
	for _, withNonce := range []bool{false, true} {
		name := "401 without a nonce (control)"
		if withNonce {
			name = "401 with a new nonce"
		}
		t.Run(name, func(t *testing.T) {
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
					w.Header().Set("WWW-Authenticate", `DPoP realm="pdp", algs="ES256"`)
					if withNonce {
						w.Header().Set("DPoP-Nonce", "fresh-nonce-1")
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(`{"error":"Unauthorized","message":"the token was revoked"}`))
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
			assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP's 401 refused the token")

			d, err = c.Evaluate(t.Context(), cached)
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
		})
	}
}
