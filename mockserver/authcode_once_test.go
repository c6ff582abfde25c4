package mockserver_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
)

// These tests hold the token endpoint to RFC 6749 section 4.1.2: an
// authorization code gives one answer. Of any number of redemptions of a
// code (concurrent, repeated, at different replicas) exactly one gets
// tokens; every other is invalid_grant, and revokes what the code issued.
// Each runs with the code kept in memory (one server) and sealed with a
// shared store (two replicas, the second redemption at the other one).

// codeServers are the two ways a server keeps codes, and the replicas the
// first and second redemption go to.
type codeServer struct {
	name          string
	start         func(t *testing.T) (*front, *sharedStore)
	first, second string
}

var codeServers = []codeServer{
	{"kept in memory", func(t *testing.T) (*front, *sharedStore) {
		return startFront(t, []string{"a"}, mockserver.WithFixture(webFixture())), nil
	}, "a", "a"},
	{"sealed with a shared store", func(t *testing.T) (*front, *sharedStore) {
		store := &sharedStore{keys: map[string]time.Time{}}
		return startSharedFront(t, store, mockserver.WithFixture(webFixture())), store
	}, "a", "b"},
}

// redemption is one answer of the token endpoint, read off the test's
// goroutine (no require there).
type redemption struct {
	status int
	body   map[string]any
	err    error
}

// redeemOff redeems code at replica as "web" and reports the answer
// without failing the test: it may run on a goroutine of its own.
func (f *front) redeemOff(replica, code string) redemption {
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodPost, f.URL+tokenPath, strings.NewReader(url.Values{
		"grant_type": {"authorization_code"}, "client_id": {"web"}, "code": {code},
		"redirect_uri": {webRedirect}, "code_verifier": {pkceVerifier}}.Encode()))
	if err != nil {
		return redemption{err: err}
	}
	req.Header.Set("X-Replica", replica)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := f.client().Do(req)
	if err != nil {
		return redemption{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return redemption{err: err}
	}
	out := redemption{status: res.StatusCode}
	if err := json.Unmarshal(b, &out.body); err != nil {
		out.err = errors.New("not JSON: " + string(b))
	}
	return out
}

// requireTokenRefused requires every replica of f to refuse token: 401.
func requireTokenRefused(t *testing.T, f *front, token string, replicas ...string) {
	t.Helper()
	for _, r := range replicas {
		res := f.bearerDecide(r, token)
		require.Equal(t, http.StatusUnauthorized, res.Status, "the code's token at %s after the code's reuse: %s", r, res.Body)
	}
}

// TestCodeIdenticalConcurrentRedemptionsGetOneAnswer: the same redemption
// sent twice at once (a proxy retrying the POST; with a shared store, to
// both replicas, each having recorded the spend as its redeemer's before
// either answered) gets exactly one token set: one 200, the other
// invalid_grant. The code was used twice, so its token is then refused
// (RFC 6749 section 4.1.2). Before, both redemptions found the shared
// record their own and were each answered a token.
func TestCodeIdenticalConcurrentRedemptionsGetOneAnswer(t *testing.T) {
	t.Parallel()
	for _, cs := range codeServers {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			f, store := cs.start(t)
			code := f.authCode(cs.first, webRedirect)
			if store != nil {
				store.mu.Lock()
				store.recordGate = &gate{n: 2, open: make(chan struct{})}
				store.mu.Unlock()
			}
			answers := make(chan redemption, 2)
			for _, r := range []string{cs.first, cs.second} {
				go func() { answers <- f.redeemOff(r, code) }()
			}
			var granted []string
			refused := 0
			for range 2 {
				a := <-answers
				require.NoError(t, a.err)
				switch a.status {
				case http.StatusOK:
					granted = append(granted, a.body["access_token"].(string))
				case http.StatusBadRequest:
					require.Equal(t, "invalid_grant", a.body["error"], a.body)
					refused++
				default:
					t.Fatalf("a redemption answered %d: %v", a.status, a.body)
				}
			}
			require.Len(t, granted, 1, "token sets issued for one code")
			require.Equal(t, 1, refused)
			requireTokenRefused(t, f, granted[0], cs.first, cs.second)
		})
	}
}

