package mockserver_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
)

// restartFront is a front whose replicas come and go while it serves: a
// "restart" is a new server with the same options under the same name.
// Every server sees the front's URL, so tokens keep their issuer.
type restartFront struct {
	*front
	mu      sync.Mutex
	servers map[string]*mockserver.Server
}

func newRestartFront(t *testing.T) *restartFront {
	t.Helper()
	f := &restartFront{front: &front{t: t}, servers: map[string]*mockserver.Server{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		name := r.Header.Get("X-Replica")
		if name == "" { // a browser's request
			name = "a"
		}
		s := f.servers[name]
		f.mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f.URL = hs.URL
	return f
}

// start makes a server with opts and serves it as name, replacing the one
// serving as name before (a restart).
func (f *restartFront) start(name string, opts ...mockserver.Option) {
	f.t.Helper()
	s, err := mockserver.New(opts...)
	require.NoError(f.t, err)
	f.mu.Lock()
	f.servers[name] = s
	f.mu.Unlock()
}

// token gets alice a Bearer token from replica (password grant).
func (f *restartFront) token(replica string) string {
	f.t.Helper()
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}
	res := f.do(replica, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, res.status, string(res.body))
	return res.json(f.t)["access_token"].(string)
}

// decideBearer asks replica for a decision with token as Bearer.
func (f *restartFront) decideBearer(replica, token string) httpResult {
	f.t.Helper()
	return f.do(replica, http.MethodPost, authorizePath, "application/json",
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`,
		http.Header{"Authorization": {"Bearer " + token}})
}

// requireGrant checks that replica serves token a GRANT.
func (f *restartFront) requireGrant(replica, token, why string) {
	f.t.Helper()
	res := f.decideBearer(replica, token)
	require.Equal(f.t, http.StatusOK, res.status, "%s: %s", why, res.body)
	require.Equal(f.t, "GRANT", res.json(f.t)["status"], why)
}

// requireRevoked checks that replica refuses token as a revoked one: 401
// invalid_token at a decision, inactive at introspection.
func (f *restartFront) requireRevoked(replica, token, why string) {
	f.t.Helper()
	res := f.decideBearer(replica, token)
	require.Equal(f.t, http.StatusUnauthorized, res.status, "%s: %s", why, res.body)
	require.Contains(f.t, res.header.Get("WWW-Authenticate"), `error="invalid_token"`, why)
	require.Equal(f.t, "invalid token: token revoked", res.json(f.t)["message"], why)
	form := url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {token}}
	res = f.do(replica, http.MethodPost, introspectPath, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, res.status, string(res.body))
	require.Equal(f.t, map[string]any{"active": false}, res.json(f.t), why)
}

// stepClock is a clock a test sets.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRestartRefusesEarlierTokens: a seeded server without a shared store
// keeps its revocations in memory while its signing keys outlive it, so
// a restarted one (a new server with the same seed) refuses every token
// minted before it started, as revoked: a token revoked before the
// restart no longer verifies again after it (it did: a false GRANT), and
// nor does one that was not revoked, which the restarted server cannot
// tell apart. A token the restarted server mints verifies, even after its
// clock stepped back an hour; a replica started before a token was minted
// serves it, one started after refuses it, as does one whose start
// reading is later than the token's stamp (the minting clock stepped
// back). An authorization code issued before the restart is refused
// (codes are the process's memory). With a shared store nothing of this applies: the restart serves
// the earlier token, and refuses the revoked one by the store.
func TestRestartRefusesEarlierTokens(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		clock := &stepClock{now: time.Now()}
		opts := []mockserver.Option{mockserver.WithFixture(dpopFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithClock(clock.Now)}
		f := newRestartFront(t)
		f.start("a", opts...)

		revoked, kept := f.token("a"), f.token("a")
		res := f.do("a", http.MethodPost, revokePath, "application/x-www-form-urlencoded",
			url.Values{"client_id": {"admin-cli"}, "token": {revoked}}.Encode(), nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		f.requireRevoked("a", revoked, "revoked before the restart")
		f.requireGrant("a", kept, "not revoked, before the restart")

		f.start("a", opts...) // the restart, within the same second
		f.requireRevoked("a", revoked, "revoked before the restart, after it")
		f.requireRevoked("a", kept, "minted before the restart, after it")
		fresh := f.token("a")
		f.requireGrant("a", fresh, "minted after the restart")

		clock.add(time.Second)
		f.start("b", opts...) // a replica started after fresh was minted
		f.requireRevoked("b", fresh, "minted by a before b started")
		clock.add(time.Nanosecond)
		later := f.token("a")
		f.requireGrant("b", later, "minted by a after b started")

		clock.add(-time.Hour) // a's and b's clock steps back
		back := f.token("a")
		f.requireGrant("a", back, "a's own token minted after the step back")
		f.requireGrant("a", fresh, "a's own token minted before the step back")
		f.requireRevoked("b", back, "stamped before b's start reading")
	})
	t.Run("authorization code", func(t *testing.T) {
		t.Parallel()
		target := redirectTarget(t)
		opts := []mockserver.Option{mockserver.WithFixture(authCodeFixture(target)), mockserver.WithKeySeed(keySeed)}
		f := newRestartFront(t)
		f.start("a", opts...)
		verifier := newVerifier()
		code := func() string {
			back := signIn(t, http.DefaultClient, f.URL+authPath+"?"+authCodeRequest(target, verifier).Encode(), "alice", "alice-pw")
			return back.Query().Get("code")
		}
		redeem := func(code string) httpResult {
			form := url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"}, "redirect_uri": {target},
				"code_verifier": {verifier}, "code": {code}}
			return f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
		}
		before := code()
		f.start("a", opts...)
		res := redeem(before)
		require.Equal(t, http.StatusBadRequest, res.status, "a code issued before the restart: %s", res.body)
		require.Equal(t, "invalid_grant", res.json(t)["error"])
		res = redeem(code())
		require.Equal(t, http.StatusOK, res.status, "a code issued after the restart: %s", res.body)
		f.requireGrant("a", res.json(t)["access_token"].(string), "its token")
	})
	t.Run("shared store", func(t *testing.T) {
		t.Parallel()
		store := &sharedStore{keys: map[string]time.Time{}}
		opts := []mockserver.Option{mockserver.WithFixture(dpopFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store)}
		f := newRestartFront(t)
		f.start("a", opts...)
		revoked, kept := f.token("a"), f.token("a")
		res := f.do("a", http.MethodPost, revokePath, "application/x-www-form-urlencoded",
			url.Values{"client_id": {"admin-cli"}, "token": {revoked}}.Encode(), nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))

		f.start("a", opts...)
		f.requireRevoked("a", revoked, "revoked before the restart, in the shared store")
		f.requireGrant("a", kept, "not revoked, minted before the restart")
	})
}
