package mockserver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// sharedStore is a mockserver.SharedStore in memory that replicas of a
// test share, as they would share Redis; fail makes it fail, and began is
// when its keyspace began (as after Redis lost its keys): it vouches for
// no record made before.
type sharedStore struct {
	mu         sync.Mutex
	keys       map[string]time.Time
	fail       error
	failWrites error // Remember and RecordOnce fail, Recorded answers (Redis full, noeviction)
	failProofs error // Remember (DPoP proofs) fails, the rest answers
	// failAfterWrite makes RecordOnce write its record and then fail (too
	// few replicas acknowledged it, or its answer came late).
	failAfterWrite error
	writers        map[string]string // RecordOnce's records' values
	recordGate     *gate             // RecordOnce waits for its count of calls (see RecordOnce)
	began          time.Time
	clock          func() time.Time // the store's own clock, which expires keys; time.Now when nil
	// frozen, while set, holds every call of the kind it names (reads:
	// Recorded; writes: Remember and RecordOnce) until thaw is closed,
	// whatever its context: a frozen Redis behind a client without
	// timeouts.
	frozen atomic.Value // string: "", "reads" or "writes"
	thaw   chan struct{}
}

// freeze makes the calls of kind ("reads" or "writes") hang until the
// test ends.
func (s *sharedStore) freeze(t *testing.T, kind string) {
	s.mu.Lock()
	if s.thaw == nil {
		s.thaw = make(chan struct{})
		t.Cleanup(func() { close(s.thaw) })
	}
	s.mu.Unlock()
	s.frozen.Store(kind)
}

// hang holds a call of kind while the store is frozen for it.
func (s *sharedStore) hang(kind string) {
	if k, _ := s.frozen.Load().(string); k == kind {
		<-s.thaw
	}
}

// begin holds a call of kind ("reads" or "writes") while the store is
// frozen for it, then locks the store, which the caller unlocks; the error
// is the failure set for kind.
func (s *sharedStore) begin(kind string) error {
	s.hang(kind)
	s.mu.Lock()
	if s.fail == nil && kind == "writes" {
		return s.failWrites
	}
	return s.fail
}

func (s *sharedStore) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

func (s *sharedStore) Recorded(_ context.Context, key string, since time.Time) (bool, error) {
	defer s.mu.Unlock()
	if err := s.begin("reads"); err != nil {
		return false, err
	}
	if since.Before(s.began) {
		return false, fmt.Errorf("the store restarted: %w", dpop.ErrKeyspaceNew)
	}
	u, ok := s.keys[key]
	return ok && s.now().Before(u), nil
}

// restart makes the store forget its keys, its keyspace beginning now.
func (s *sharedStore) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.began = map[string]time.Time{}, time.Now()
}

func (s *sharedStore) Remember(_ context.Context, key string, until time.Time) (bool, error) {
	defer s.mu.Unlock()
	if err := s.begin("writes"); err != nil {
		return false, err
	}
	if s.failProofs != nil {
		return false, s.failProofs
	}
	if u, ok := s.keys[key]; ok && s.now().Before(u) {
		return false, nil
	}
	s.keys[key] = until
	return true, nil
}

// RecordOnce is Remember after Recorded's check of since, made first: a
// keyspace that cannot vouch for since fails with nothing written. The
// record holds writer, and a record of the same writer is the caller's.
//
// While recordGate is set, each call waits, after its record, until the
// gate's count of calls made theirs (or its context ends): calls that
// overlap at the store, as two replicas' do when a proxy sends one request
// twice at once. The gate then opens and is gone.
func (s *sharedStore) RecordOnce(ctx context.Context, key, writer string, until, since time.Time) (bool, error) {
	mine, err := s.recordOnce(ctx, key, writer, until, since)
	s.mu.Lock()
	g := s.recordGate
	if g != nil {
		if g.n--; g.n == 0 {
			s.recordGate = nil
			close(g.open)
		}
	}
	s.mu.Unlock()
	if g != nil {
		select {
		case <-g.open:
		case <-ctx.Done():
		}
	}
	return mine, err
}

