package soak_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

var replicasRedisEvery = flag.Duration("soak.redis-restart", 0,
	"how often TestReplicasSoak restarts the purges' Redis (0: once, a quarter of the way through -soak.duration)")

const (
	// replicasCount replicas of the service stand behind the front.
	replicasCount = 3
	// replicasUsers viewers of acme hold a DPoP-bound token each (a new
	// one after each revocation); replicasCallers send their requests.
	replicasUsers   = 32
	replicasCallers = 8
	// replicasPause is the pause between two revocations.
	replicasPause = 100 * time.Millisecond
	// replicasRecent is how many of the last revoked tokens the callers
	// keep trying: at a revocation every 100 ms or so (plus the purge's
	// propagation), several seconds' worth, so that many requests carry
	// a token whose bound has passed.
	replicasRecent = 64
	// replicasMinDuration is the shortest run: the restart purges every
	// replica's whole cache, so only the tokens revoked after it whose
	// bound (2 s) passes before the end can show a stale GRANT, and the
	// 3 s of -soak.duration's default leave almost none.
	replicasMinDuration = 5 * time.Second
	// replicasBound is the propagation bound: the longest a replica may
	// serve a cached decision of a token after Purge returned on another.
	replicasBound = invalidation.DefaultTrust
)

// replicaService is one replica of a service answering GET /orders, as in
// redisstore's TestReplicasBehindAFront: its own dpop.Verifier (replays
// checked in the shared replay Redis, HMAC nonces under a shared secret)
// checks the proof, then its own pep.Client (purges shared through the
// purges' Redis) asks whether the caller may read orders. It answers 200,
// 403 (denied) or 401 (proof refused: X-Refused says why, DPoP-Nonce
// carries a fresh nonce when one is wanted); X-Cached says whether the
// decision came from the cache.
type replicaService struct {
	pep      *pep.Client
	verifier *dpop.Verifier
	public   string              // the front's URL: the proofs' htu
	jkt      func(string) string // the key a token is bound to
}

