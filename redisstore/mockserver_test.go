package redisstore

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The reference server binary talks to Redis with a RESP2 client of its
// own (mockserver/internal/redisreplay), since the root module must not
// require go-redis. These tests run the binary against a real
// redis-server: two replicas behind one front act as one.

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// StartBuildingBinary starts building the reference server on a goroutine
// of its own, so that the build (a second or more of linking) runs while
// the first tests do; TestMain (main_test.go) calls it before the tests.
func StartBuildingBinary() {
	building.Add(1)
	go func() {
		defer building.Done()
		buildOnce.Do(buildBinary)
	}()
}

// building counts the builds StartBuildingBinary started.
var building sync.WaitGroup

// RemoveBuiltBinaries waits for a build StartBuildingBinary started and
// removes what was built; TestMain (main_test.go) calls it once the tests
// have run.
func RemoveBuiltBinaries() {
	building.Wait()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// buildBinary builds the reference server into a new directory.
func buildBinary() {
	dir, err := os.MkdirTemp("", "mockserver-bin-")
	if err != nil {
		buildErr = err
		return
	}
	binDir, binPath = dir, filepath.Join(dir, "mockserver")
	// Built in the root module, whose go.sum covers the binary, with or
	// without the workspace.
	build := exec.Command("go", "build", "-o", binPath, "./mockserver/cmd/mockserver")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	if err != nil {
		buildErr = err
		binPath = string(out)
	}
}

// mockserverBinary builds the reference server once per test run (or
// waits for the build StartBuildingBinary started).
func mockserverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(buildBinary)
	require.NoError(t, buildErr, binPath)
	return binPath
}

// startMockserver runs the binary with args on a free loopback port and
// returns its base URL; it is stopped (SIGTERM) when the test ends. It signs
// access tokens ES256 (-access-token-alg), for the reason startGateway
// gives; with -key-seed, replicas derive the same P-256 key as they would
// the RSA one.
func startMockserver(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(mockserverBinary(t), append([]string{"-addr", "127.0.0.1:0", "-access-token-alg", "ES256"}, args...)...)
	stdout := testkit.Must(cmd.StdoutPipe())(t)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "the binary prints its base URL")
	base := strings.TrimPrefix(sc.Text(), "mockserver listening on ")
	go func() {
		for sc.Scan() { // drain
		}
	}()
	return base
}

const frontHost = "front.test"

// frontCall sends a request to the replica at base as if through the
// front: the Host is the front's, which every replica takes as its public
// URL (proofs name it).
func frontCall(t *testing.T, base, method, path string, header http.Header, ctype, body string) (int, http.Header, []byte) {
	t.Helper()
	req := testkit.Must(http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body)))(t)
	req.Host = frontHost
	for k, v := range header {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp := testkit.Must(http.DefaultClient.Do(req))(t)
	defer resp.Body.Close()
	b := testkit.Must(io.ReadAll(resp.Body))(t)
	return resp.StatusCode, resp.Header, b
}

// TestMockserverReplicasShareRedis: two reference servers with one
// fixture, one -key-seed and one -redis act as one. A proof accepted by
// one is a replay at the other; a token revoked through one is refused by
// the other from the moment the revocation answered; Redis down answers
// 503 (a replica that cannot ask it never grants); Redis restarted empty
// refuses for good the token it cannot vouch for (401), and once an
// operator vouches for the keyspace, serves again without a replica
// restarting. Nothing stored holds a token.
func TestMockserverReplicasShareRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	const prefix = "orgauthz:mockserver:dpop:"
	settled(t, c, prefix)
	args := []string{"-fixture", "../examples/fixtures/acme.json", "-key-seed", "redisstore-test-seed-0123", "-redis", srv.URL()}
	a, b := startMockserver(t, args...), startMockserver(t, args...)
	front := "http://" + frontHost
	signer := testkit.Must(dpop.GenerateKey())(t)

	p := testkit.Must(signer.Proof(http.MethodPost, front+tokenPath, "", ""))(t)
	tok := tokenAt(t, a, "acme", http.Header{"Dpop": {p}}, aliceForm)
	proof := func() string {
		return testkit.Must(signer.Proof(http.MethodPost, front+decidePath, tok, ""))(t)
	}
	call := func(base, p string) (int, string) {
		return decideWith(t, base, http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {p}})
	}
	p1 := proof()
	status, body := call(b, p1)
	require.Equal(t, http.StatusOK, status, "a token of replica a at replica b: %s", body)
	for name, base := range map[string]string{"a": a, "b": b} {
		status, body = call(base, p1)
		require.Equal(t, http.StatusUnauthorized, status, "the replay at replica %s: %s", name, body)
	}

	bearer := tokenAt(t, a, "acme", nil, aliceForm)
	status, body = decideAt(t, b, bearer)
	require.Equal(t, http.StatusOK, status, "a token of replica a at replica b: %s", body)
	status, body = revokeAt(t, a, bearer)
	require.Equal(t, http.StatusOK, status, body)
	for name, base := range map[string]string{"a": a, "b": b} {
		status, body = decideAt(t, base, bearer)
		require.Equal(t, http.StatusUnauthorized, status, "the revoked token at replica %s: %s", name, body)
	}
	keys := testkit.Must(c.Keys(t.Context(), prefix+"*").Result())(t)
	// Both proofs are of one key, charged to its counter (two, when a
	// time bucket ended between them).
	records := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return strings.HasPrefix(k, prefix+"n{") })
	require.Len(t, records, 4, "the token request's proof, the decision's, the revocation and the marker: %v", keys)
	require.Contains(t, []int{1, 2}, len(keys)-len(records), "the proofs' key's counters: %v", keys)
	for _, k := range keys {
		require.LessOrEqual(t, len(k), len(prefix)+64)
		require.NotContains(t, k, tok)
		require.NotContains(t, k, bearer)
	}

	unrevoked := tokenAt(t, b, "acme", nil, aliceForm)
	srv.Stop()
	status, body = call(a, proof())
	require.Equal(t, http.StatusServiceUnavailable, status, "Redis down: %s", body)
	status, body = decideAt(t, a, unrevoked)
	require.Equal(t, http.StatusServiceUnavailable, status, "Redis down: the revocation state is unknown: %s", body)

	srv.Restart()
	for _, p := range []string{p1, proof()} {
		status, body = call(b, p)
		require.Equal(t, http.StatusUnauthorized, status, "Redis restarted empty: the token issued before, which it cannot vouch for, is refused for good: %s", body)
		require.Contains(t, body, "get a new one")
	}
	settled(t, c, prefix) // an operator vouches for the new keyspace
	status, body = call(a, proof())
	require.Equal(t, http.StatusOK, status, "served again without restarting a replica: %s", body)
}