// gate holds n calls until all of them arrived (sharedStore.recordGate).
type gate struct {
	n    int
	open chan struct{}
}

func (s *sharedStore) recordOnce(_ context.Context, key, writer string, until, since time.Time) (bool, error) {
	defer s.mu.Unlock()
	if err := s.begin("writes"); err != nil {
		return false, err
	}
	if since.Before(s.began) {
		return false, fmt.Errorf("the store restarted: %w", dpop.ErrKeyspaceNew)
	}
	if u, ok := s.keys[key]; ok && s.now().Before(u) {
		return s.writers[key] == writer && s.failAfterWrite == nil, s.failAfterWrite
	}
	s.keys[key] = until
	if s.writers == nil {
		s.writers = map[string]string{}
	}
	s.writers[key] = writer
	return s.failAfterWrite == nil, s.failAfterWrite
}

// Finish makes writer's record no one's, its value becoming one no
// writer has, and reports whether this call did.
func (s *sharedStore) Finish(_ context.Context, key, writer string) (bool, error) {
	defer s.mu.Unlock()
	if err := s.begin("writes"); err != nil {
		return false, err
	}
	if w, ok := s.writers[key]; !ok || w != writer {
		return false, nil
	}
	s.writers[key] = "\x00finished"
	return true, nil
}

// set sets one of the store's failures (fail, failWrites, failProofs,
// failAfterWrite): nil ends it.
func (s *sharedStore) set(failure *error, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*failure = err
}

// front is a load balancer in front of replicas: the X-Replica header
// says which one serves a request. Every replica sees the front's URL.
type front struct {
	t        *testing.T
	URL      string
	replicas map[string]*mockserver.Server
	store    *sharedStore  // the replicas' store, for tests that change it through the front
	timeout  time.Duration // a hang guard on each request; none when 0
}

// client is the HTTP client of the front's requests.
func (f *front) client() *http.Client {
	return &http.Client{Timeout: f.timeout}
}

func startFront(t *testing.T, names []string, opts ...mockserver.Option) *front {
	t.Helper()
	f := &front{t: t, replicas: map[string]*mockserver.Server{}}
	for _, n := range names {
		s := testkit.Must(mockserver.New(opts...))(t)
		f.replicas[n] = s
	}
	hs := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.replicas[r.Header.Get("X-Replica")].ServeHTTP(w, r)
	}))
	f.URL = hs.URL
	return f
}

// do sends a request to replica through the front.
func (f *front) do(replica, method, path, contentType, body string, header http.Header) servertest.Result {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.URL+path, strings.NewReader(body))
	require.NoError(f.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("X-Replica", replica)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := f.client().Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(f.t, err)
	return servertest.Result{Status: res.StatusCode, Header: res.Header, Body: b}
}

