package mockserver_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
)

// These tests hold replicas behind one front (one fixture, one key seed,
// one shared store, as docs/reference-server.md sets them up) to the rule
// that what a client carries from one request to the next, and what
// refuses a credential, is the same at every replica.

// csrfInput finds the CSRF token of a web UI page's forms.
var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// webRedirect is the redirect URI of webFixture's public client "web".
const webRedirect = "https://app.test/cb"

// webFixture is servertest.DPoPFixture with a public client "web" that redirects to
// webRedirect, for the authorization code flow.
func webFixture() mockserver.Fixture {
	fx := servertest.DPoPFixture()
	fx.Realms[0].Clients = append(fx.Realms[0].Clients, mockserver.FixtureClient{ClientID: "web", Public: true, RedirectURIs: []string{webRedirect}})
	return fx
}

// startStoreFront is startSharedFront on a new, empty sharedStore, which
// it returns too.
func startStoreFront(t *testing.T, opts ...mockserver.Option) (*front, *sharedStore) {
	store := &sharedStore{keys: map[string]time.Time{}}
	return startSharedFront(t, store, opts...), store
}

// startSharedFront starts replicas a and b sharing store and the key seed.
func startSharedFront(t *testing.T, store *sharedStore, opts ...mockserver.Option) *front {
	t.Helper()
	return startFront(t, []string{"a", "b"}, append([]mockserver.Option{mockserver.WithKeySeed(keySeed),
		mockserver.WithReplayStore(store), mockserver.WithAccessTokenAlgorithm("ES256")}, opts...)...)
}

// passwordToken gets alice a Bearer token from replica.
func (f *front) passwordToken(replica string) string {
	f.t.Helper()
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}
	res := f.do(replica, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
	return res.JSON(f.t)["access_token"].(string)
}

