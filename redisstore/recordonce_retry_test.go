package redisstore

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The PKCE pair of RFC 7636 appendix B.
const (
	retryVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	retryChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	retryRedirect  = "https://app.test/cb"
)

// codeServer is a reference server sharing store, with a public client
// "web" redeeming codes with PKCE.
type codeServer struct {
	t   *testing.T
	url string
}

func startCodeServer(t *testing.T, store *ReplayStore) *codeServer {
	t.Helper()
	base, _ := inProcess(t, store, "0123456789abcdef0123456789abcdef", mockserver.WithFixture(mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:    "acme",
		Users:   []mockserver.FixtureUser{{Username: "alice", Password: "alice-pw"}},
		Clients: []mockserver.FixtureClient{{ClientID: "web", Public: true, RedirectURIs: []string{retryRedirect}}},
	}}}))
	return &codeServer{t: t, url: base}
}

// code signs alice in for "web" and returns the authorization code.
func (s *codeServer) code() string {
	s.t.Helper()
	form := url.Values{"response_type": {"code"}, "client_id": {"web"}, "redirect_uri": {retryRedirect}, "state": {"s"},
		"code_challenge": {retryChallenge}, "code_challenge_method": {"S256"}, "username": {"alice"}, "password": {"alice-pw"}}
	req, err := http.NewRequestWithContext(s.t.Context(), http.MethodPost, s.url+"/realms/acme/protocol/openid-connect/auth", strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	require.NoError(s.t, err)
	resp.Body.Close()
	require.Equal(s.t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(s.t, err)
	require.NotEmpty(s.t, loc.Query().Get("code"))
	return loc.Query().Get("code")
}

// redeemed is the answer to a redemption: its status, OAuth error ("" on
// 200), body and Retry-After.
type redeemed struct {
	status                int
	err, body, retryAfter string
}

// redeem redeems code with verifier.
func (s *codeServer) redeem(code, verifier string) redeemed {
	s.t.Helper()
	status, h, body := frontCall(s.t, s.url, http.MethodPost, tokenPath, nil,
		"application/x-www-form-urlencoded", url.Values{"grant_type": {"authorization_code"}, "client_id": {"web"}, "code": {code},
			"redirect_uri": {retryRedirect}, "code_verifier": {verifier}}.Encode())
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return redeemed{status, e.Error, string(body), h.Get("Retry-After")}
}

// shortWait is the WithReplicas timeout of the tests that wait for a
// replica: a WAIT that falls short costs it, and one that a replica
// attached by attachReplica answers returns at once. It is also the time
// a replica behind a test proxy has to acknowledge a record on a loaded
// machine under -race, where 300 ms fell short.
const shortWait = time.Second

// waitingReplicas starts two in-process reference servers on srv, whose
// stores wait for one Redis replica (WithReplicas: a's for waitA, b's for
// waitB) on a settled keyspace, and returns their URLs and a token a
// issued to alice.
func waitingReplicas(t *testing.T, srv *redistest.Server, waitA, waitB time.Duration) (a, b, token string) {
	t.Helper()
	const prefix, seed = "t:", "0123456789abcdef0123456789abcdef"
	settled(t, srv.Client(), prefix)
	a = replicaOn(t, NewReplayStore(srv.Client(), prefix, WithReplicas(1, waitA)), seed)
	b = replicaOn(t, NewReplayStore(srv.Client(), prefix, WithReplicas(1, waitB)), seed)
	return a, b, aliceToken(t, a)
}

// attachReplica starts a Redis replicating srv and waits until WAIT 1
// counts it.
func attachReplica(t *testing.T, srv *redistest.Server) {
	t.Helper()
	rep := redistest.Start(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	require.NoError(t, rep.Client().Do(t.Context(), "REPLICAOF", host, port).Err())
	require.Eventually(t, func() bool {
		// WAIT counts acknowledgements of its connection's own writes.
		var wait *redis.Cmd
		_, err := srv.Client().Pipelined(t.Context(), func(p redis.Pipeliner) error {
			p.Set(t.Context(), "attach", "1", time.Minute)
			wait = p.Do(t.Context(), "WAIT", 1, 100)
			return nil
		})
		n, _ := wait.Int64()
		return err == nil && n >= 1
	}, 15*time.Second, 50*time.Millisecond)
}

// TestReplicasCodeAnswered503IsRedeemedOnItsRetry: with WithReplicas, a
// redemption whose spend no replica acknowledged (a replica down) is
// answered 503, and its retry, once the replica is back, is redeemed: the
// 503 promised a retry, and the spend left in Redis is its own. Another
// redeemer of the code (no verifier of its own) is still refused, and so
// is the redemption repeated once answered.
func TestReplicasCodeAnswered503IsRedeemedOnItsRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // no replica yet: every WAIT 1 falls short
	if !srv.Real() {
		t.Skip("miniredis has no replication: CI (.ci/run) runs the real server")
	}
	c := srv.Client()
	store := NewReplayStore(c, "t:", WithReplicas(1, shortWait))
	settled(t, c, store.prefix)
	s := startCodeServer(t, store)
	code := s.code()

	a := s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "no replica acknowledged the spend: %s", a.body)
	attachReplica(t, srv)
	a = s.redeem(code, "another-verifier-of-43-characters-or-more-x")
	require.Equal(t, http.StatusBadRequest, a.status, "another redeemer: %s", a.body)
	require.Equal(t, "invalid_grant", a.err)
	a = s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusOK, a.status, "the redeemer's retry after the 503: %s", a.body)
	a = s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusBadRequest, a.status, "the redemption repeated once answered: %s", a.body)
	require.Equal(t, "invalid_grant", a.err)
}

