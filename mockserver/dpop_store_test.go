package mockserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestUnauthenticatedTokenRequestsStoreNoProof floods acme's token endpoint
// with authorization-code requests that carry valid DPoP proofs, each of a
// key of its own, and a made-up client or code; then a verified caller's
// proof of that very second must be accepted, at a protected route and at
// the token endpoint. The endpoint used to record each proof before it
// checked the client, so the flood filled the realm's replay cache (made
// small here) and every DPoP user of the realm got 503. A full cache
// cannot tell a proof of the same second from a replay, so this passes only
// if the flood stored nothing.
func TestUnauthenticatedTokenRequestsStoreNoProof(t *testing.T) {
	a := newOrgAPI(t)
	a.s.auth.proofOpts = append(a.s.auth.proofOpts, dpop.WithReplayCacheSize(3))
	clock := func() time.Time { return time.Unix(0, a.now.Load()) } // every proof of the server's second
	tokenURL := a.url + "/realms/acme/protocol/openid-connect/token"
	post := func(t *testing.T, signer *dpop.Signer, form url.Values) (int, string) {
		t.Helper()
		r := a.sendHeader(t, http.MethodPost, tokenURL, form.Encode(), formHeader(dpopHeader(t, signer, http.MethodPost, tokenURL, "")))
		return r.Status, string(r.Body)
	}
	newSigner := func(t *testing.T) *dpop.Signer {
		key := newKey(t)
		return key.WithClock(clock)
	}

	for i := range 12 {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {"made-up"},
			"redirect_uri": {"https://app.test/cb"}, "code_verifier": {strings.Repeat("v", 43)}}
		want := http.StatusBadRequest // invalid_grant: no such code
		if i%2 == 0 {
			form.Set("client_id", "nobody")
			want = http.StatusUnauthorized // invalid_client
		} else {
			form.Set("client_id", "admin-cli") // public: only the code authenticates it
		}
		status, body := post(t, newSigner(t), form)
		require.Equal(t, want, status, body)
	}

	alice := newSigner(t)
	require.Equal(t, http.StatusOK, a.dpopGet(t, alice, "acme", "alice").Status, "a verified DPoP caller is served")
	status, body := post(t, newSigner(t), url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"bob"}, "password": {"bob"}})
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"token_type":"DPoP"`)
}

// TestUnauthenticatedRequestsLeaveNoVerifiedToken: a DPoP-bound token sent
// without its proof, or with a proof of another key, is refused and not
// remembered as verified; the same token with its proof is. The token used
// to be remembered once its signature checked out, before its binding: a
// request that failed authentication stored its token.
func TestUnauthenticatedRequestsLeaveNoVerifiedToken(t *testing.T) {
	a := newOrgAPI(t)
	clock := func() time.Time { return time.Unix(0, a.now.Load()) }
	key := newKey(t)
	other := newKey(t)
	tok := testkit.Must(a.s.IssueToken("acme", "alice", TokenDPoPBinding(key.Thumbprint())))(t)
	rm, ok := a.s.store.Lookup("acme")
	require.True(t, ok)
	_, kid, ok := a.s.accessVerificationKey(rm)
	require.True(t, ok, "the realm has signed a token")
	remembered := func() bool {
		_, ok := a.s.auth.verified.get("acme", tok, kid, a.url)
		return ok
	}
	u := a.url + "/admin/realms/acme/organizations"
	get := func(t *testing.T, scheme string, signer *dpop.Signer) int {
		t.Helper()
		h := http.Header{}
		if signer != nil {
			h = dpopHeader(t, signer.WithClock(clock), http.MethodGet, u, tok)
		}
		h.Set("Authorization", scheme+" "+tok)
		return a.sendHeader(t, http.MethodGet, u, "", h).Status
	}
	for name, send := range map[string]func(t *testing.T) int{
		"as Bearer":             func(t *testing.T) int { return get(t, "Bearer", nil) },
		"without a proof":       func(t *testing.T) int { return get(t, "DPoP", nil) },
		"with another key's":    func(t *testing.T) int { return get(t, "DPoP", other) },
		"as Bearer with proofs": func(t *testing.T) int { return get(t, "Bearer", key) },
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, http.StatusUnauthorized, send(t))
			require.False(t, remembered(), "a refused request stored its token")
		})
	}
	require.Equal(t, http.StatusOK, get(t, "DPoP", key))
	require.True(t, remembered(), "an authenticated request's token is remembered")
}

// TestFastClockClientServedWhateverOthersDateAhead: a proof may be dated
// up to 10 s ahead (a client whose clock runs fast), and the token
// endpoint binds a token to any key a user brings. bob sends, with two
// keys of his own, more proofs dated 10 s ahead than the realm's replay
// cache holds apart (made small here: a tenth of 100); then carol, whose
// clock runs 2 s fast, is served at a protected route and at the token
// endpoint, and none of bob's proofs is accepted twice. The cache used to
// refuse every proof dated ahead once its room for them was full, so bob,
// refilling it (some 2,200 proofs a second at the realm's real size),
// had every request of every client whose clock ran fast answered 503.
func TestFastClockClientServedWhateverOthersDateAhead(t *testing.T) {
	a := newOrgAPI(t)
	a.s.auth.proofOpts = append(a.s.auth.proofOpts, dpop.WithReplayCacheSize(100))
	clock := func() time.Time { return time.Unix(0, a.now.Load()) }
	ahead := func(d time.Duration) func() time.Time { return func() time.Time { return clock().Add(d) } }
	userinfo := a.url + "/realms/acme/protocol/openid-connect/userinfo"
	get := func(t *testing.T, signer *dpop.Signer, tok, proof string) int {
		t.Helper()
		h := http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {proof}}
		if proof == "" {
			h = dpopHeader(t, signer, http.MethodGet, userinfo, tok)
		}
		return a.sendHeader(t, http.MethodGet, userinfo, "", h).Status
	}
	type sent struct {
		signer     *dpop.Signer
		tok, proof string
	}
	var bobs []sent
	for range 2 {
		key := newKey(t)
		bob := key.WithClock(ahead(10 * time.Second))
		tok := testkit.Must(a.s.IssueToken("acme", "bob", TokenDPoPBinding(bob.Thumbprint())))(t)
		for range 15 {
			p := proofOf(t, bob, http.MethodGet, userinfo, tok, "")
			switch status := get(t, bob, tok, p); status {
			case http.StatusOK:
				bobs = append(bobs, sent{bob, tok, p})
			case http.StatusServiceUnavailable: // past the bound, a key of bob's pays (dpop.WithReplayCacheSize says which)
			default:
				t.Fatalf("bob's proof dated 10 s ahead: %d", status)
			}
		}
	}

	key := newKey(t)
	carol := key.WithClock(ahead(2 * time.Second))
	tok := testkit.Must(a.s.IssueToken("acme", "alice", TokenDPoPBinding(carol.Thumbprint())))(t)
	for i := range 3 {
		require.Equal(t, http.StatusOK, get(t, carol, tok, ""), "request %d of a client 2 s fast (10 s are allowed)", i)
	}
	tokenURL := a.url + "/realms/acme/protocol/openid-connect/token"
	res := a.sendHeader(t, http.MethodPost, tokenURL, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"bob"}, "password": {"bob"}}.Encode(), formHeader(dpopHeader(t, carol, http.MethodPost, tokenURL, "")))
	require.Equal(t, http.StatusOK, res.Status, "the token endpoint, for a client 2 s fast: %s", res.Body)

	for _, s := range bobs {
		require.NotEqual(t, http.StatusOK, get(t, s.signer, s.tok, s.proof), "a replay is never accepted")
	}
}

// dpopHeader is the header of a request to method url with signer's proof
// for token, and token as a DPoP token unless it is empty.
func dpopHeader(t testing.TB, signer *dpop.Signer, method, url, token string) http.Header {
	t.Helper()
	proof := proofOf(t, signer, method, url, token, "")
	h := http.Header{}
	h.Set("DPoP", proof)
	if token != "" {
		h.Set("Authorization", "DPoP "+token)
	}
	return h
}

// formHeader is h with the Content-Type of a form.
func formHeader(h http.Header) http.Header {
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return h
}

// newKey is a new DPoP key, failing the test on an error.
func newKey(t testing.TB) *dpop.Signer {
	t.Helper()
	return testkit.Must(dpop.GenerateKey())(t)
}

// proofOf is signer's proof for method, u, token and nonce, failing the
// test on an error.
func proofOf(t testing.TB, signer *dpop.Signer, method, u, token, nonce string) string {
	t.Helper()
	return testkit.Must(signer.Proof(method, u, token, nonce))(t)
}