// bearerDecide asks replica for a decision with a Bearer token.
func (f *front) bearerDecide(replica, token string) servertest.Result {
	f.t.Helper()
	return f.do(replica, http.MethodPost, authorizePath, "application/json",
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`,
		http.Header{"Authorization": {"Bearer " + token}})
}

// revokeAt revokes token at replica as admin-cli (a public client).
func (f *front) revokeAt(replica, token string) servertest.Result {
	f.t.Helper()
	return f.do(replica, http.MethodPost, revokePath, "application/x-www-form-urlencoded",
		url.Values{"client_id": {"admin-cli"}, "token": {token}}.Encode(), nil)
}

// TestReplicasRefuseATokenRevokedAtAnyOfThem: a token revoked through the
// front (RFC 7009, as a client's logout does) is refused by every replica
// from the moment the revocation answered, on decisions and introspection
// alike, not only by the replica that took the revocation.
func TestReplicasRefuseATokenRevokedAtAnyOfThem(t *testing.T) {
	t.Parallel()
	f := startSharedFront(t, &sharedStore{keys: map[string]time.Time{}}, mockserver.WithFixture(servertest.DPoPFixture()))
	token := f.passwordToken("a")
	for _, r := range []string{"a", "b"} {
		res := f.bearerDecide(r, token)
		require.Equal(t, http.StatusOK, res.Status, "replica %s before the revocation: %s", r, res.Body)
		require.Equal(t, "GRANT", res.JSON(t)["status"])
	}
	res := f.revokeAt("a", token)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	for _, r := range []string{"a", "b"} {
		res = f.bearerDecide(r, token)
		require.Equal(t, http.StatusUnauthorized, res.Status, "replica %s serves the revoked token: %s", r, res.Body)
		require.Contains(t, string(res.Body), "token revoked")
		res = f.do(r, http.MethodPost, introspectPath, "application/x-www-form-urlencoded",
			url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {token}}.Encode(), nil)
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		require.Equal(t, false, res.JSON(t)["active"], "replica %s introspects the revoked token", r)
	}
	other := f.passwordToken("b")
	res = f.bearerDecide("a", other)
	require.Equal(t, http.StatusOK, res.Status, "another token of the user is not revoked: %s", res.Body)
}

// TestReplicasRefuseARevokedTokenWithAClockBehindTheStore: the store
// expires a revocation by its own clock; a replica whose clock runs
// behind the store's (by less than dpop.ReplayStoreMargin, the bound the
// shared store's records allow for) still finds the token live by its own
// clock once the store's clock has passed the token's exp, and must still
// find the revocation.
func TestReplicasRefuseARevokedTokenWithAClockBehindTheStore(t *testing.T) {
	t.Parallel()
	var storeAhead atomic.Int64 // how far the store's clock runs ahead of the wall clock
	store := &sharedStore{keys: map[string]time.Time{}, clock: func() time.Time { return time.Now().Add(time.Duration(storeAhead.Load())) }}
	f := startSharedFront(t, store, mockserver.WithFixture(servertest.DPoPFixture()))
	res := f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	token := res.JSON(t)["access_token"].(string)
	lifetime := time.Duration(res.JSON(t)["expires_in"].(float64)) * time.Second
	require.Equal(t, http.StatusOK, f.revokeAt("a", token).Status)

	// Replica c's clock is lifetime-50s ahead of the wall clock: the token
	// has 50 s left there. The store's clock is past the token's exp.
	c, err := mockserver.New(mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store), mockserver.WithAccessTokenAlgorithm("ES256"),
		mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithClock(func() time.Time { return time.Now().Add(lifetime - 50*time.Second) }))
	require.NoError(t, err)
	f.replicas["c"] = c
	storeAhead.Store(int64(lifetime + time.Second))
	res = f.bearerDecide("c", token)
	require.Equal(t, http.StatusUnauthorized, res.Status, "a replica 51 s behind the store: %s", res.Body)
}

// TestReplicasRefuseATokenWhoseRevocationTheyCannotTell: a replica that
// cannot ask the shared store whether a token was revoked (it fails)
// refuses the token with 503 and Retry-After, never grants (one the store
// lost its keys after is refused for good: 401); a revocation it cannot record is a 503
// too (the client retries) that leaves the token as it was. Once the
// store is back the token is served again until the retried revocation
// answers.
func TestReplicasRefuseATokenWhoseRevocationTheyCannotTell(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()))
	token := f.passwordToken("a")
	require.Equal(t, http.StatusOK, f.bearerDecide("b", token).Status)

	store.set(&store.fail, errors.New("connection refused"))
	for _, r := range []string{"a", "b"} {
		res := f.bearerDecide(r, token)
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "replica %s, store down: %s", r, res.Body)
		require.NotEmpty(t, res.Header.Get("Retry-After"))
		require.NotContains(t, string(res.Body), token)
	}
	res := f.revokeAt("b", token)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, "a revocation the store cannot record: %s", res.Body)
	require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
	store.set(&store.fail, nil)
	require.Equal(t, http.StatusOK, f.bearerDecide("a", token).Status, "store back, revocation never answered")
	require.Equal(t, http.StatusOK, f.revokeAt("b", token).Status, "the retried revocation")
	require.Equal(t, http.StatusUnauthorized, f.bearerDecide("a", token).Status)

	fresh := f.passwordToken("a")
	store.restart() // the store lost the keys: it cannot vouch for tokens issued before
	res = f.bearerDecide("b", fresh)
	require.Equal(t, http.StatusUnauthorized, res.Status, "a token older than the store's keyspace is refused for good: %s", res.Body)
}

// TestReplicasRedeemACodeOnceBetweenThem: the authorization code is what a
// client carries from the authorization endpoint to the token endpoint;
// behind one front the two requests may reach different replicas: a code
// of one is redeemed at the other, once: redeemed again at either
// replica it is invalid_grant. A replica that cannot record the use
// refuses the redemption (503), never redeems a code twice.
func TestReplicasRedeemACodeOnceBetweenThem(t *testing.T) {
	t.Parallel()
	const redirect = webRedirect
	fx := webFixture()
	f, store := startStoreFront(t, mockserver.WithFixture(fx))
	code := func(replica string) string { return f.authCode(replica, redirect) }
	redeem := f.redeemCode
	c := code("a")
	res := redeem("b", c)
	require.Equal(t, http.StatusOK, res.Status, "the code of replica a at replica b: %s", res.Body)
	require.Equal(t, http.StatusOK, f.bearerDecide("a", res.JSON(t)["access_token"].(string)).Status)
	for _, r := range []string{"a", "b"} {
		res = redeem(r, c)
		require.Equal(t, http.StatusBadRequest, res.Status, "the code redeemed again at replica %s: %s", r, res.Body)
		require.Equal(t, "invalid_grant", res.JSON(t)["error"])
	}
	res = redeem("a", code("b")+"x")
	require.Equal(t, http.StatusBadRequest, res.Status, "an altered code: %s", res.Body)
	require.Equal(t, "invalid_grant", res.JSON(t)["error"])

	// A store that cannot record the code's use refuses the redemption
	// (503), and the code is still good once the store is back.
	c = code("b")
	store.set(&store.fail, errors.New("connection refused"))
	res = redeem("a", c)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, "store down: %s", res.Body)
	require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	store.set(&store.fail, nil)
	require.Equal(t, http.StatusOK, redeem("a", c).Status)
}

// TestReplicasRedeemACodeWhoseSpendFailedAfterItsWriteOnItsRedeemersRetry:
// a redemption whose spend reached the shared store but failed after it
// (too few replicas acknowledged it, or its answer came late) is answered
// 503 with Retry-After, and the code is kept for its redeemer: the same
// redemption retried (at either replica, with a new proof of the same
// DPoP key) is redeemed, once: repeated after that answer it is
// invalid_grant. Anyone else's redemption of the code is invalid_grant: a
// wrong PKCE verifier, no DPoP proof, or a proof of another key.
func TestReplicasRedeemACodeWhoseSpendFailedAfterItsWriteOnItsRedeemersRetry(t *testing.T) {
	t.Parallel()
	const redirect = webRedirect
	fx := webFixture()
	f, store := startStoreFront(t, mockserver.WithFixture(fx))
	holder := newKey(t)
	other := newKey(t)
	redeem := f.redeemWith
	for _, tc := range []struct {
		name     string
		verifier string
		signer   *dpop.Signer
	}{
		{"another PKCE verifier", "another-verifier-another-verifier-another-verifier", holder},
		{"no DPoP proof", pkceVerifier, nil},
		{"a proof of another key", pkceVerifier, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := f.authCode("a", redirect)
			store.set(&store.failAfterWrite, errors.New("WAIT: 0 of 1 replicas acknowledged"))
			res := redeem("a", code, pkceVerifier, holder)
			store.set(&store.failAfterWrite, nil)
			require.Equal(t, http.StatusServiceUnavailable, res.Status, "the spend failed after its write: %s", res.Body)
			require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
			require.NotEmpty(t, res.Header.Get("Retry-After"))

			res = redeem("b", code, tc.verifier, tc.signer)
			require.Equal(t, http.StatusBadRequest, res.Status, "another redeemer of the code: %s", res.Body)
			require.Equal(t, "invalid_grant", res.JSON(t)["error"])

			res = redeem("b", code, pkceVerifier, holder)
			require.Equal(t, http.StatusOK, res.Status, "the redeemer's retry: %s", res.Body)
			require.Equal(t, "DPoP", res.JSON(t)["token_type"])

			// Answered, the redemption is not answered again.
			res = redeem("a", code, pkceVerifier, holder)
			require.Equal(t, http.StatusBadRequest, res.Status, "the redemption repeated once answered: %s", res.Body)
			require.Equal(t, "invalid_grant", res.JSON(t)["error"])
		})
	}
}

// The PKCE pair of RFC 7636 appendix B.
const (
	pkceVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	pkceChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

// authCode signs alice in at replica's authorization endpoint for the
// public client "web" and returns the code.
func (f *front) authCode(replica, redirect string) string {
	f.t.Helper()
	loc := f.authRedirect(replica, redirect)
	require.NotEmpty(f.t, loc.Query().Get("code"), loc.String())
	return loc.Query().Get("code")
}

// authRedirect signs alice in at replica's authorization endpoint for the
// public client "web" and returns where it redirected (a code or an error).
func (f *front) authRedirect(replica, redirect string) *url.URL {
	f.t.Helper()
	form := url.Values{"response_type": {"code"}, "client_id": {"web"}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {pkceChallenge}, "code_challenge_method": {"S256"}, "username": {"alice"}, "password": {"alice-pw"}}
	resp, body := f.send(replica, http.MethodPost, "/realms/acme/protocol/openid-connect/auth", form, nil)
	require.Equal(f.t, http.StatusFound, resp.StatusCode, body)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(f.t, err)
	return loc
}

// redeemCode redeems code at replica's token endpoint as "web".
func (f *front) redeemCode(replica, code string) servertest.Result {
	f.t.Helper()
	return f.redeemWith(replica, code, pkceVerifier, nil)
}

// redeemWith redeems code at replica with verifier, and a DPoP proof of
// signer when not nil.
func (f *front) redeemWith(replica, code, verifier string, signer *dpop.Signer) servertest.Result {
	f.t.Helper()
	h := http.Header{}
	if signer != nil {
		p, err := signer.Proof(http.MethodPost, f.URL+tokenPath, "", "")
		require.NoError(f.t, err)
		h.Set("DPoP", p)
	}
	return f.do(replica, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", url.Values{"grant_type": {"authorization_code"},
		"client_id": {"web"}, "code": {code}, "redirect_uri": {webRedirect}, "code_verifier": {verifier}}.Encode(), h)
}

// send sends a form (or nothing) with cookies to replica as a browser
// would, without following redirects, and returns the answer and its body.
func (f *front) send(replica, method, path string, form url.Values, cookies []*http.Cookie) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.URL+path, strings.NewReader(form.Encode()))
	require.NoError(f.t, err)
	req.Header.Set("X-Replica", replica)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	hc := &http.Client{Timeout: f.client().Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(f.t, err)
	return res, string(b)
}

// uiSignIn signs alice in to the web UI at replica and returns the
// session's cookies and the CSRF token of its home page there.
func (f *front) uiSignIn(replica string) ([]*http.Cookie, string) {
	f.t.Helper()
	login, body := f.send(replica, http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(f.t, http.StatusSeeOther, login.StatusCode, body)
	cookies := login.Cookies()
	require.NotEmpty(f.t, cookies)
	res, body := f.send(replica, http.MethodGet, "/ui/realms/acme/home", nil, cookies)
	require.Equal(f.t, http.StatusOK, res.StatusCode, body)
	m := csrfInput.FindStringSubmatch(body)
	require.NotNil(f.t, m, "no CSRF token on the page")
	return cookies, m[1]
}

// TestReplicasShareARevocationOnlyOnceItIsAnswered: a revocation the
// shared store cannot record is answered 503 and leaves the token as it
// was at every replica, the one that took it included, so that the
// client's retry at that replica records it again (another 503 while the
// store refuses writes), never answers 200 with nothing shared; once the
// store takes writes, the retry answers 200 and every replica refuses the
// token.
func TestReplicasShareARevocationOnlyOnceItIsAnswered(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()))
	token := f.passwordToken("a")

	// Redis full under noeviction: writes fail, reads answer.
	store.set(&store.failWrites, errors.New("OOM command not allowed when used memory > 'maxmemory'"))
	for _, attempt := range []string{"the revocation", "the client's retry"} {
		res := f.revokeAt("a", token)
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "%s at replica a, the store refusing writes: %s", attempt, res.Body)
		require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
		require.NotEmpty(t, res.Header.Get("Retry-After"))
		for _, r := range []string{"a", "b"} {
			res = f.bearerDecide(r, token)
			require.Equal(t, http.StatusOK, res.Status, "after %s answered 503, replica %s: %s", attempt, r, res.Body)
		}
	}
	store.set(&store.failWrites, nil)
	res := f.revokeAt("a", token)
	require.Equal(t, http.StatusOK, res.Status, "the retry once the store takes writes: %s", res.Body)
	for _, r := range []string{"a", "b"} {
		require.Equal(t, http.StatusUnauthorized, f.bearerDecide(r, token).Status, "replica %s after the revocation answered", r)
	}
}

// TestReplicasShareAUISignOutOnlyOnceItIsAnswered: the web UI's sign-out,
// as a revocation: one the shared store cannot record is a 503 that leaves
// the session as it was everywhere, so the user's retry is a 503 again,
// never the redirect to the login page of a sign-out that worked while
// another replica still serves the session (a copy of the cookie).
func TestReplicasShareAUISignOutOnlyOnceItIsAnswered(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithWebUI())
	cookies, csrf := f.uiSignIn("b")

	store.set(&store.failWrites, errors.New("OOM command not allowed when used memory > 'maxmemory'"))
	for _, attempt := range []string{"the sign-out", "the user's retry"} {
		res, _ := f.send("a", http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}}, cookies)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "%s at replica a, the store refusing writes: Location %q", attempt, res.Header.Get("Location"))
		require.NotEmpty(t, res.Header.Get("Retry-After"))
		for _, r := range []string{"a", "b"} {
			res, _ = f.send(r, http.MethodGet, "/ui/realms/acme/home", nil, cookies)
			require.Equal(t, http.StatusOK, res.StatusCode, "after %s answered 503, replica %s", attempt, r)
		}
	}
	store.set(&store.failWrites, nil)
	res, _ := f.send("a", http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}}, cookies)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/login"), res.Header.Get("Location"))
	for _, r := range []string{"a", "b"} {
		res, _ = f.send(r, http.MethodGet, "/ui/realms/acme/home", nil, cookies)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "the signed-out session at replica %s", r)
	}
}

// TestReplicasBoundEveryCallOfTheSharedStore: the server bounds each call
// of the shared store itself (dpop.ReplayStoreTimeout, on a goroutine of
// its own), whatever the store does with its context: with a store that
// hangs (a frozen Redis behind a client without timeouts), a token check,
// a UI page, a revocation and a code's redemption are each answered 503
// with Retry-After, not held. The client's own timeout here is a hang
// guard far above the bound, not a measure.
func TestReplicasBoundEveryCallOfTheSharedStore(t *testing.T) {
	t.Parallel()
	const redirect = webRedirect
	fx := webFixture()
	for _, tc := range []struct {
		name   string
		frozen string // the store's calls that hang
		call   func(f *front) (status int, retryAfter string)
	}{
		{"token check", "reads", func(f *front) (int, string) {
			token := f.passwordToken("a")
			f.store.freeze(f.t, "reads")
			res := f.bearerDecide("b", token)
			return res.Status, res.Header.Get("Retry-After")
		}},
		{"UI page", "reads", func(f *front) (int, string) {
			cookies, _ := f.uiSignIn("a")
			f.store.freeze(f.t, "reads")
			res, _ := f.send("b", http.MethodGet, "/ui/realms/acme/home", nil, cookies)
			return res.StatusCode, res.Header.Get("Retry-After")
		}},
		{"revocation", "writes", func(f *front) (int, string) {
			token := f.passwordToken("a")
			f.store.freeze(f.t, "writes")
			res := f.revokeAt("b", token)
			return res.Status, res.Header.Get("Retry-After")
		}},
		{"code redemption", "writes", func(f *front) (int, string) {
			code := f.authCode("a", redirect)
			f.store.freeze(f.t, "writes")
			res := f.redeemCode("b", code)
			return res.Status, res.Header.Get("Retry-After")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, store := startStoreFront(t, mockserver.WithFixture(fx), mockserver.WithWebUI())
			f.store, f.timeout = store, hangGuard
			status, retryAfter := tc.call(f)
			require.Equal(t, http.StatusServiceUnavailable, status, "%s with the store's %s frozen", tc.name, tc.frozen)
			require.NotEmpty(t, retryAfter)
		})
	}
}

// hangGuard bounds a test's requests where a server that waits on a
// frozen store would hold them for ever: far above the server's own bound
// (dpop.ReplayStoreTimeout), so that a loaded machine never trips it.
const hangGuard = 60 * time.Second

// TestReplicasContinueASearchAcrossThem: an AuthZEN search's
// page.next_token is what a PEP carries from one page to the next; the
// next page is served by whichever replica the front picks.
func TestReplicasContinueASearchAcrossThem(t *testing.T) {
	t.Parallel()
	fx := servertest.DPoPFixture()
	fx.Realms[0].Clients[0].Permissions[0].Roles = []string{"realm-admin", "viewer"}
	f := startSharedFront(t, &sharedStore{keys: map[string]time.Time{}}, mockserver.WithFixture(fx))
	res := f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"orders-api"}, "client_secret": {"orders-secret"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	pep := http.Header{"Authorization": {"Bearer " + res.JSON(t)["access_token"].(string)}}
	const search = "/realms/acme/access/v1/search/subject"
	q := `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":1%s}}`
	res = f.do("a", http.MethodPost, search, "application/json", fmt.Sprintf(q, ""), pep)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	next := res.JSON(t)["page"].(map[string]any)["next_token"].(string)
	require.NotEmpty(t, next, string(res.Body))
	var pages []string
	for _, r := range []string{"a", "b"} {
		res = f.do(r, http.MethodPost, search, "application/json", fmt.Sprintf(q, `,"token":"`+next+`"`), pep)
		require.Equal(t, http.StatusOK, res.Status, "the next page at replica %s: %s", r, res.Body)
		pages = append(pages, string(res.Body))
	}
	require.Equal(t, pages[0], pages[1], "both replicas serve the same next page")
}

// TestReplicasShareUISessionsAndLogouts: the web UI's session cookie is
// what a browser carries from page to page: a session begun at one
// replica is served by the other, and a logout at one ends it at every
// replica (a copy of the cookie is worth nothing anywhere); a replica
// that cannot ask whether the session was signed out refuses it (503).
func TestReplicasShareUISessionsAndLogouts(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithWebUI())
	send := f.send
	login, _ := send("a", http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(t, http.StatusSeeOther, login.StatusCode)
	cookies := login.Cookies()
	require.NotEmpty(t, cookies)
	var csrf string
	for _, r := range []string{"a", "b"} {
		res, body := send(r, http.MethodGet, "/ui/realms/acme/home", nil, cookies)
		require.Equal(t, http.StatusOK, res.StatusCode, "the session at replica %s: redirected to %s", r, res.Header.Get("Location"))
		m := csrfInput.FindStringSubmatch(body)
		require.NotNil(t, m, "no CSRF token on replica %s's page", r)
		csrf = m[1]
	}
	// A replica that cannot ask whether the session was signed out
	// elsewhere does not serve it.
	store.set(&store.fail, errors.New("connection refused"))
	res, _ := send("b", http.MethodGet, "/ui/realms/acme/home", nil, cookies)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	store.set(&store.fail, nil)

	// The CSRF token of replica b's page; the logout goes to replica a.
	res, _ = send("a", http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}}, cookies)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/login"), res.Header.Get("Location"))
	for _, r := range []string{"a", "b"} {
		res, _ = send(r, http.MethodGet, "/ui/realms/acme/home", nil, cookies)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "the logged-out session at replica %s", r)
		require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/login"), res.Header.Get("Location"))
	}
}