// TestCodeReusedIsRefusedAndRevokesItsToken: a code redeemed once is
// invalid_grant when redeemed again, at any replica, and the token the
// first redemption got, served until then, is refused from then on at
// every replica (RFC 6749 section 4.1.2: the tokens issued from a code
// used twice SHOULD be revoked). Before, the token stayed valid.
func TestCodeReusedIsRefusedAndRevokesItsToken(t *testing.T) {
	t.Parallel()
	for _, cs := range codeServers {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			f, _ := cs.start(t)
			code := f.authCode(cs.first, webRedirect)
			res := f.redeemCode(cs.first, code)
			require.Equal(t, http.StatusOK, res.Status, string(res.Body))
			token := res.JSON(t)["access_token"].(string)
			for _, r := range []string{cs.first, cs.second} {
				served := f.bearerDecide(r, token)
				require.Equal(t, http.StatusOK, served.Status, "the code's token at %s before the reuse: %s", r, served.Body)
			}

			res = f.redeemCode(cs.second, code)
			require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
			require.Equal(t, "invalid_grant", res.JSON(t)["error"])
			requireTokenRefused(t, f, token, cs.first, cs.second)
		})
	}
}

// TestCodeKeptWhenItsProofCannotBeRecorded: a redemption whose DPoP proof
// passed its check but cannot be recorded (kept in memory: the proof is a
// replay of one a concurrent request recorded first; with a shared store:
// the store fails for proofs, 503) is refused for the proof and leaves the
// code unspent: the same code then redeems with a fresh proof. (A kept
// code's proof whose record fails after its check passed, which no test
// can time over HTTP, is TestKeptCodeSurvivesAProofThatCannotBeRecorded.)
func TestCodeKeptWhenItsProofCannotBeRecorded(t *testing.T) {
	t.Parallel()
	for _, cs := range codeServers {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			f, store := cs.start(t)
			signer := newKey(t)
			redeem := func(replica, code, proof string) servertest.Result {
				return f.do(replica, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", url.Values{"grant_type": {"authorization_code"},
					"client_id": {"web"}, "code": {code}, "redirect_uri": {webRedirect}, "code_verifier": {pkceVerifier}}.Encode(), http.Header{"Dpop": {proof}})
			}
			code := f.authCode(cs.first, webRedirect)
			proof := proofOf(t, signer, http.MethodPost, f.URL+tokenPath, "", "")
			if store != nil {
				store.set(&store.failProofs, errors.New("connection reset"))
				res := redeem(cs.first, code, proof)
				require.Equal(t, http.StatusServiceUnavailable, res.Status, "the proof cannot be recorded: %s", res.Body)
				require.NotEmpty(t, res.Header.Get("Retry-After"))
				store.set(&store.failProofs, nil)
			} else {
				// Another request recorded the proof first (a password
				// grant with it): the redemption's record of it is a replay.
				pw := f.do(cs.first, http.MethodPost, tokenPath, "application/x-www-form-urlencoded", url.Values{"grant_type": {"password"},
					"client_id": {"admin-cli"}, "username": {"alice"}, "password": {"alice-pw"}}.Encode(), http.Header{"Dpop": {proof}})
				require.Equal(t, http.StatusOK, pw.Status, string(pw.Body))
				res := redeem(cs.first, code, proof)
				require.Equal(t, http.StatusBadRequest, res.Status, "the proof is a replay: %s", res.Body)
				require.Equal(t, "invalid_dpop_proof", res.JSON(t)["error"])
			}
			fresh := proofOf(t, signer, http.MethodPost, f.URL+tokenPath, "", "")
			res := redeem(cs.second, code, fresh)
			require.Equal(t, http.StatusOK, res.Status, "the client's retry with a fresh proof: %s", res.Body)
			require.Equal(t, "DPoP", res.JSON(t)["token_type"])
		})
	}
}