func (s *replicaService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "DPoP ")
	if !ok || token == "" {
		http.Error(w, "no DPoP token", http.StatusUnauthorized)
		return
	}
	if _, err := s.verifier.Verify(r.Context(), dpop.Request{
		Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: s.public + r.URL.Path,
		AccessToken: token, JKT: s.jkt(token),
	}); err != nil {
		var ne *dpop.NonceError
		if errors.As(err, &ne) && ne.Nonce != "" {
			w.Header().Set("DPoP-Nonce", ne.Nonce)
		}
		reason := dpop.ErrorCode(err)
		if errors.Is(err, dpop.ErrReplay) {
			reason = "replay"
		}
		w.Header().Set("X-Refused", reason)
		http.Error(w, "proof refused", http.StatusUnauthorized)
		return
	}
	d, err := s.pep.Check(pep.WithToken(r.Context(), token), "orders", "read")
	w.Header().Set("X-Cached", strconv.FormatBool(d.Cached))
	if err != nil {
		w.Header().Set("X-Decision-Error", "true")
	}
	if !d.Allowed() {
		http.Error(w, "denied", http.StatusForbidden)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// purgeWatch times each purge's arrival at every replica: the revoker
// registers the token before calling Purge, each replica's receiver
// reports every message once it has applied it.
type purgeWatch struct {
	mu     sync.Mutex
	purges map[string]*purgeTrack // by message
}

// purgeTrack is one purge: when Purge was called and returned, and when
// each replica applied its message (zero: not yet).
type purgeTrack struct {
	start, returned time.Time
	applied         [replicasCount]time.Time
	n               int
}

func (p *purgeWatch) begin(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purges[string(purgeMessage(token))] = &purgeTrack{start: time.Now()}
}

func (p *purgeWatch) returned(token string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purges[string(purgeMessage(token))].returned = at
}

// purgeMessage is the message a client publishes to purge token's
// decisions (internal/core: version 1, kind 't', then a SHA-256 of the
// token under a domain string). A replica that asks the gateway with a
// revoked token gets a 401 and publishes the same message: its first
// arrival, from either, is when the replica dropped the token.
func purgeMessage(token string) []byte {
	d := sha256.Sum256([]byte("orgauthz/invalidation/v1\x00" + token))
	return append([]byte{1, 't'}, d[:]...)
}

func (p *purgeWatch) message(replica int, msg []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.purges[string(msg)]
	if pt == nil || !pt.applied[replica].IsZero() {
		return // a 401's purge of the same token, again
	}
	pt.applied[replica] = time.Now()
	pt.n++
}

// purgeFigures are the purges' timings, sorted.
type purgeFigures struct {
	lat       []time.Duration // from Purge's call to a replica having applied it
	calls     []time.Duration // Purge's own duration
	lateMax   time.Duration   // the longest from Purge's return to a replica applying it
	lateCount int             // arrivals after Purge returned
	missed    int             // purges some replica never applied
}

// figures sums up the purges begun before until (missed: their message
// was lost while the channel was down; the replica purged its whole cache
// when the channel came back).
func (p *purgeWatch) figures(until time.Time) purgeFigures {
	p.mu.Lock()
	defer p.mu.Unlock()
	var f purgeFigures
	for _, pt := range p.purges {
		if pt.returned.IsZero() || !pt.start.Before(until) {
			continue
		}
		f.calls = append(f.calls, pt.returned.Sub(pt.start))
		if pt.n < replicasCount {
			f.missed++
		}
		for _, at := range pt.applied {
			if at.IsZero() {
				continue
			}
			f.lat = append(f.lat, at.Sub(pt.start))
			if late := at.Sub(pt.returned); late > 0 {
				f.lateCount++
				f.lateMax = max(f.lateMax, late)
			}
		}
	}
	slices.Sort(f.lat)
	slices.Sort(f.calls)
	return f
}

// percentile returns the p-th percentile of sorted ds (0 for none).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

// watchedInvalidator is redisstore's Invalidator with each message
// reported to the purge watch once the client has applied it.
type watchedInvalidator struct {
	invalidation.Invalidator
	replica int
	watch   *purgeWatch
}

func (i *watchedInvalidator) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	return i.Invalidator.Subscribe(ctx, &watchedReceiver{Receiver: r, replica: i.replica, watch: i.watch})
}

type watchedReceiver struct {
	invalidation.Receiver
	replica int
	watch   *purgeWatch
}

func (r *watchedReceiver) Message(msg []byte) {
	r.Receiver.Message(msg)
	r.watch.message(r.replica, msg)
}

// replicaUser is a viewer of acme with its DPoP key and current token.
type replicaUser struct {
	name   string
	signer *dpop.Signer
	token  atomic.Pointer[string]
}

// revocation is a revoked token: deadline is zero until Purge returned,
// then Purge's return plus the propagation bound.
type revocation struct {
	signer   *dpop.Signer
	deadline time.Time
}

// replicasTally counts what the replicas soak saw; the mutex guards the
// maps and slices.
type replicasTally struct {
	requests, granted, cached, denied        atomic.Int64
	nonceRetries, decisionErrors             atomic.Int64
	replays, replaysAccepted, replaysOther   atomic.Int64
	probes, probesAfterBound                 atomic.Int64
	grantsBeforePurge, grantsInBound         atomic.Int64
	lateGrants, falseDenies, proofsRefused   atomic.Int64
	serverErrors, transportErrors, purgeErrs atomic.Int64
	revocations                              atomic.Int64

	mu      sync.Mutex
	revoked map[string]*revocation
	recent  []string // the last replicasRecent revoked tokens
	odd     []string // the first violations, described (never a token)
}

func (t *replicasTally) note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.odd) < 10 {
		t.odd = append(t.odd, fmt.Sprintf(format, args...))
	}
}

// pickRevoked picks one of the last revoked tokens, half the time one
// whose bound has passed (where a stale GRANT would be a fault), if any.
func (t *replicasTally) pickRevoked(rng *mrand.Rand) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recent) == 0 {
		return "", false
	}
	if rng.IntN(2) == 0 {
		now := time.Now()
		var passed []string
		for _, tok := range t.recent {
			if d := t.revoked[tok].deadline; !d.IsZero() && now.After(d) {
				passed = append(passed, tok)
			}
		}
		if len(passed) > 0 {
			return passed[rng.IntN(len(passed))], true
		}
	}
	return t.recent[rng.IntN(len(t.recent))], true
}

