package mockserver

// The answer cache of /authorize (answercache.go) and the
// verified-token cache's tail hash (tokencache.go). Each test is a promise
// of docs/reference-server.md checked over the server's handler.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

const answersBase = "http://answers.test"

func answersAsk(s *Server, token, body string) *httptest.ResponseRecorder {
	return answersAskIn(s, "acme", token, body)
}

// answersAskIn asks realm's /authorize for body with token.
func answersAskIn(s *Server, realm, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, answersBase+"/realms/"+realm+"/authorization-decision-provider/authorize", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// answersWant is the engine's answer on the live realm, compiled afresh.
func answersWant(t *testing.T, s *Server, user, org string, resources []decision.Resource, method string) (int, string) {
	t.Helper()
	var status int
	var answer string
	require.NoError(t, s.store.Read("acme", func(r *store.Realm) error {
		client, ok := r.ClientNamed("orders-api")
		if !ok || r.Decommissioned() {
			status = http.StatusBadRequest
			return nil
		}
		sub := decision.SubjectOf(r, r.UserByName[user], org)
		status, answer = http.StatusOK, string(appendDecision(nil, decision.Compile(client).Evaluate(&sub, resources, method)))
		return nil
	}))
	return status, answer
}

// TestAnswersFollowWritesUnderConcurrentDecisions: while decision goroutines keep the
// answer cache hot for every (caller, body), a writer flips assignments,
// organization role links, group membership and a client's permissions;
// after each write returns, every caller's answer (asked twice) is the
// engine's on the live realm.
func TestAnswersFollowWritesUnderConcurrentDecisions(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithFixture(DecisionFixture()), WithIssuer(answersBase), es256Tokens)
	askers := answerAskers(t, s)
	bodies := answerBodies
	ids := answerIDs(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 200000; i++ {
				a := askers[(i+g*5)%len(askers)]
				answersAsk(s, a.token, bodies[(i/len(askers))%len(bodies)].body)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	now := time.Unix(0, 0)
	writes := []func(r *store.Realm) error{
		func(r *store.Realm) error { _, _, err := r.Assign(ids["user alice"], ids["dept ops"], now); return err },
		func(r *store.Realm) error { return r.Unassign(ids["user alice"], ids["dept ops"]) },
		func(r *store.Realm) error { _, err := r.LinkRole(ids["org us"], ids["role viewer"]); return err },
		func(r *store.Realm) error { return r.UnlinkRole(ids["org us"], ids["role viewer"]) },
		func(r *store.Realm) error {
			u := r.Users[ids["user dave"]]
			if u.GroupIDs == nil {
				u.GroupIDs = store.Set{}
			}
			u.GroupIDs[ids["group finance"]] = struct{}{}
			return nil
		},
		func(r *store.Realm) error {
			delete(r.Users[ids["user dave"]].GroupIDs, ids["group finance"])
			return nil
		},
		func(r *store.Realm) error {
			_, _, err := r.Assign(ids["user carol"], ids["dept sales"], now)
			return err
		},
		func(r *store.Realm) error { return r.Unassign(ids["user carol"], ids["dept sales"]) },
	}
	// Each write is followed by its undoing.
	for wi, w := range writes {
		_ = s.store.Write("acme", w)
		for _, a := range askers {
			for _, b := range bodies {
				status, answer := answersWant(t, s, a.user, a.org, b.resources, b.method)
				for i := range 2 {
					rec := answersAsk(s, a.token, b.body)
					require.Equal(t, status, rec.Code)
					require.Equal(t, answer, rec.Body.String(), "write %d: %s of %q ask %d %s", wi, a.user, a.org, i, b.body)
				}
			}
		}
	}
}

// TestCachedAnswerNeedsAValidToken: a cached GRANT is never given to a
// token refused: revoked, expired, of another realm, absent, tampered.
func TestCachedAnswerNeedsAValidToken(t *testing.T) {
	t.Parallel()
	var nowNs atomic.Int64
	nowNs.Store(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, nowNs.Load()) }
	fx := DecisionFixture()
	fx.Realms[1].Users = append(fx.Realms[1].Users, FixtureUser{Username: "alice"}) // globex's alice
	s := mustNew(t, WithFixture(fx), WithIssuer(answersBase), WithClock(clock), es256Tokens)
	body := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	grant := func(tok string) {
		t.Helper()
		for range 3 {
			rec := answersAsk(s, tok, body)
			require.Equal(t, 200, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), `"status":"GRANT"`)
		}
	}

	// revoked
	tok := mustIssue(t, s, "acme", "alice", TokenClient("orders-api"))
	grant(tok)
	req := httptest.NewRequest(http.MethodPost, answersBase+"/realms/acme/protocol/openid-connect/revoke", strings.NewReader("token="+tok))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("orders-api", "orders-secret")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	rec = answersAsk(s, tok, body)
	require.Equal(t, 401, rec.Code, "revoked token answered from the cache: %s", rec.Body.String())

	// another token of alice still gets the cached GRANT (shared by design)
	tok2 := mustIssue(t, s, "acme", "alice", TokenLifetime(time.Minute))
	grant(tok2)
	// expired
	nowNs.Add(int64(2 * time.Minute))
	rec = answersAsk(s, tok2, body)
	require.Equal(t, 401, rec.Code, "expired token answered from the cache: %s", rec.Body.String())

	// a token of globex's alice on acme's route
	tok3 := mustIssue(t, s, "globex", "alice")
	rec = answersAsk(s, tok3, body)
	require.Equal(t, 401, rec.Code, rec.Body.String())
	// no token
	rec = answersAsk(s, "", body)
	require.Equal(t, 401, rec.Code, rec.Body.String())
	// a token whose last 64 bytes are a valid cached token's, the rest changed
	tok4 := mustIssue(t, s, "acme", "alice", TokenLifetime(time.Hour))
	grant(tok4)
	parts := strings.Split(tok4, ".")
	carolTok := mustIssue(t, s, "acme", "carol", TokenLifetime(time.Hour))
	cp := strings.Split(carolTok, ".")
	forged := cp[0] + "." + cp[1] + "." + parts[2] // carol's claims with alice's signature
	rec = answersAsk(s, forged, body)
	require.Equal(t, 401, rec.Code, "carol's claims with alice's (cached) signature: %s", rec.Body.String())
}

