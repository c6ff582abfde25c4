package redisstore

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
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
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
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
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = frontHost
	for k, v := range header {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// TestMockserverReplicasShareRedis: two reference servers with one
// fixture, one -key-seed and one -redis act as one. A proof accepted by
// one is a replay at the other; Redis down answers 503; Redis restarted
// empty refuses for good the token it cannot vouch for (401), and once an
// operator vouches for the keyspace, serves again without a replica
// restarting.
func TestMockserverReplicasShareRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	const prefix = "orgauthz:mockserver:dpop:"
	settle := func() {
		require.NoError(t, c.Set(t.Context(), prefix+SinceKey, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	}
	settle()
	args := []string{"-fixture", "../examples/fixtures/acme.json", "-key-seed", "redisstore-test-seed-0123", "-redis", srv.URL()}
	a, b := startMockserver(t, args...), startMockserver(t, args...)
	front := "http://" + frontHost
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)

	const tokenPath = "/realms/acme/protocol/openid-connect/token"
	p, err := signer.Proof(http.MethodPost, front+tokenPath, "", "")
	require.NoError(t, err)
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice"}}
	status, _, body := frontCall(t, a, http.MethodPost, tokenPath, http.Header{"Dpop": {p}}, "application/x-www-form-urlencoded", form.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))

	const decide = "/realms/acme/authorization-decision-provider/authorize"
	proof := func() string {
		p, err := signer.Proof(http.MethodPost, front+decide, tok.AccessToken, "")
		require.NoError(t, err)
		return p
	}
	call := func(base, p string) (int, []byte) {
		status, _, body := frontCall(t, base, http.MethodPost, decide,
			http.Header{"Authorization": {"DPoP " + tok.AccessToken}, "Dpop": {p}}, "application/json",
			`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
		return status, body
	}
	p1 := proof()
	status, body = call(b, p1)
	require.Equal(t, http.StatusOK, status, "a token of replica a at replica b: %s", body)
	for name, base := range map[string]string{"a": a, "b": b} {
		status, body = call(base, p1)
		require.Equal(t, http.StatusUnauthorized, status, "the replay at replica %s: %s", name, body)
	}
	keys, err := c.Keys(t.Context(), prefix+"*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 3, "the token request's proof, the decision's, and the marker: %v", keys)
	for _, k := range keys {
		require.LessOrEqual(t, len(k), len(prefix)+64)
		require.NotContains(t, k, tok.AccessToken)
	}

	srv.Stop()
	status, body = call(a, proof())
	require.Equal(t, http.StatusServiceUnavailable, status, "Redis down: %s", body)

	srv.Restart()
	for _, p := range []string{p1, proof()} {
		status, body = call(b, p)
		require.Equal(t, http.StatusUnauthorized, status, "Redis restarted empty: the token issued before, which it cannot vouch for, is refused for good: %s", body)
		require.Contains(t, string(body), "get a new one")
	}
	settle() // an operator vouches for the new keyspace
	status, body = call(a, proof())
	require.Equal(t, http.StatusOK, status, "served again without restarting a replica: %s", body)
}

// TestMockserverReplicasShareRevocationsInRedis: a token revoked through
// one reference server (-redis) is refused by the other from the moment
// the revocation answered; while Redis is down, a replica that cannot ask
// it refuses the token (503), never grants it.
func TestMockserverReplicasShareRevocationsInRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	const prefix = "orgauthz:mockserver:dpop:"
	require.NoError(t, c.Set(t.Context(), prefix+SinceKey, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	args := []string{"-fixture", "../examples/fixtures/acme.json", "-key-seed", "redisstore-test-seed-0123", "-redis", srv.URL()}
	a, b := startMockserver(t, args...), startMockserver(t, args...)

	const tokenPath = "/realms/acme/protocol/openid-connect/token"
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice"}}
	status, _, body := frontCall(t, a, http.MethodPost, tokenPath, nil, "application/x-www-form-urlencoded", form.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	const decide = "/realms/acme/authorization-decision-provider/authorize"
	call := func(base string) (int, []byte) {
		status, _, body := frontCall(t, base, http.MethodPost, decide, http.Header{"Authorization": {"Bearer " + tok.AccessToken}},
			"application/json", `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
		return status, body
	}
	status, body = call(b)
	require.Equal(t, http.StatusOK, status, "a token of replica a at replica b: %s", body)

	status, _, body = frontCall(t, a, http.MethodPost, "/realms/acme/protocol/openid-connect/revoke", nil,
		"application/x-www-form-urlencoded", url.Values{"client_id": {"admin-cli"}, "token": {tok.AccessToken}}.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	for name, base := range map[string]string{"a": a, "b": b} {
		status, body = call(base)
		require.Equal(t, http.StatusUnauthorized, status, "the revoked token at replica %s: %s", name, body)
	}
	keys, err := c.Keys(t.Context(), prefix+"*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 2, "the revocation and the marker: %v", keys)
	for _, k := range keys {
		require.NotContains(t, k, tok.AccessToken)
	}

	status, _, body = frontCall(t, b, http.MethodPost, tokenPath, nil, "application/x-www-form-urlencoded", form.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	require.NoError(t, json.Unmarshal(body, &tok))
	srv.Stop()
	status, body = call(a)
	require.Equal(t, http.StatusServiceUnavailable, status, "Redis down: the revocation state is unknown: %s", body)
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
	const redirect = "https://app.test/cb"
	srv := redistest.Start(t)
	c := srv.Client()
	store := NewReplayStore(c, "t:")
	require.NoError(t, c.Set(t.Context(), store.since, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	ms, err := mockserver.New(mockserver.WithKeySeed([]byte("0123456789abcdef0123456789abcdef")), mockserver.WithReplayStore(store),
		mockserver.WithFixture(mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
			Name:    "acme",
			Users:   []mockserver.FixtureUser{{Username: "alice", Password: "alice-pw"}},
			Clients: []mockserver.FixtureClient{{ClientID: "web", Public: true, RedirectURIs: []string{redirect}}},
		}}}))
	require.NoError(t, err)
	hs := httptest.NewServer(ms)
	t.Cleanup(hs.Close)

	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" // RFC 7636 appendix B
	form := url.Values{"response_type": {"code"}, "client_id": {"web"}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "username": {"alice"}, "password": {"alice-pw"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/realms/acme/protocol/openid-connect/auth", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	code := loc.Query().Get("code")
	require.NotEmpty(t, code, loc.String())
	require.NoError(t, c.Set(t.Context(), store.since, time.Now().UnixMilli(), 0).Err()) // Redis restarted since

	redeem := func() (int, http.Header, string) {
		status, header, body := frontCall(t, hs.URL, http.MethodPost, "/realms/acme/protocol/openid-connect/token", nil,
			"application/x-www-form-urlencoded", url.Values{"grant_type": {"authorization_code"}, "client_id": {"web"}, "code": {code},
				"redirect_uri": {redirect}, "code_verifier": {verifier}}.Encode())
		return status, header, string(body)
	}
	for _, attempt := range []string{"the redemption", "the client's retry"} {
		status, header, body := redeem()
		require.Equal(t, http.StatusBadRequest, status, "%s while the keyspace can never vouch for the code: %s", attempt, body)
		require.Contains(t, body, "invalid_grant")
		require.Contains(t, body, "predates the shared store's keyspace")
		require.Empty(t, header.Get("Retry-After"))
	}
	// Not spent: an operator vouching for the keyspace lets it be redeemed.
	require.NoError(t, c.Set(t.Context(), store.since, time.Now().Add(-time.Hour).UnixMilli(), 0).Err())
	status, _, body := redeem()
	require.Equal(t, http.StatusOK, status, "the retry once the keyspace vouches for the code: %s", body)
	status, _, body = redeem()
	require.Equal(t, http.StatusBadRequest, status, "redeemed once: %s", body)
	require.Contains(t, body, "invalid_grant")
}

// aliceToken returns an access token the replica at base issued to alice
// (the acme fixture's password grant).
func aliceToken(t *testing.T, base string) string {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, "/realms/acme/protocol/openid-connect/token", nil,
		"application/x-www-form-urlencoded",
		url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice"}}.Encode())
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	return tok.AccessToken
}

// decideAt asks the replica at base whether token may read orders, and
// returns the status and the body of the answer.
func decideAt(t *testing.T, base, token string) (int, string) {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, "/realms/acme/authorization-decision-provider/authorize",
		http.Header{"Authorization": {"Bearer " + token}}, "application/json",
		`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`)
	return status, string(body)
}

// revokeAt revokes token at the replica at base (RFC 7009), and returns
// the status and the body of the answer.
func revokeAt(t *testing.T, base, token string) (int, string) {
	t.Helper()
	status, _, body := frontCall(t, base, http.MethodPost, "/realms/acme/protocol/openid-connect/revoke", nil,
		"application/x-www-form-urlencoded", url.Values{"client_id": {"admin-cli"}, "token": {token}}.Encode())
	return status, string(body)
}

// replicaOn starts an in-process reference server with the acme fixture,
// the key seed seed and store, and returns its URL.
func replicaOn(t *testing.T, store *ReplayStore, seed string) string {
	t.Helper()
	ms, err := mockserver.New(mockserver.WithKeySeed([]byte(seed)), mockserver.WithReplayStore(store),
		mockserver.WithFixtureFile("../examples/fixtures/acme.json"))
	require.NoError(t, err)
	hs := httptest.NewServer(ms)
	t.Cleanup(hs.Close)
	return hs.URL
}