// heldReply holds, once armed, the first reply that answers the write of
// a one-time record (SET's "+OK", or the record script's array answering
// "new") until released: the command has run on Redis; only its answer is
// late (a congested link, a paused process between Redis and the server).
type heldReply struct {
	armed         atomic.Bool
	once, release sync.Once
	held, free    chan struct{} // held is closed when a reply is held; free lets it go
}

func (h *heldReply) seen(b []byte) {
	if h.armed.Load() && (bytes.HasPrefix(b, []byte("+OK")) || bytes.Contains(b, []byte("$3\r\nnew\r\n"))) {
		h.armed.Store(false)
		h.once.Do(func() { close(h.held) })
		<-h.free
	}
}

func (h *heldReply) let() { h.release.Do(func() { close(h.free) }) }

// TestCodeWhoseSpendAnswerCameLateIsRedeemedOnItsRetry: a redemption
// whose spend ran on Redis but whose answer came after the server's 2 s
// bound is answered 503, and its retry is redeemed: the record is its
// own. Another redeemer is refused.
func TestCodeWhoseSpendAnswerCameLateIsRedeemedOnItsRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	hold := &heldReply{held: make(chan struct{}), free: make(chan struct{})}
	proxy := redistest.StartProxy(t, redistest.Listen(t), srv.Addr(), hold.seen)
	t.Cleanup(hold.let) // before the proxy's cleanup, which waits for its copies
	pc := redis.NewClient(&redis.Options{Addr: proxy.Addr, PoolSize: 1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = pc.Close() })
	store := NewReplayStore(pc, "t:")
	settled(t, c, store.prefix)
	require.NoError(t, pc.Ping(t.Context()).Err()) // the one connection is up before the proxy is armed
	s := startCodeServer(t, store)
	code := s.code()

	hold.armed.Store(true)
	a := s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "the spend's answer is late: %s", a.body)
	<-hold.held // the spend ran on Redis
	hold.let()

	a = s.redeem(code, "another-verifier-of-43-characters-or-more-x")
	require.NotEqual(t, http.StatusOK, a.status, "another redeemer: %s", a.body)
	require.Eventually(t, func() bool {
		// The store's one connection may have been closed by the
		// timeout: the first retry may be a 503 too.
		a = s.redeem(code, retryVerifier)
		return a.status != http.StatusServiceUnavailable
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, http.StatusOK, a.status, "the redeemer's retry after the 503: %s", a.body)
}

// TestReplicasRevocationFoundIsAnswered200OnlyOnceReplicasHoldIt: with
// WithReplicas, a revocation that finds the token revoked already (a
// record another replica wrote, whose WAIT fell short) answers 200 only
// once the replicas hold that record: 503 before, so that no 200 stands
// on a record a failover could lose. Once a replica holds it, the
// revocation answers 200 and every replica refuses the token.
func TestReplicasRevocationFoundIsAnswered200OnlyOnceReplicasHoldIt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // no replica yet: every WAIT 1 falls short
	if !srv.Real() {
		t.Skip("miniredis has no replication: CI (.ci/run) runs the real server")
	}
	a, b, token := waitingReplicas(t, srv, shortWait, shortWait)
	revoke := func(base string) int {
		status, _ := revokeAt(t, base, token)
		return status
	}

	require.Equal(t, http.StatusServiceUnavailable, revoke(a), "no replica acknowledged a's record")
	require.Equal(t, http.StatusServiceUnavailable, revoke(b), "b finds a's record, which no replica holds")
	attachReplica(t, srv)
	require.Equal(t, http.StatusOK, revoke(b), "b finds a's record, a replica holds it")
	for name, base := range map[string]string{"a": a, "b": b} {
		status, got := decideAt(t, base, token)
		require.Equal(t, http.StatusUnauthorized, status, "replica %s serves a revoked token: %s", name, got)
	}
}