// TestUISignOutOutlivesARestartWithTheKeySeed: a web UI session signed
// out stays refused after the server restarts with the same key seed. With
// a shared store the session key comes from the seed (a session outlives
// the restart) because the sign-out does too, in the store; without one
// the sign-outs are the process's memory, so the session key is random
// per process and the restart ends every session, the signed-out one
// included.
func TestUISignOutOutlivesARestartWithTheKeySeed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store *sharedStore
	}{
		{"without a shared store", nil},
		{"with a shared store", &sharedStore{keys: map[string]time.Time{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := func() *front {
				opts := []mockserver.Option{mockserver.WithKeySeed(keySeed), mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithWebUI()}
				if tc.store != nil {
					opts = append(opts, mockserver.WithReplayStore(tc.store))
				}
				return startFront(t, []string{"a"}, opts...)
			}
			first := start()
			cookies, csrf := first.uiSignIn("a")
			kept, _ := first.uiSignIn("a") // a session that is not signed out
			res, _ := first.send("a", http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}}, cookies)
			require.Equal(t, http.StatusSeeOther, res.StatusCode)

			restarted := start() // the same seed, a new process
			res, _ = restarted.send("a", http.MethodGet, "/ui/realms/acme/home", nil, cookies)
			require.Equal(t, http.StatusSeeOther, res.StatusCode, "the session signed out before the restart")
			require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/login"), res.Header.Get("Location"))
			res, _ = restarted.send("a", http.MethodGet, "/ui/realms/acme/home", nil, kept)
			want := http.StatusSeeOther // a new key: every session ends
			if tc.store != nil {
				want = http.StatusOK // the seed's key: sessions outlive the restart
			}
			require.Equal(t, want, res.StatusCode, "a session not signed out, after the restart")
		})
	}
}