// TestCachedAnswersTakeFaultsAndTheDenialLog: injected failures apply to cached answers;
// a denial log sees every denial, repeated or not.
func TestCachedAnswersTakeFaultsAndTheDenialLog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logged []string
	s := testkit.Must(New(WithFixture(DecisionFixture()), WithIssuer(answersBase), es256Tokens,
		WithDenialLog(func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() })))(t)
	tok := mustIssue(t, s, "acme", "dave")
	body := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	for range 5 {
		rec := answersAsk(s, tok, body)
		require.Equal(t, 200, rec.Code)
	}
	mu.Lock()
	require.Len(t, logged, 5)
	mu.Unlock()

	s2 := mustNew(t, WithFixture(DecisionFixture()), WithIssuer(answersBase), es256Tokens)
	tok = mustIssue(t, s2, "acme", "alice")
	for range 3 {
		require.Equal(t, 200, answersAsk(s2, tok, body).Code)
	}
	s2.store.SetConfig(store.Config{TokenLifetimeSeconds: 300, MaxPageSize: 100, DecisionFailureRate: 1})
	for range 3 {
		require.Equal(t, 503, answersAsk(s2, tok, body).Code)
	}
}

// TestCachedAnswerRefusedAfterDecommissionOrWithoutItsBinding: a decommissioned tenant's cached answer
// is not given; a DPoP-bound token of a subject with a cached GRANT is
// refused without its proof.
func TestCachedAnswerRefusedAfterDecommissionOrWithoutItsBinding(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithFixture(DecisionFixture()), WithIssuer(answersBase), es256Tokens)
	key, kid := testkit.Must2(s.keys.signing("tenant1"))(t)
	rm := testkit.Must(s.store.ProvisionTenant("tenant1", "free", "boss@t.test", "pw-pw-pw-pw", key, kid))(t)
	tok := mustIssue(t, s, "tenant1", "boss@t.test")
	body := `{"clientId":"admin-cli","resources":[{"name":"x"}],"context":{}}`
	ask := func() *httptest.ResponseRecorder { return answersAskIn(s, "tenant1", tok, body) }
	for range 3 {
		rec := ask()
		require.Equal(t, 200, rec.Code, rec.Body.String())
	}
	testkit.Must2(s.store.DecommissionTenant(rm.Tenant.ID))(t)
	rec := ask()
	require.NotEqual(t, 200, rec.Code, rec.Body.String())

	alice := mustIssue(t, s, "acme", "alice")
	gbody := `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`
	for range 3 {
		require.Contains(t, answersAsk(s, alice, gbody).Body.String(), `"status":"GRANT"`)
	}
	bound := mustIssue(t, s, "acme", "alice", TokenDPoPBinding("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"))
	rec = answersAsk(s, bound, gbody)
	require.Equal(t, 401, rec.Code, "a bound token without its proof: %s", rec.Body.String())
}
