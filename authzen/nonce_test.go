package authzen_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// TestDPoPNonceAskedForInAnyForm (a-dpop13 F2): a PDP in front of the
// reference server asks for a DPoP nonce, with a new DPoP-Nonce, in the
// DPoP challenge or in the JSON body as RFC 9449 section 8 words it, under
// a challenge that names no error or with none at all, on a 401 or a 400.
// Whichever the form, the evaluation is resent once with the nonce and
// decided, and the credential stays: no tokenExpired. A PDP that keeps
// asking after the one resend fails the call with ErrProofRejected, not
// ErrUnauthorized, and still emits nothing. Before the fix, the forms in
// the body were not resent, and their 401 retired the valid token and
// emitted tokenExpired.
func TestDPoPNonceAskedForInAnyForm(t *testing.T) {
	t.Parallel()
	inBody := `{"error":"use_dpop_nonce","error_description":"nonce required in the DPoP proof"}`
	forms := []struct {
		name, challenge, body string
		status                int
	}{
		{"401 asking in the challenge", `DPoP algs="ES256", error="use_dpop_nonce"`, `{"error":"Unauthorized"}`, http.StatusUnauthorized},
		{"401 asking in the body under a challenge without error", `DPoP algs="ES256 PS256"`, inBody, http.StatusUnauthorized},
		{"401 asking in the body without a challenge", "", inBody, http.StatusUnauthorized},
		{"400 asking in the body without a challenge", "", inBody, http.StatusBadRequest},
	}
	for _, form := range forms {
		for _, keepsAsking := range []bool{false, true} {
			name := form.name + "/answered with the nonce"
			if keepsAsking {
				name = form.name + "/asking again"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				gw, ln := gatewaytest.Listen(t)
				srv := testkit.Must(mockserver.New(mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
					mockserver.WithAccessTokenAlgorithm("ES256"), mockserver.WithIssuer(gw.URL)))(t)
				var nonces []string // the nonce of each evaluation's proof
				var mu sync.Mutex
				gw.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("DPoP") == "" { // discovery: no credential
						srv.ServeHTTP(w, r)
						return
					}
					nonce := testkit.ProofNonce(r.Header.Get("DPoP"))
					mu.Lock()
					nonces = append(nonces, nonce)
					mu.Unlock()
					if nonce == "n1" && !keepsAsking {
						srv.ServeHTTP(w, r) // the reference server decides
						return
					}
					if form.challenge != "" {
						w.Header().Set("WWW-Authenticate", form.challenge)
					}
					w.Header().Set("DPoP-Nonce", "n1")
					answer(form.status, form.body)(w, r)
				}))
				var expired atomic.Int32
				c := mustAuthZEN(t, gw.URL+"/realms/todo", authzen.WithRetry(0, 0, 0), authzen.WithEventHandler(func(e events.Event) {
					if e.Kind == events.TokenExpired {
						expired.Add(1)
					}
				}))
				signer := testkit.Must(dpop.GenerateKey())(t)
				tok := testkit.Must(srv.IssueToken("todo", "service-account-todo-api", mockserver.TokenDPoPBinding(signer.Thumbprint())))(t)
				c.SetDPoPToken(tok, signer)

				d, err := c.Evaluate(t.Context(), todoRead)
				switch {
				case !keepsAsking:
					require.NoError(t, err, "resent once with the nonce the answer carried")
					assert.True(t, d.Allowed())
				case form.status == http.StatusUnauthorized:
					require.ErrorIs(t, err, authzen.ErrProofRejected, "a nonce still owed blames the proof")
					assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "a nonce request is no verdict on the token")
					assert.False(t, d.Allowed())
				default: // a 400 is a denial with its Cause
					require.NoError(t, err)
					assert.False(t, d.Allowed())
					var re *authzen.ResponseError
					require.ErrorAs(t, d.Cause, &re)
					assert.Equal(t, http.StatusBadRequest, re.StatusCode)
				}
				assert.Zero(t, expired.Load(), "a nonce request made the valid token look expired")
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, []string{"", "n1"}, nonces, "one resend, with the nonce")
			})
		}
	}
}
