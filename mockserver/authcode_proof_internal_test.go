package mockserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// failingProofStore is a dpop.ReplayStore whose Remember fails while down
// is set: the record of a proof that passed its check fails, as a full
// replay cache, a concurrent replay or a proof crossing its age between
// the check and the record make it fail (none of which a test can time
// over HTTP). Without a shared store the server keeps its codes in memory.
type failingProofStore struct {
	down atomic.Bool
	dpop.ReplayStore
}

func (f *failingProofStore) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	if f.down.Load() {
		return false, errors.New("connection reset")
	}
	return f.ReplayStore.Remember(ctx, key, until)
}

// memoryProofs is a dpop.ReplayStore in memory.
type memoryProofs struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (m *memoryProofs) Remember(_ context.Context, key string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[key] {
		return false, nil
	}
	m.keys[key] = true
	return true, nil
}

// TestKeptCodeSurvivesAProofThatCannotBeRecorded: without a shared store,
// a redemption whose DPoP proof passed its check and whose record then
// failed (503) leaves the kept code unspent: the client's retry with a
// fresh proof is redeemed. Before, the code was taken from the store
// before the proof was recorded, and the retry was invalid_grant: a
// valid client refused (a-dpop9).
func TestKeptCodeSurvivesAProofThatCannotBeRecorded(t *testing.T) {
	t.Parallel()
	const redirect = "https://app.test/cb"
	s := testkit.Must(New(WithFixture(Fixture{Realms: []FixtureRealm{{
		Name:    "acme",
		Users:   []FixtureUser{{Username: "alice", Password: "alice-pw"}},
		Clients: []FixtureClient{{ClientID: "web", Public: true, RedirectURIs: []string{redirect}}},
	}}})))(t)
	require.Nil(t, s.shared, "codes are kept in memory")
	proofs := &failingProofStore{ReplayStore: &memoryProofs{keys: map[string]bool{}}}
	opts := append(append([]dpop.Option(nil), s.auth.proofOpts...), dpop.WithReplayStore(proofs))
	s.auth.proofs = newPerRealm(func() (*dpop.Verifier, error) { return dpop.NewVerifier(opts...) })
	hs := testkit.Serve(t, s)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values, header http.Header) *http.Response {
		t.Helper()
		req := newRequest(t, http.MethodPost, hs.URL+path, strings.NewReader(form.Encode()))
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res := testkit.Must(client.Do(req))(t)
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 appendix B
	login := post("/realms/acme/protocol/openid-connect/auth", url.Values{"response_type": {"code"}, "client_id": {"web"},
		"redirect_uri": {redirect}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
		"username": {"alice"}, "password": {"alice-pw"}}, nil)
	require.Equal(t, http.StatusFound, login.StatusCode)
	loc := testkit.Must(url.Parse(login.Header.Get("Location")))(t)
	code := loc.Query().Get("code")
	require.NotEmpty(t, code, loc.String())

	signer := newKey(t)
	tokenPath := "/realms/acme/protocol/openid-connect/token"
	redeem := func() *http.Response {
		t.Helper()
		p := proofOf(t, signer, http.MethodPost, hs.URL+tokenPath, "", "")
		return post(tokenPath, url.Values{"grant_type": {"authorization_code"}, "client_id": {"web"}, "code": {code},
			"redirect_uri": {redirect}, "code_verifier": {verifier}}, http.Header{"Dpop": {p}})
	}
	proofs.down.Store(true)
	res := redeem()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "the proof cannot be recorded")
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	proofs.down.Store(false)
	res = redeem()
	require.Equal(t, http.StatusOK, res.StatusCode, "the client's retry with a fresh proof")
}
