package redisstore_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// service is one replica of a service that answers GET /orders for a
// caller holding a DPoP-bound token: its own dpop.Verifier (replay check in
// Redis, shared) checks the proof, then its own pep.Client (purges shared
// through Redis) asks the gateway, with the caller's token, whether it may
// read orders. It answers 200, 403 (denied) or 401 (proof refused), with
// X-Cached saying whether the decision came from its cache.
type service struct {
	pep      *pep.Client
	verifier *dpop.Verifier
	public   string              // the front's URL: the proofs' htu
	jkt      func(string) string // the key a token is bound to, as the service's token check would find it
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "DPoP ")
	if !ok || token == "" {
		http.Error(w, "no DPoP token", http.StatusUnauthorized)
		return
	}
	if _, err := s.verifier.Verify(r.Context(), dpop.Request{
		Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: s.public + r.URL.Path,
		AccessToken: token, JKT: s.jkt(token),
	}); err != nil {
		http.Error(w, "proof refused", http.StatusUnauthorized)
		return
	}
	d, _ := s.pep.Check(pep.WithToken(r.Context(), token), "orders", "read")
	w.Header().Set("X-Cached", strconv.FormatBool(d.Cached))
	if !d.Allowed() {
		http.Error(w, "denied", http.StatusForbidden)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// front is a round-robin reverse proxy on loopback before the replicas.
type front struct {
	*httptest.Server
	next atomic.Uint64
}

// TestReplicasBehindAFront: three replicas of a service behind a
// round-robin front, sharing Redis for DPoP replay checks and cache purges
// (two servers, so that the purges' can restart under a working service).
// Each proof is accepted once across the replicas, however often it is
// replayed; a token revoked at the server and purged on one replica is
// granted by none once the propagation bound has passed; and while the
// purges' Redis restarts, no replica serves a cached decision, and all
// cache again once it is back, none restarted.
func TestReplicasBehindAFront(t *testing.T) {
	t.Parallel()
	invRedis, replayRedis := redistest.Start(t), redistest.Start(t)
	gw := startGateway(t)
	// A keyspace that never held a proof: the store may vouch for proofs
	// from the start (see redisstore.ReplayStore).
	const replayPrefix = "test:replay:"
	require.NoError(t, replayRedis.Client().Set(t.Context(), replayPrefix+redisstore.SinceKey, 0, 0).Err())

	var (
		jktMu sync.Mutex
		jkts  = map[string]string{}
	)
	jktOf := func(tok string) string {
		jktMu.Lock()
		defer jktMu.Unlock()
		return jkts[tok]
	}
	f := &front{}
	f.Server = httptest.NewUnstartedServer(nil)
	public := "http://" + f.Listener.Addr().String()
	var proxies []*httputil.ReverseProxy
	var replicas []*service
	for range 3 {
		verifier := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(redisstore.NewReplayStore(replayRedis.Client(), replayPrefix))))(t)
		s := &service{pep: replica(t, gw, invRedis.Client(), "test:replicas"), verifier: verifier, public: public, jkt: jktOf}
		backend := testkit.Serve(t, s)
		u := testkit.Must(url.Parse(backend.URL))(t)
		proxies = append(proxies, httputil.NewSingleHostReverseProxy(u))
		replicas = append(replicas, s)
	}
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(f.next.Add(1)-1) % len(proxies)
		w.Header().Set("X-Replica", strconv.Itoa(i))
		proxies[i].ServeHTTP(w, r)
	})
	f.Start()
	t.Cleanup(f.Close)
	peps := make([]*pep.Client, len(replicas))
	for i, s := range replicas {
		peps[i] = s.pep
	}
	waitFor(t, "every replica trusts its cache", 10*time.Second, trusted(peps...))

	signer := testkit.Must(dpop.GenerateKey())(t)
	bob := revocable(gw, "bob")
	jktMu.Lock()
	jkts[bob] = signer.Thumbprint()
	jktMu.Unlock()

	type answer struct {
		status int
		cached bool
		proof  string
	}
	// send sends GET /orders through the front with proof ("" for a fresh
	// one).
	send := func(tok, proof string) answer {
		t.Helper()
		if proof == "" {
			var err error
			proof, err = signer.Proof(http.MethodGet, public+"/orders", tok, "")
			require.NoError(t, err)
		}
		req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, public+"/orders", nil))(t)
		req.Header.Set("Authorization", "DPoP "+tok)
		req.Header.Set("DPoP", proof)
		resp := testkit.Must(f.Client().Do(req))(t)
		require.NoError(t, resp.Body.Close())
		return answer{status: resp.StatusCode, cached: resp.Header.Get("X-Cached") == "true", proof: proof}
	}

	// Every replica grants bob, from its cache the second time.
	var accepted []string
	for i := range 2 * len(replicas) {
		a := send(bob, "")
		require.Equal(t, http.StatusOK, a.status)
		assert.Equal(t, i >= len(replicas), a.cached, "request %d", i)
		accepted = append(accepted, a.proof)
	}
	replays := func() {
		t.Helper()
		for _, p := range accepted {
			for range len(replicas) {
				require.Equal(t, http.StatusUnauthorized, send(bob, p).status, "a replayed proof was accepted")
			}
		}
	}
	replays()

	// The purges' Redis restarts: no replica serves its cache meanwhile.
	invRedis.Stop()
	waitFor(t, "every replica bypasses its cache", 10*time.Second, func() bool {
		for _, c := range peps {
			if !c.Stats().CacheBypassed {
				return false
			}
		}
		return true
	})
	for range 2 * len(replicas) {
		a := send(bob, "")
		require.Equal(t, http.StatusOK, a.status)
		require.False(t, a.cached, "a cached decision was served while the purges' Redis was down")
		accepted = append(accepted, a.proof)
	}
	invRedis.Restart()
	waitFor(t, "every replica trusts its cache again", 15*time.Second, trusted(peps...))
	for range 2 * len(replicas) {
		a := send(bob, "")
		require.Equal(t, http.StatusOK, a.status)
		accepted = append(accepted, a.proof)
	}
	for i, c := range peps {
		assert.GreaterOrEqual(t, c.Stats().InvalidationRecoveries, uint64(2), "replica %d purged its cache when the channel came back", i)
	}

	// bob's token is revoked at the server and purged on replica 0.
	gw.Revoke(t, realm, app, secret, bob)
	require.NoError(t, peps[0].Purge(t.Context(), bob))
	bound := time.Now().Add(invalidation.DefaultTrust)
	grantsBefore, afterBound := 0, 0
	// Sampled every 10 ms: back to back, the requests burn the CPU the
	// replicas need to read the purge.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; afterBound < 3*len(replicas); <-tick.C {
		began := time.Now()
		a := send(bob, "")
		if a.status == http.StatusOK {
			require.True(t, began.Before(bound), "a replica granted the purged token %v after the propagation bound", began.Sub(bound))
			grantsBefore++
		}
		if began.After(bound) {
			afterBound++
		}
	}
	// Within the bound a replica may grant until the purge reaches it;
	// on loopback it has before the next request.
	t.Logf("GRANTs after Purge returned, within the propagation bound: %d", grantsBefore)
	replays()
}
