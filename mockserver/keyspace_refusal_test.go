package mockserver_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// pepClient is a PEP of acme's orders-api at base, without retries, its
// calls bounded by the hang guard (internal/hangguard's TestTestClientsHaveAHangGuard).
func pepClient(t *testing.T, base string) *pep.Client {
	t.Helper()
	c := testkit.Must(pep.New(base, "acme", "orders-api", pep.WithRetry(0, 0, 0), pep.WithTimeout(hangguard.Timeout)))(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestReplicasRefuseACredentialOlderThanTheStoresKeyspaceForGood: after
// the shared store lost its keys (Redis restarted, was flushed or
// restored, failed over), a credential issued before can never be served
// again, since the store cannot vouch that no replica refused it. That is
// a verdict on the credential, not an outage: a token is 401
// invalid_token saying to get a new one (so a PEP reports ErrUnauthorized
// and its application fetches a new token, instead of retrying an
// "outage" with its breaker open until the token expires), a code is
// invalid_grant, a web UI session goes back to the login page; revoking
// such a token answers 200, as every replica refuses it already. A store
// that fails stays a 503 with Retry-After
// (TestReplicasRefuseATokenWhoseRevocationTheyCannotTell).
func TestReplicasRefuseACredentialOlderThanTheStoresKeyspaceForGood(t *testing.T) {
	t.Parallel()
	t.Run("token, through a PEP", func(t *testing.T) {
		t.Parallel()
		store := &sharedStore{keys: map[string]time.Time{}}
		// One replica, "" (no X-Replica header): the PEP talks to it as
		// to any gateway.
		f := startFront(t, []string{""}, mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store),
			mockserver.WithAccessTokenAlgorithm("ES256"), mockserver.WithFixture(servertest.DPoPFixture()))
		token := f.passwordToken("")
		c := pepClient(t, f.URL)
		c.SetToken(token)
		d, err := c.Check(t.Context(), "orders", "read", pep.NoCache())
		require.NoError(t, err)
		require.True(t, d.Allowed(), "before the store lost its keys: %v", d.Cause)

		store.restart()
		d, err = c.Check(t.Context(), "orders", "read", pep.NoCache())
		require.False(t, d.Allowed())
		cause := errors.Join(err, d.Cause)
		require.ErrorIs(t, cause, pep.ErrUnauthorized, "a token the server will never serve again is no outage")
		require.NotErrorIs(t, cause, pep.ErrUnavailable)

		res := f.bearerDecide("", token)
		require.Equal(t, http.StatusUnauthorized, res.Status, string(res.Body))
		require.Contains(t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
		require.Empty(t, res.Header.Get("Retry-After"))
		require.Contains(t, res.JSON(t)["message"], "predates the shared store's keyspace")
		require.Contains(t, res.JSON(t)["message"], "get a new one")
		require.NotContains(t, string(res.Body), token)

		require.Equal(t, http.StatusOK, f.revokeAt("", token).Status, "a token every replica refuses already is revoked")
	})
	t.Run("a new token, code or session while the keyspace is younger than the clocks' margin", func(t *testing.T) {
		t.Parallel()
		f, store := startStoreFront(t, mockserver.WithFixture(webFixture()), mockserver.WithWebUI())
		// A keyspace that vouches for nothing issued before an hour from
		// now: what Redis's marker says of every token within a minute
		// after it lost its keys.
		store.mu.Lock()
		store.began = time.Now().Add(time.Hour)
		store.mu.Unlock()
		form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}
		res := f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "a token no replica would ever serve is not handed out: %s", res.Body)
		require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
		retryAfter := fmt.Sprint(int(dpop.ReplayStoreMargin.Seconds()) + 1)
		require.Equal(t, retryAfter, res.Header.Get("Retry-After"))
		loc := f.authRedirect("a", webRedirect)
		require.Equal(t, "temporarily_unavailable", loc.Query().Get("error"), "no code no replica would redeem: %s", loc)
		require.Empty(t, loc.Query().Get("code"))
		login, body := f.send("a", http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
		require.Equal(t, http.StatusServiceUnavailable, login.StatusCode, "no session no replica would serve: %s", body)
		require.Equal(t, retryAfter, login.Header.Get("Retry-After"))
		require.Empty(t, login.Cookies())

		store.mu.Lock()
		store.began = time.Now().Add(-time.Hour) // the margin has passed
		store.mu.Unlock()
		require.Equal(t, http.StatusOK, f.bearerDecide("b", f.passwordToken("a")).Status, "the retry's token is served")
		require.Equal(t, http.StatusOK, f.redeemCode("b", f.authCode("a", webRedirect)).Status, "the retry's code is redeemed")
		f.uiSignIn("a") // the retry's session is served
	})
	t.Run("authorization code", func(t *testing.T) {
		t.Parallel()
		f, store := startStoreFront(t, mockserver.WithFixture(webFixture()))
		code := f.authCode("a", webRedirect)
		store.restart()
		res := f.redeemCode("b", code)
		require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
		require.Equal(t, "invalid_grant", res.JSON(t)["error"])
		require.Contains(t, res.JSON(t)["error_description"], "predates the shared store's keyspace")
		require.Empty(t, res.Header.Get("Retry-After"))
	})
	t.Run("web UI session", func(t *testing.T) {
		t.Parallel()
		f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithWebUI())
		cookies, _ := f.uiSignIn("a")
		store.restart()
		res, body := f.send("b", http.MethodGet, "/ui/realms/acme/home", nil, cookies)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
		require.Contains(t, res.Header.Get("Location"), "/login")
	})
}

