package mockserver_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// codeFlow is one way the reference server issues and redeems codes: kept
// in memory by one server, or sealed and redeemed at another replica
// sharing a store (-redis).
type codeFlow struct {
	// issue signs alice in with the authorization request q (web-app's,
	// authCodeRequest) and returns where the endpoint redirected.
	issue func(t *testing.T, q url.Values) *url.URL
	// redeem redeems code with form, and signer's proof when not nil.
	redeem func(t *testing.T, form url.Values, signer *dpop.Signer) servertest.Result
}

// codeFlows are the kept and the sealed code paths, each with the
// redirect URI its client registered.
func codeFlows(t *testing.T) map[string]func(t *testing.T) (codeFlow, string) {
	t.Helper()
	post := func(t *testing.T, client *http.Client, target string, q url.Values) *url.URL {
		t.Helper()
		q = cloneValues(q)
		q.Set("username", "alice")
		q.Set("password", "alice-pw")
		resp := testkit.Must(noRedirect(client).PostForm(target, q))(t)
		defer resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc := parseURL(t, resp.Header.Get("Location"))
		return loc
	}
	tokenWith := func(t *testing.T, signer *dpop.Signer, tokenURL string) http.Header {
		h := http.Header{}
		if signer != nil {
			proof := proofOf(t, signer, http.MethodPost, tokenURL, "", "")
			h.Set("DPoP", proof)
		}
		return h
	}
	return map[string]func(t *testing.T) (codeFlow, string){
		"kept": func(t *testing.T) (codeFlow, string) {
			redirect := servertest.RedirectTarget(t)
			srv := mockservertest.Start(t, mockserver.WithFixture(servertest.AuthCodeFixture(redirect)))
			return codeFlow{
				issue: func(t *testing.T, q url.Values) *url.URL { return post(t, srv.Client(), srv.URL+authPath, q) },
				redeem: func(t *testing.T, form url.Values, signer *dpop.Signer) servertest.Result {
					return servertest.TokenRequest(t, srv, "acme", form, tokenWith(t, signer, srv.URL+tokenPath))
				},
			}, redirect
		},
		"sealed, redeemed at another replica": func(t *testing.T) (codeFlow, string) {
			fx := webFixture()
			fx.Realms[0].Clients = append(fx.Realms[0].Clients, mockserver.FixtureClient{ClientID: "web-app", Public: true, RedirectURIs: []string{webRedirect}})
			f := startSharedFront(t, &sharedStore{keys: map[string]time.Time{}}, mockserver.WithFixture(fx))
			return codeFlow{
				issue: func(t *testing.T, q url.Values) *url.URL {
					q = cloneValues(q)
					q.Set("username", "alice")
					q.Set("password", "alice-pw")
					resp, body := f.send("a", http.MethodPost, authPath, q, nil)
					require.Equal(t, http.StatusFound, resp.StatusCode, body)
					loc := parseURL(t, resp.Header.Get("Location"))
					return loc
				},
				redeem: func(t *testing.T, form url.Values, signer *dpop.Signer) servertest.Result {
					return f.do("b", http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), tokenWith(t, signer, f.URL+tokenPath))
				},
			}, webRedirect
		},
	}
}

// answerOf is what a failing test says of a token endpoint's answer: an
// error's body, a token answer's token_type, never the tokens.
func answerOf(t *testing.T, res servertest.Result) string {
	if res.Status != http.StatusOK {
		return string(res.Body)
	}
	return fmt.Sprintf("a token answer (token_type %v)", res.JSON(t)["token_type"])
}

// cloneValues returns a copy of q that can be changed without changing q.
func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// TestACodeBoundToADPoPKeyIsRedeemedOnlyWithThatKey (a-dpop10 F2): RFC
// 9449 section 10. An authorization request binds its code to a DPoP key
// with dpop_jkt; the server "MUST reject" a redemption whose proof is of
// another key, and one without a proof. Such a refusal leaves the code to
// its client: redeemed then with the bound key's proof, it gives a DPoP
// token bound to that key. The binding survives the login form and the
// sealing of codes for replicas.
func TestACodeBoundToADPoPKeyIsRedeemedOnlyWithThatKey(t *testing.T) {
	t.Parallel()
	for name, start := range codeFlows(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			flow, redirect := start(t)
			bound := testkit.Must(dpop.GenerateKey())(t) // the client's key, named by dpop_jkt
			other := testkit.Must(dpop.GenerateKey())(t) // whoever redeems the code instead

			verifier := newVerifier()
			q := authCodeRequest(redirect, verifier)
			q.Set("dpop_jkt", bound.Thumbprint())
			loc := flow.issue(t, q)
			code := loc.Query().Get("code")
			require.NotEmpty(t, code, loc.String())
			form := url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"}, "code": {code},
				"redirect_uri": {redirect}, "code_verifier": {verifier}}

			for _, tc := range []struct {
				name   string
				signer *dpop.Signer
			}{{"another key's proof", other}, {"no proof", nil}} {
				res := flow.redeem(t, form, tc.signer)
				require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", tc.name, answerOf(t, res))
				require.Equal(t, "invalid_grant", res.JSON(t)["error"], tc.name)
				require.Contains(t, res.JSON(t)["error_description"], "dpop_jkt", tc.name)
			}

			res := flow.redeem(t, form, bound)
			require.Equal(t, http.StatusOK, res.Status, "the refusals left the code to its client: %s", answerOf(t, res))
			require.Equal(t, "DPoP", res.JSON(t)["token_type"])
			tok := parseJWT(t, res.JSON(t)["access_token"].(string), []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
			var claims struct {
				Cnf struct {
					JKT string `json:"jkt"`
				} `json:"cnf"`
			}
			require.NoError(t, tok.UnsafeClaimsWithoutVerification(&claims))
			require.Equal(t, bound.Thumbprint(), claims.Cnf.JKT)

			res = flow.redeem(t, form, bound)
			require.Equal(t, http.StatusBadRequest, res.Status, "a code gives one answer: %s", answerOf(t, res))
		})
	}
}

// TestAnAuthorizationRequestWithAMalformedDPoPJKTIsRefused: dpop_jkt is a
// base64url SHA-256 JWK thumbprint, 43 characters (RFC 9449 section 10);
// anything else, or the parameter given twice, is refused with
// invalid_request, redirected to the client as the endpoint's other
// errors, with no code: never taken as no binding.
func TestAnAuthorizationRequestWithAMalformedDPoPJKTIsRefused(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	good := key.Thumbprint()
	for name, start := range codeFlows(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			flow, redirect := start(t)
			for _, tc := range []struct {
				name   string
				values []string
			}{
				{"empty", []string{""}},
				{"too short", []string{good[:42]}},
				{"too long", []string{good + "A"}},
				{"padded", []string{good + "="}},
				{"standard base64", []string{strings.Repeat("+", 43)}},
				{"not canonical (trailing bits set)", []string{good[:42] + "B"}},
				{"a thumbprint's hex", []string{strings.Repeat("ab", 32)}},
				{"given twice", []string{good, good}},
			} {
				q := authCodeRequest(redirect, newVerifier())
				q["dpop_jkt"] = tc.values
				loc := flow.issue(t, q)
				require.Equal(t, "invalid_request", loc.Query().Get("error"), "%s: %s", tc.name, loc)
				require.Contains(t, loc.Query().Get("error_description"), "dpop_jkt", tc.name)
				require.Empty(t, loc.Query().Get("code"), tc.name)
				require.Equal(t, "st-1", loc.Query().Get("state"), tc.name)
			}
		})
	}
}