func (t *replicasTally) signerOf(tok string) *dpop.Signer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.revoked[tok].signer
}

// replicaAnswer is what the front or a replica answered.
type replicaAnswer struct {
	status        int
	cached        bool
	decisionError bool
	replica       int // the replica the front chose (-1 when sent to a replica directly)
	refused       string
	nonce         string
}

// replicasEnv is the soak's fixture: the front, the replicas, the users.
type replicasEnv struct {
	public   string   // the front
	backends []string // each replica's own URL
	hc       *http.Client
	nonce    atomic.Pointer[string] // the last DPoP-Nonce a replica sent
	tally    *replicasTally
}

func (e *replicasEnv) send(ctx context.Context, base, tok, proof string) (replicaAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/orders", nil)
	if err != nil {
		return replicaAnswer{}, err
	}
	req.Header.Set("Authorization", "DPoP "+tok)
	req.Header.Set("DPoP", proof)
	resp, err := e.hc.Do(req)
	if err != nil {
		return replicaAnswer{}, err
	}
	defer resp.Body.Close()
	a := replicaAnswer{
		status: resp.StatusCode, cached: resp.Header.Get("X-Cached") == "true",
		decisionError: resp.Header.Get("X-Decision-Error") == "true", replica: -1,
		refused: resp.Header.Get("X-Refused"), nonce: resp.Header.Get("DPoP-Nonce"),
	}
	if r := resp.Header.Get("X-Replica"); r != "" {
		a.replica, _ = strconv.Atoi(r)
	}
	if a.status >= 500 {
		e.tally.serverErrors.Add(1)
		e.tally.note("%d from replica %d", a.status, a.replica)
	}
	return a, nil
}

// fresh sends a request with a new proof through the front, retrying with
// the nonce a replica asks for (at most twice: a nonce is good for
// seconds). It returns the answer and the proof.
func (e *replicasEnv) fresh(ctx context.Context, signer *dpop.Signer, tok string) (replicaAnswer, string, error) {
	for try := 0; ; try++ {
		var nonce string
		if p := e.nonce.Load(); p != nil {
			nonce = *p
		}
		proof, err := signer.Proof(http.MethodGet, e.public+"/orders", tok, nonce)
		if err != nil {
			return replicaAnswer{}, "", err
		}
		e.tally.requests.Add(1)
		a, err := e.send(ctx, e.public, tok, proof)
		if err != nil {
			return a, "", err
		}
		if a.status == http.StatusUnauthorized && a.refused == dpop.CodeUseNonce && a.nonce != "" && try < 2 {
			e.nonce.Store(&a.nonce)
			e.tally.nonceRetries.Add(1)
			continue
		}
		return a, proof, nil
	}
}

// judge checks one answer to a fresh proof for tok, sent at began.
func (e *replicasEnv) judge(tok string, began time.Time, a replicaAnswer) {
	t := e.tally
	t.mu.Lock()
	rev := t.revoked[tok]
	var deadline time.Time
	if rev != nil {
		deadline = rev.deadline
	}
	t.mu.Unlock()
	afterBound := rev != nil && !deadline.IsZero() && began.After(deadline)
	if afterBound {
		t.probesAfterBound.Add(1)
	}
	switch a.status {
	case http.StatusOK:
		t.granted.Add(1)
		if a.cached {
			t.cached.Add(1)
		}
		switch {
		case afterBound:
			t.lateGrants.Add(1)
			t.note("replica %d granted a revoked token %v after Purge returned + the bound (cached %v)", a.replica, began.Sub(deadline), a.cached)
		case rev != nil && deadline.IsZero():
			t.grantsBeforePurge.Add(1)
		case rev != nil:
			t.grantsInBound.Add(1)
		}
	case http.StatusForbidden:
		t.denied.Add(1)
		if a.decisionError {
			t.decisionErrors.Add(1)
		}
		if rev == nil {
			t.falseDenies.Add(1)
			t.note("replica %d denied a live token (decision error %v)", a.replica, a.decisionError)
		}
	case http.StatusUnauthorized:
		t.proofsRefused.Add(1)
		t.note("replica %d refused a fresh proof: %q", a.replica, a.refused)
	default:
		if a.status < 500 {
			t.note("replica %d answered %d", a.replica, a.status)
			t.proofsRefused.Add(1)
		}
	}
}