// TestMockserverCodeRefusedForAYoungKeyspaceIsNotSpent: a reference server
// sharing Redis (redisstore.ReplayStore in process) that cannot vouch for
// an authorization code (Redis restarted after the code was issued: an
// earlier spend could have been lost) can never redeem it, and
// says so: invalid_grant (start the authorization again), no 503 that a
// retry could never pass. It spends nothing: redeemed once the keyspace
// vouches for it (here: the operator sets the marker earlier, as the docs
// allow for a keyspace known to be older).
func TestMockserverCodeRefusedForAYoungKeyspaceIsNotSpent(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client()
	store := NewReplayStore(c, "t:")
	settled(t, c, store.prefix)
	s := startCodeServer(t, store)
	code := s.code()
	require.NoError(t, c.Set(t.Context(), store.since, time.Now().UnixMilli(), 0).Err()) // Redis restarted since

	for _, attempt := range []string{"the redemption", "the client's retry"} {
		a := s.redeem(code, retryVerifier)
		require.Equal(t, http.StatusBadRequest, a.status, "%s while the keyspace can never vouch for the code: %s", attempt, a.body)
		require.Equal(t, "invalid_grant", a.err)
		require.Contains(t, a.body, "predates the shared store's keyspace")
		require.Empty(t, a.retryAfter)
	}
	// Not spent: an operator vouching for the keyspace lets it be redeemed.
	settled(t, c, store.prefix)
	a := s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusOK, a.status, "the retry once the keyspace vouches for the code: %s", a.body)
	a = s.redeem(code, retryVerifier)
	require.Equal(t, http.StatusBadRequest, a.status, "redeemed once: %s", a.body)
	require.Equal(t, "invalid_grant", a.err)
}

// The reference server's paths these tests call, and alice's password
// grant in the acme fixture.
const (
	tokenPath  = "/realms/acme/protocol/openid-connect/token"
	decidePath = "/realms/acme/authorization-decision-provider/authorize"
)

var aliceForm = url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice"}}

// tokenAt runs a token request (form, with header) for realm at base and
// returns the access token.
func tokenAt(t *testing.T, base, realm string, header http.Header, form url.Values) string {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, "/realms/"+realm+"/protocol/openid-connect/token", header,
		"application/x-www-form-urlencoded", form.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	return tok.AccessToken
}

// aliceToken returns an access token the replica at base issued to alice.
func aliceToken(t *testing.T, base string) string { return tokenAt(t, base, "acme", nil, aliceForm) }

// decideWith asks the replica at base, with header (the credentials),
// whether the caller may read orders, and returns the status and the body
// of the answer.
func decideWith(t *testing.T, base string, header http.Header) (int, string) {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, decidePath, header, "application/json",
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	return status, string(body)
}

// decideAt asks the replica at base whether the bearer token may read
// orders.
func decideAt(t *testing.T, base, token string) (int, string) {
	t.Helper()
	return decideWith(t, base, http.Header{"Authorization": {"Bearer " + token}})
}

// revokeAt revokes token at the replica at base (RFC 7009), and returns
// the status and the body of the answer.
func revokeAt(t *testing.T, base, token string) (int, string) {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, "/realms/acme/protocol/openid-connect/revoke", nil,
		"application/x-www-form-urlencoded", url.Values{"client_id": {"admin-cli"}, "token": {token}}.Encode())
	return status, string(body)
}

// acmeFixture is the fixture of the in-process reference servers.
var acmeFixture = mockserver.WithFixtureFile("../examples/fixtures/acme.json")

// inProcess starts an in-process reference server with the key seed seed,
// store (nil: none) and opts, and returns its URL and a function that
// stops it: a restart is a stop and another inProcess with the same
// arguments. It signs access tokens ES256, for the reason startGateway
// gives.
func inProcess(t *testing.T, store *ReplayStore, seed string, opts ...mockserver.Option) (string, func()) {
	t.Helper()
	opts = append(opts, mockserver.WithKeySeed([]byte(seed)), mockserver.WithAccessTokenAlgorithm("ES256"))
	if store != nil {
		opts = append(opts, mockserver.WithReplayStore(store))
	}
	ms := testkit.Must(mockserver.New(opts...))(t)
	hs := testkit.Serve(t, ms)
	return hs.URL, hs.Close
}

// replicaOn starts an in-process reference server with the acme fixture,
// the key seed seed and store, and returns its URL.
func replicaOn(t *testing.T, store *ReplayStore, seed string) string {
	t.Helper()
	base, _ := inProcess(t, store, seed, acmeFixture)
	return base
}