// TestIssueTokenIssuesNothingAYoungKeyspaceCannotVouchFor: IssueToken
// mints the token endpoint's tokens, so like the endpoint it hands out no
// token that every replica would refuse for good while the shared store's
// keyspace is too young to vouch for it (it handed one out, and the first
// decision answered 401 "get a new one"); once the keyspace can, it
// issues.
func TestIssueTokenIssuesNothingAYoungKeyspaceCannotVouchFor(t *testing.T) {
	t.Parallel()
	store := &sharedStore{keys: map[string]time.Time{}}
	s, err := mockserver.New(mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store),
		mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithIssuer("http://127.0.0.1:1"))
	require.NoError(t, err)
	// A keyspace that vouches for nothing issued before an hour from now:
	// what Redis's marker says of every token within a minute after it
	// lost its keys.
	store.mu.Lock()
	store.began = time.Now().Add(time.Hour)
	store.mu.Unlock()
	token, err := s.IssueToken("acme", "alice")
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew)
	require.Empty(t, token)

	store.mu.Lock()
	store.began = time.Now().Add(-time.Hour) // the margin has passed
	store.mu.Unlock()
	token = testkit.Must(s.IssueToken("acme", "alice"))(t)
	require.NotEmpty(t, token)
}

// TestNothingIsIssuedWhileTheSharedStoreCannotBeAsked: a credential issued
// while the shared store cannot be asked (Redis restarting or failing
// over) would predate the keyspace it comes back with, and be refused for
// good on its first use (it was issued with 200, and never served). So
// none is issued: the token endpoint answers 503 temporarily_unavailable
// with Retry-After, the authorization endpoint redirects with
// temporarily_unavailable, the web UI's login is a 503, IssueToken fails;
// once the store answers, each issues again.
func TestNothingIsIssuedWhileTheSharedStoreCannotBeAsked(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(webFixture()), mockserver.WithWebUI())
	s, err := mockserver.New(mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store),
		mockserver.WithFixture(webFixture()), mockserver.WithIssuer("http://127.0.0.1:1"))
	require.NoError(t, err)
	store.set(&store.fail, errors.New("connection refused"))

	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}
	res := f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, "no token while the store cannot be asked: %s", res.Body)
	require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	loc := f.authRedirect("a", webRedirect)
	require.Equal(t, "temporarily_unavailable", loc.Query().Get("error"), "no code while the store cannot be asked: %s", loc)
	require.Empty(t, loc.Query().Get("code"))
	login, body := f.send("a", http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(t, http.StatusServiceUnavailable, login.StatusCode, "no session while the store cannot be asked: %s", body)
	require.Empty(t, login.Cookies())
	token, err := s.IssueToken("acme", "alice")
	require.Error(t, err)
	require.NotErrorIs(t, err, dpop.ErrKeyspaceNew, "an outage is not a young keyspace")
	require.Empty(t, token)

	store.set(&store.fail, nil)
	require.Equal(t, http.StatusOK, f.bearerDecide("b", f.passwordToken("a")).Status, "the retry's token is served")
	token = testkit.Must(s.IssueToken("acme", "alice"))(t)
	require.NotEmpty(t, token)
}

// TestASessionIssuedIsServedOnItsFirstUse: the web UI's login asks the
// shared store about the session's start as every use of the session will
// read it back from the cookie (whole seconds): when the keyspace became
// able to vouch within the login's second, the login is refused (503),
// never answered with a session every replica then refuses for good (it
// asked about the login's instant, and the first page sent the user back
// to the login page; a-last8).
func TestASessionIssuedIsServedOnItsFirstUse(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithWebUI(),
		mockserver.WithClock(func() time.Time { return now }))
	// The store vouches for what was issued from 250 ms into this second.
	store.mu.Lock()
	store.began = now.Truncate(time.Second).Add(250 * time.Millisecond)
	store.mu.Unlock()
	login, body := f.send("a", http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(t, http.StatusServiceUnavailable, login.StatusCode, "no session its first use would refuse: %s", body)
	require.Empty(t, login.Cookies())

	store.mu.Lock()
	store.began = now.Truncate(time.Second) // vouches from the second's start
	store.mu.Unlock()
	login, body = f.send("a", http.MethodPost, "/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(t, http.StatusSeeOther, login.StatusCode, body)
	res, body := f.send("a", http.MethodGet, "/ui/realms/acme/home", nil, login.Cookies())
	require.Equal(t, http.StatusOK, res.StatusCode, "the session just issued is served (Location %q): %s", res.Header.Get("Location"), body)
}

// TestACodeIssuedIsRedeemedForATokenServed: a code's token is stamped in
// whole seconds, so the authorization endpoint asks the shared store about
// the code's second, not its instant: when the keyspace became able to
// vouch within that second, no code is issued (its redemption would be
// refused 503 after the code was spent, and its retry invalid_grant;
// a-fix8d F4).
func TestACodeIssuedIsRedeemedForATokenServed(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
	f, store := startStoreFront(t, mockserver.WithFixture(webFixture()), mockserver.WithClock(func() time.Time { return now }))
	store.mu.Lock()
	store.began = now.Truncate(time.Second).Add(250 * time.Millisecond) // vouches from 250 ms into the second
	store.mu.Unlock()
	loc := f.authRedirect("a", webRedirect)
	require.Equal(t, "temporarily_unavailable", loc.Query().Get("error"), "no code whose token would be refused: %s", loc)
	require.Empty(t, loc.Query().Get("code"))

	store.mu.Lock()
	store.began = now.Truncate(time.Second) // vouches from the second's start
	store.mu.Unlock()
	res := f.redeemCode("b", f.authCode("a", webRedirect))
	require.Equal(t, http.StatusOK, res.Status, "the code's token is issued: %s", res.Body)
}