// replay sends an accepted proof again, to each replica other than the one
// that accepted it, directly.
func (e *replicasEnv) replay(ctx context.Context, tok, proof string, accepted int) error {
	for i, b := range e.backends {
		if i == accepted {
			continue
		}
		a, err := e.send(ctx, b, tok, proof)
		if err != nil {
			return err
		}
		e.tally.replays.Add(1)
		switch {
		case a.status != http.StatusUnauthorized:
			e.tally.replaysAccepted.Add(1)
			e.tally.note("replica %d answered %d to a proof replica %d had accepted", i, a.status, accepted)
		case a.refused != "replay":
			e.tally.replaysOther.Add(1) // refused for another reason (a nonce gone stale)
		}
	}
	return nil
}

// caller sends requests through the front with random users' tokens, one
// in ten with a recently revoked token, and replays one accepted proof in
// four to the other replicas.
func (e *replicasEnv) caller(ctx context.Context, rng *mrand.Rand, users []*replicaUser) error {
	for ctx.Err() == nil {
		u := users[rng.IntN(len(users))]
		tok, signer := *u.token.Load(), u.signer
		if rng.IntN(10) == 0 {
			if rt, ok := e.tally.pickRevoked(rng); ok {
				tok, signer = rt, e.tally.signerOf(rt)
				e.tally.probes.Add(1)
			}
		}
		began := time.Now()
		a, proof, err := e.fresh(ctx, signer, tok)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			e.tally.transportErrors.Add(1)
			return fmt.Errorf("a request through the front: %w", err)
		}
		e.judge(tok, began, a)
		if a.status != http.StatusUnauthorized && a.replica >= 0 && rng.IntN(4) == 0 {
			if err := e.replay(ctx, tok, proof, a.replica); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				e.tally.transportErrors.Add(1)
				return fmt.Errorf("a replay: %w", err)
			}
		}
	}
	return nil
}

// replicasRevoke revokes tok at the reference server's RFC 7009 endpoint.
func replicasRevoke(ctx context.Context, hc *http.Client, gwURL, tok string) error {
	form := url.Values{"client_id": {soakClient}, "client_secret": {"orders-secret"}, "token": {tok}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gwURL+"/realms/"+soakRealm+"/protocol/openid-connect/revoke", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation: status %d", resp.StatusCode)
	}
	return nil
}

// replicasSummary is what the load phase reports.
type replicasSummary struct {
	elapsed    time.Duration
	tally      *replicasTally
	purges     purgeFigures
	restarts   []time.Duration // from each Restart's call to every replica trusting its cache again
	recoveries []uint64
	gaps       []uint64
	heapLoaded uint64
}