// boundToken is a DPoP-bound token replica issued, and its key.
func (f *front) boundToken(t *testing.T, replica string) (*dpop.Signer, string) {
	t.Helper()
	signer := newKey(t)
	res := f.dpopToken(replica, signer, "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	return signer, res.JSON(t)["access_token"].(string)
}

// dpopToken gets alice a token bound to signer from replica.
func (f *front) dpopToken(replica string, signer *dpop.Signer, nonce string) servertest.Result {
	f.t.Helper()
	p, err := signer.Proof(http.MethodPost, f.URL+tokenPath, "", nonce)
	require.NoError(f.t, err)
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}
	return f.do(replica, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", form.Encode(), http.Header{"Dpop": {p}})
}

// decide asks replica for a decision with token and proof.
func (f *front) decide(replica, token, proof string) servertest.Result {
	f.t.Helper()
	return f.do(replica, http.MethodPost, authorizePath, "application/json",
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`,
		http.Header{"Authorization": {"DPoP " + token}, "Dpop": {proof}})
}

var keySeed = bytes.Repeat([]byte("k"), 32)

// TestReplicasActAsOne: reference servers given one fixture, one key
// seed, one replay store and one nonce secret, behind one front, act as
// one: a token from one is served by the other (same keys, and the same
// ids for the fixture's users), a proof accepted by one is a replay at
// the other, a nonce from one is accepted by the other. Without the key
// seed the other replica refused the token (random keys, random ids).
func TestReplicasActAsOne(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			testReplicasActAsOne(t, alg)
		})
	}
}

func testReplicasActAsOne(t *testing.T, alg string) {
	nonces := testkit.Must(dpop.NewHMACNonces(bytes.Repeat([]byte("n"), 32), time.Minute))(t)
	store := &sharedStore{keys: map[string]time.Time{}}
	f := startFront(t, []string{"a", "b"}, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed),
		mockserver.WithReplayStore(store), mockserver.WithNonces(nonces), mockserver.WithAccessTokenAlgorithm(alg))
	signer, token := f.boundToken(t, "a")

	proof := proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	res := f.decide("b", token, proof)
	require.Equal(t, http.StatusOK, res.Status, "a token of replica a at replica b: %s", res.Body)
	require.Equal(t, "GRANT", res.JSON(t)["status"])
	for _, r := range []string{"a", "b"} {
		res = f.decide(r, token, proof)
		require.Equal(t, http.StatusUnauthorized, res.Status, "replay at replica %s: %s", r, res.Body)
		require.Contains(t, res.Header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`)
	}

	// Nonces: required on both; one minted by a is accepted by b.
	admin := f.do("a", http.MethodPost, "/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"admin-secret"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, admin.Status, string(admin.Body))
	adminToken := admin.JSON(t)["access_token"].(string)
	for _, r := range []string{"a", "b"} {
		res = f.do(r, http.MethodPatch, "/admin/config", "application/json", `{"dpopNonceRequired":true}`,
			http.Header{"Authorization": {"Bearer " + adminToken}})
		require.Equal(t, http.StatusOK, res.Status, "replica %s: %s", r, res.Body)
	}
	res = f.dpopToken("a", signer, "")
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	require.Equal(t, "use_dpop_nonce", res.JSON(t)["error"])
	nonce := res.Header.Get("DPoP-Nonce")
	require.NotEmpty(t, nonce)
	res = f.dpopToken("b", signer, nonce)
	require.Equal(t, http.StatusOK, res.Status, "a nonce of replica a at replica b: %s", res.Body)
}

// TestReplayStoreDownIsUnavailable: while the shared replay store fails,
// a request with a proof is answered 503 with Retry-After (the server's
// condition, not the client's mistake), at the token endpoint and at a
// protected route; once it is back, a fresh proof passes.
func TestReplayStoreDownIsUnavailable(t *testing.T) {
	t.Parallel()
	store := &sharedStore{keys: map[string]time.Time{}}
	f := startFront(t, []string{"a"}, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithReplayStore(store))
	signer, token := f.boundToken(t, "a")

	store.set(&store.fail, errors.New("connection refused"))
	res := f.dpopToken("a", signer, "")
	require.Equal(t, http.StatusServiceUnavailable, res.Status, string(res.Body))
	require.Equal(t, "temporarily_unavailable", res.JSON(t)["error"])
	require.NotEmpty(t, res.Header.Get("Retry-After"))

	proof := proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	res = f.decide("a", token, proof)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, string(res.Body))
	require.Equal(t, "Service Unavailable", res.JSON(t)["error"])
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.NotContains(t, string(res.Body), token)

	store.set(&store.fail, nil)
	proof = proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	res = f.decide("a", token, proof)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
}

func TestReplicaOptionsRefuseMisuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  mockserver.Option
		want string
	}{
		{"nil replay store", mockserver.WithReplayStore(nil), "WithReplayStore: nil store"},
		{"nil nonces", mockserver.WithNonces(nil), "WithNonces: nil Nonces"},
		{"short key seed", mockserver.WithKeySeed([]byte("short")), "WithKeySeed: the seed is 5 bytes: use at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mockserver.New(tc.opt)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
