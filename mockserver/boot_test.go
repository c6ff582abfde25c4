package mockserver_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
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
	hs := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		name := r.Header.Get("X-Replica")
		if name == "" { // a browser's request
			name = "a"
		}
		s := f.servers[name]
		f.mu.Unlock()
		s.ServeHTTP(w, r)
	}))
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

// requireGrant checks that replica serves token a GRANT.
func (f *restartFront) requireGrant(replica, token, why string) {
	f.t.Helper()
	res := f.bearerDecide(replica, token)
	require.Equal(f.t, http.StatusOK, res.Status, "%s: %s", why, res.Body)
	require.Equal(f.t, "GRANT", res.JSON(f.t)["status"], why)
}

// requireRevoked checks that replica refuses token as a revoked one: 401
// invalid_token at a decision, inactive at introspection.
func (f *restartFront) requireRevoked(replica, token, why string) {
	f.t.Helper()
	res := f.bearerDecide(replica, token)
	require.Equal(f.t, http.StatusUnauthorized, res.Status, "%s: %s", why, res.Body)
	require.Contains(f.t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`, why)
	require.Equal(f.t, "invalid token: token revoked", res.JSON(f.t)["message"], why)
	form := url.Values{"client_id": {"orders-api"}, "client_secret": {"orders-secret"}, "token": {token}}
	res = f.do(replica, http.MethodPost, introspectPath, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(f.t, map[string]any{"active": false}, res.JSON(f.t), why)
}

// revoke revokes token at replica (RFC 7009, as its client admin-cli).
func (f *restartFront) revoke(replica, token string) {
	f.t.Helper()
	res := f.revokeAt(replica, token)
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
}

// TestWithoutSharedStoreServesOnlyItsOwnTokens: a seeded server without a
// shared store keeps its revocations in memory while its signing keys
// outlive it, and no clock orders two processes, so it serves only the
// access tokens it minted itself; every other token, which it cannot know
// was not revoked elsewhere, is refused as revoked whatever its stamps
// say. A restarted server (a new server with the same seed) refuses a
// token revoked before the restart (it served it again, a false GRANT:
// within the same second, and after a clock that ran ahead stepped back
// between the revocation and the restart) and one that was not revoked,
// which it cannot tell apart; it serves its own tokens, even after its
// clock stepped back an hour. A replica refuses another replica's token
// without a shared store, whether it started before or after the token
// was minted and whichever clock is behind, and serves it with one. An
// authorization code issued before the restart is refused (codes are the
// process's memory). With a shared store a restart serves the earlier
// token, and refuses the revoked one by the store.
func TestWithoutSharedStoreServesOnlyItsOwnTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ahead time.Duration // how far the clock runs ahead when the token is minted and revoked; stepped back before the restart
	}{
		{"restart", 0},
		{"restart after the clock stepped back", 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := testkit.NewClock(time.Now().Add(tc.ahead))
			opts := []mockserver.Option{mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithClock(clock.Now)}
			f := newRestartFront(t)
			f.start("a", opts...)

			revoked, kept := f.passwordToken("a"), f.passwordToken("a")
			f.revoke("a", revoked)
			f.requireRevoked("a", revoked, "revoked before the restart")
			f.requireGrant("a", kept, "not revoked, before the restart")

			clock.Advance(-tc.ahead) // NTP corrects a clock that ran ahead
			f.start("a", opts...)
			f.requireRevoked("a", revoked, "revoked before the restart, after it")
			f.requireRevoked("a", kept, "minted before the restart, after it")
			fresh := f.passwordToken("a")
			f.requireGrant("a", fresh, "minted after the restart")

			clock.Advance(-time.Hour) // the clock steps back
			f.requireGrant("a", fresh, "its own token minted before the step back")
			f.requireGrant("a", f.passwordToken("a"), "its own token minted after the step back")
		})
	}
	t.Run("replicas", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			shared bool
		}{
			{"without a shared store", false},
			{"with a shared store", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				clockA, clockB := testkit.NewClock(time.Now()), testkit.NewClock(time.Now().Add(-30*time.Second)) // b's clock is behind
				opts := []mockserver.Option{mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed)}
				if tc.shared {
					opts = append(opts, mockserver.WithReplayStore(&sharedStore{keys: map[string]time.Time{}}))
				}
				f := newRestartFront(t)
				f.start("a", append(opts, mockserver.WithClock(clockA.Now))...)
				f.start("b", append(opts, mockserver.WithClock(clockB.Now))...)
				byA, byB := f.passwordToken("a"), f.passwordToken("b") // minted after both started
				f.start("c", append(opts, mockserver.WithClock(clockA.Now))...)
				for _, u := range []struct{ replica, token, why string }{
					{"b", byA, "a's token at b, started before it was minted, by a clock behind a's"},
					{"a", byB, "b's token at a, stamped by a clock behind a's"},
					{"c", byA, "a's token at c, started after it was minted"},
				} {
					if tc.shared {
						f.requireGrant(u.replica, u.token, u.why)
					} else {
						f.requireRevoked(u.replica, u.token, u.why)
					}
				}
				f.requireGrant("a", byA, "a's own token")
				f.requireGrant("b", byB, "b's own token")
			})
		}
	})
	t.Run("authorization code", func(t *testing.T) {
		t.Parallel()
		target := servertest.RedirectTarget(t)
		opts := []mockserver.Option{mockserver.WithFixture(servertest.AuthCodeFixture(target)), mockserver.WithKeySeed(keySeed)}
		f := newRestartFront(t)
		f.start("a", opts...)
		verifier := newVerifier()
		code := func() string {
			back := servertest.SignIn(t, http.DefaultClient, f.URL+authPath+"?"+authCodeRequest(target, verifier).Encode(), "alice", "alice-pw")
			return back.Query().Get("code")
		}
		redeem := func(code string) servertest.Result {
			form := url.Values{"grant_type": {"authorization_code"}, "client_id": {"web-app"}, "redirect_uri": {target},
				"code_verifier": {verifier}, "code": {code}}
			return f.do("a", http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), nil)
		}
		before := code()
		f.start("a", opts...)
		res := redeem(before)
		require.Equal(t, http.StatusBadRequest, res.Status, "a code issued before the restart: %s", res.Body)
		require.Equal(t, "invalid_grant", res.JSON(t)["error"])
		res = redeem(code())
		require.Equal(t, http.StatusOK, res.Status, "a code issued after the restart: %s", res.Body)
		f.requireGrant("a", res.JSON(t)["access_token"].(string), "its token")
	})
	t.Run("shared store", func(t *testing.T) {
		t.Parallel()
		store := &sharedStore{keys: map[string]time.Time{}}
		opts := []mockserver.Option{mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store)}
		f := newRestartFront(t)
		f.start("a", opts...)
		revoked, kept := f.passwordToken("a"), f.passwordToken("a")
		f.revoke("a", revoked)

		f.start("a", opts...)
		f.requireRevoked("a", revoked, "revoked before the restart, in the shared store")
		f.requireGrant("a", kept, "not revoked, minted before the restart")
	})
}