// TestReplicasSoak is the long form of redisstore's TestReplicasBehindAFront
// (issue 24): three replicas of a service behind a round-robin front on
// loopback, each with its own pep.Client (purges through one Redis) and
// dpop.Verifier (replays checked in another Redis, HMAC nonces under one
// secret), take steady traffic from many users for -soak.duration (at least 5 s). A
// random user's token is revoked at the reference server (RFC 7009) and
// purged on a random replica every 100 ms; callers keep trying the last
// revoked tokens; one accepted proof in four is replayed to the two other
// replicas; the purges' Redis restarts every -soak.redis-restart. Checked:
// no replay accepted; no GRANT of a revoked token to a request sent later
// than Purge's return plus the propagation bound; no live token denied,
// no fresh proof refused but for a nonce, no 5xx; every replica recovers
// its cache after each restart, none rebuilt; goroutines and heap back to
// their baseline. The replay Redis never restarts: a restarted one forgets
// the proofs it saw, and the store (see redisstore.ReplayStore) then
// refuses every proof for the iat window.
func TestReplicasSoak(t *testing.T) {
	goroutinesBefore := runtime.NumGoroutine()
	heapBefore := testkit.LiveHeap()
	var s replicasSummary
	t.Run("load", func(t *testing.T) { s = replicasLoad(t, max(*soakDuration, replicasMinDuration), *replicasRedisEvery) })
	if s.tally == nil {
		return
	}
	goroutinesAfter, heapAfter := backToBaseline(t, goroutinesBefore, heapBefore)

	tl := s.tally
	pf := s.purges
	round := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	var restartMax, restartSum time.Duration
	for _, d := range s.restarts {
		restartMax = max(restartMax, d)
		restartSum += d
	}
	restartMean := time.Duration(0)
	if len(s.restarts) > 0 {
		restartMean = restartSum / time.Duration(len(s.restarts))
	}
	secs := s.elapsed.Seconds()
	t.Logf("replicas soak: %v, %d replicas, %d users, %d callers: "+
		"%d requests through the front (%.0f/s; %d nonce retries), %d GRANTs (%d cached), %d DENYs (%d on a decision error: the gateway's 401 to a revoked token), "+
		"%d replays sent to other replicas, %d accepted (%d refused for another reason than replay); "+
		"%d revocations (%d Purge errors), %d requests with a revoked token (%d sent after Purge returned + %v), GRANTs of one: %d before Purge returned, %d within the bound, %d after it; "+
		"purge propagation (Purge's call to applied, %d arrivals) p50 %v, p99 %v, max %v; Purge's call p50 %v, p99 %v, max %v; "+
		"%d arrivals after Purge returned, the latest %v after it; %d purges missed by a replica; "+
		"%d restarts of the purges' Redis, cache bypassed after each for mean %v, max %v; recoveries per replica %v, channel gaps per replica %v; "+
		"%d false DENYs, %d fresh proofs refused, %d 5xx, %d transport errors; goroutines %d -> %d; heap %.1f MiB -> %.1f MiB at the end of the load -> %.1f MiB after",
		s.elapsed.Round(time.Millisecond), replicasCount, replicasUsers, replicasCallers,
		tl.requests.Load(), float64(tl.requests.Load())/secs, tl.nonceRetries.Load(), tl.granted.Load(), tl.cached.Load(), tl.denied.Load(), tl.decisionErrors.Load(),
		tl.replays.Load(), tl.replaysAccepted.Load(), tl.replaysOther.Load(),
		tl.revocations.Load(), tl.purgeErrs.Load(), tl.probes.Load(), tl.probesAfterBound.Load(), replicasBound,
		tl.grantsBeforePurge.Load(), tl.grantsInBound.Load(), tl.lateGrants.Load(),
		len(pf.lat), round(percentile(pf.lat, 50)), round(percentile(pf.lat, 99)), round(percentile(pf.lat, 100)),
		round(percentile(pf.calls, 50)), round(percentile(pf.calls, 99)), round(percentile(pf.calls, 100)),
		pf.lateCount, round(pf.lateMax), pf.missed,
		len(s.restarts), restartMean.Round(time.Millisecond), restartMax.Round(time.Millisecond), s.recoveries, s.gaps,
		tl.falseDenies.Load(), tl.proofsRefused.Load(), tl.serverErrors.Load(), tl.transportErrors.Load(),
		goroutinesBefore, goroutinesAfter, mib(heapBefore), mib(s.heapLoaded), mib(heapAfter))
}

func replicasLoad(t *testing.T, duration, redisEvery time.Duration) replicasSummary {
	// By default the purges' Redis restarts once, a quarter of the way
	// through: the restart purges every replica's whole cache, and the
	// tokens revoked after it need the bound (2 s) to pass before the
	// end for a stale GRANT to show.
	first := redisEvery
	if redisEvery <= 0 {
		first, redisEvery = duration/4, duration
	}
	invRedis, replayRedis := redistest.Start(t), redistest.Start(t)
	// A keyspace that never held a proof: the store may vouch for proofs
	// from the start (see redisstore.ReplayStore). This Redis never
	// restarts.
	const replayPrefix = "soak:replay:"
	require.NoError(t, replayRedis.Client().Set(t.Context(), replayPrefix+redisstore.SinceKey, 0, 0).Err())

	gw, ln := gatewaytest.Listen(t)
	srv, err := mockserver.New(mockserver.WithFixture(soakFixture(2*replicasUsers)), mockserver.WithIssuer(gw.URL), es256Tokens)
	require.NoError(t, err)
	gw.Serve(ln, srv)
	gwTransport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(gwTransport.CloseIdleConnections)
	gwClient := &http.Client{Transport: gwTransport}
	mint := func(user string) (string, error) {
		return srv.IssueToken(soakRealm, user, mockserver.TokenClient(soakClient), mockserver.TokenLifetime(duration+time.Hour))
	}

	var jkts sync.Map // token -> thumbprint, as the service's token check would find it
	jktOf := func(tok string) string {
		v, _ := jkts.Load(tok)
		s, _ := v.(string)
		return s
	}
	secret := make([]byte, dpop.MinNonceSecretSize)
	testkit.Must(rand.Read(secret))(t)

	frontSrv := httptest.NewUnstartedServer(nil)
	public := "http://" + frontSrv.Listener.Addr().String()
	proxyTransport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(proxyTransport.CloseIdleConnections)
	watch := &purgeWatch{purges: map[string]*purgeTrack{}}
	var (
		proxies  []*httputil.ReverseProxy
		backends []string
		peps     []*pep.Client
	)
	for i := range replicasCount {
		nonces := testkit.Must(dpop.NewHMACNonces(secret, 10*time.Second))(t)
		verifier := testkit.Must(dpop.NewVerifier(dpop.WithNonces(nonces),
			dpop.WithReplayStore(redisstore.NewReplayStore(replayRedis.Client(), replayPrefix))))(t)
		inv := &watchedInvalidator{Invalidator: redisstore.NewInvalidator(invRedis.Client(), "soak:replicas"), replica: i, watch: watch}
		c := testkit.Must(newSoakClient(gw.URL, gwClient, pep.WithInvalidator(inv)))(t)
		t.Cleanup(func() { _ = c.Close() })
		backend := testkit.Serve(t, &replicaService{pep: c, verifier: verifier, public: public, jkt: jktOf})
		u := testkit.Must(url.Parse(backend.URL))(t)
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = proxyTransport
		p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			// The caller counts the 502 as a 5xx unless it gave up
			// (the load's end cancels requests in flight).
			w.WriteHeader(http.StatusBadGateway)
		}
		proxies = append(proxies, p)
		backends = append(backends, backend.URL)
		peps = append(peps, c)
	}
	var next atomic.Uint64
	frontSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(next.Add(1)-1) % len(proxies)
		w.Header().Set("X-Replica", strconv.Itoa(i))
		proxies[i].ServeHTTP(w, r)
	})
	frontSrv.Start()
	t.Cleanup(frontSrv.Close)
	callerTransport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(callerTransport.CloseIdleConnections)

	tally := &replicasTally{revoked: map[string]*revocation{}}
	env := &replicasEnv{public: public, backends: backends, hc: &http.Client{Transport: callerTransport}, tally: tally}
	users := make([]*replicaUser, replicasUsers)
	for i := range users {
		u := &replicaUser{name: fmt.Sprint("u", 2*i)} // the even users are viewers
		u.signer, err = dpop.GenerateKey()
		require.NoError(t, err)
		tok := testkit.Must(mint(u.name))(t)
		jkts.Store(tok, u.signer.Thumbprint())
		u.token.Store(&tok)
		users[i] = u
	}
	trusted := func() bool {
		for _, c := range peps {
			if c.Stats().CacheBypassed {
				return false
			}
		}
		return true
	}
	require.Eventually(t, trusted, 15*time.Second, 5*time.Millisecond, "every replica trusts its cache")

	ctx, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for n := range replicasCallers {
		rng := mrand.New(mrand.NewPCG(uint64(n), 0x2e9))
		g.Go(func() error { return env.caller(gctx, rng, users) })
	}
	// The revoker: revoke a user's token at the server, purge it on a
	// random replica, give the user a new token, pause. The callers keep
	// trying the revoked token.
	g.Go(func() error {
		rng := mrand.New(mrand.NewPCG(7, 0x2e9))
		pause := time.NewTimer(replicasPause)
		defer pause.Stop()
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-pause.C:
			}
			u := users[rng.IntN(len(users))]
			old := *u.token.Load()
			tally.mu.Lock()
			rev := &revocation{signer: u.signer}
			tally.revoked[old] = rev
			tally.mu.Unlock()
			if err := replicasRevoke(gctx, gwClient, gw.URL, old); err != nil {
				if gctx.Err() != nil {
					return nil
				}
				return err
			}
			watch.begin(old)
			perr := peps[rng.IntN(len(peps))].Purge(gctx, old)
			returned := time.Now()
			watch.returned(old, returned)
			tally.revocations.Add(1)
			if perr != nil {
				tally.purgeErrs.Add(1)
			}
			tally.mu.Lock()
			rev.deadline = returned.Add(replicasBound)
			tally.recent = append(tally.recent, old)
			if len(tally.recent) > replicasRecent {
				tally.recent = tally.recent[1:]
			}
			tally.mu.Unlock()
			tok, err := mint(u.name)
			if err != nil {
				return err
			}
			jkts.Store(tok, u.signer.Thumbprint())
			u.token.Store(&tok)
			pause.Reset(replicasPause)
		}
	})

	// The purges' Redis restarts, on the test's goroutine (redistest
	// fails the test from it); each time, the time until every replica
	// trusts its cache again is measured.
	var restarts []time.Duration
	restart := time.NewTimer(first)
	func() {
		defer restart.Stop()
		for {
			select {
			case <-gctx.Done():
				return
			case <-restart.C:
			}
			if time.Until(start.Add(duration)) < 3*time.Second && len(restarts) > 0 {
				return // too late to see the replicas recover
			}
			began := time.Now()
			invRedis.Restart()
			if !assert.Eventually(t, trusted, 15*time.Second, 5*time.Millisecond, "every replica trusts its cache again after restart %d", len(restarts)+1) {
				cancel()
				return
			}
			restarts = append(restarts, time.Since(began))
			restart.Reset(redisEvery)
		}
	}()
	require.NoError(t, g.Wait())
	elapsed := time.Since(start)

	s := replicasSummary{elapsed: elapsed, tally: tally, restarts: restarts, heapLoaded: testkit.LiveHeap()}
	s.purges = watch.figures(time.Now().Add(-replicasBound))
	for _, c := range peps {
		st := c.Stats()
		s.recoveries = append(s.recoveries, st.InvalidationRecoveries)
		s.gaps = append(s.gaps, st.InvalidationGaps)
	}

	tally.mu.Lock()
	odd := slices.Clone(tally.odd)
	tally.mu.Unlock()
	assert.Empty(t, odd, "violations")
	assert.Positive(t, tally.replays.Load(), "replays sent")
	assert.Zero(t, tally.replaysAccepted.Load(), "replays accepted")
	assert.Positive(t, tally.revocations.Load(), "revocations")
	assert.Positive(t, tally.probesAfterBound.Load(), "requests with a revoked token after the bound")
	assert.Zero(t, tally.lateGrants.Load(), "GRANTs of a revoked token after Purge returned + the bound")
	assert.Zero(t, tally.falseDenies.Load(), "live tokens denied")
	assert.Zero(t, tally.proofsRefused.Load(), "fresh proofs refused but for a nonce")
	assert.Zero(t, tally.serverErrors.Load(), "5xx")
	assert.NotEmpty(t, restarts, "restarts of the purges' Redis")
	for i, r := range s.recoveries {
		// The first subscription counts as one.
		assert.GreaterOrEqual(t, r, uint64(len(restarts)+1), "replica %d recovered its cache after each restart", i)
	}
	assert.Positive(t, tally.cached.Load(), "GRANTs served from a cache")
	return s
}
