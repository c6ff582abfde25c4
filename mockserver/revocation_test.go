package mockserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// revoke posts a revocation of token by the public client admin-cli.
func (h *authHarness) revoke(t *testing.T, form url.Values) int {
	t.Helper()
	req := newRequest(t, http.MethodPost, h.url+"/realms/acme/protocol/openid-connect/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestRevocationStoresOnlyAuthenticatedRequests: a revocation is recorded
// only for a token whose signature verified, that is live and that was
// issued to the client that authenticated; nothing else a request sends
// is stored, whatever it answers.
func TestRevocationStoresOnlyAuthenticatedRequests(t *testing.T) {
	h := newAuthHarness(t)
	alice := h.token(t, "acme", "alice")
	forged := h.signed(t, "acme", "alice", func(c *issuer.Claims) { c.ID = "forged" })
	forged = forged[:len(forged)-4] + "AAAA" // its signature broken
	for name, form := range map[string]url.Values{
		"unknown client":   {"client_id": {"nobody"}, "token": {alice}},
		"garbage token":    {"client_id": {"admin-cli"}, "token": {"x.y.z"}},
		"broken signature": {"client_id": {"admin-cli"}, "token": {forged}},
		"expired token":    {"client_id": {"admin-cli"}, "token": {h.token(t, "acme", "alice", TokenLifetime(-time.Second))}},
		"another realm's":  {"client_id": {"admin-cli"}, "token": {h.token(t, "globex", "gina")}},
		"another client's": {"client_id": {"spa"}, "token": {alice}},
	} {
		h.revoke(t, form)
		require.Zero(t, h.s.auth.revoked.total.Load(), name)
	}
	resp, _ := h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+alice)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cache, ok := h.s.auth.verified.realms.lookup("acme")
	require.True(t, ok)
	require.True(t, cache.contains(h.s.auth.verified.hash(alice)), "a used token is remembered")
	require.Equal(t, http.StatusOK, h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {alice}}))
	require.EqualValues(t, 1, h.s.auth.revoked.total.Load())
	require.False(t, cache.contains(h.s.auth.verified.hash(alice)), "a revoked token is forgotten by the verified-token cache")
}

// TestRevocationsLastUntilExpiry: a revoked token is refused until its exp
// and then forgotten, so the revocations held are at most the live tokens:
// after the clock jumps past their exp (a process frozen for an hour), the
// next revocation forgets them, and they are still refused, as expired.
func TestRevocationsLastUntilExpiry(t *testing.T) {
	h := newAuthHarness(t)
	var revoked []string
	for range 5 {
		tok := h.token(t, "acme", "alice", TokenLifetime(time.Minute))
		require.Equal(t, http.StatusOK, h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {tok}}))
		revoked = append(revoked, tok)
	}
	require.EqualValues(t, 5, h.s.auth.revoked.total.Load())
	h.now.Add(int64(59 * time.Second))
	for _, tok := range revoked {
		resp, body := h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, body, "revoked")
	}

	h.now.Add(int64(time.Hour))
	long := h.token(t, "acme", "alice", TokenLifetime(2*time.Hour))
	require.Equal(t, http.StatusOK, h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {long}}))
	require.EqualValues(t, 1, h.s.auth.revoked.total.Load(), "the expired ones are forgotten")
	for _, tok := range append(revoked, long) {
		resp, _ := h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
}

// TestRevokedTokenStaysRefusedWhenTheClockStepsBack: a revocation is
// forgotten once its token has expired by the server's clock; when that
// clock then steps back (NTP correcting a clock that ran ahead) and the
// token's exp is in the future again, the token is still refused (the
// realm's watermark of forgotten revocations, revocation.go), while a
// token issued after the step authenticates. (Reproduction from attack
// a-json4.)
func TestRevokedTokenStaysRefusedWhenTheClockStepsBack(t *testing.T) {
	h := newAuthHarness(t)
	tok := h.token(t, "acme", "alice", TokenLifetime(time.Minute))
	require.Equal(t, http.StatusOK, h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {tok}}))
	resp, _ := h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "revoked")

	// The clock runs 61 s ahead; another revocation in the realm forgets
	// the first, whose token has expired.
	h.now.Add(int64(61 * time.Second))
	other := h.token(t, "acme", "alice", TokenLifetime(time.Hour))
	require.Equal(t, http.StatusOK, h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {other}}))

	// The clock is corrected back by 31 s: by it, tok's exp is 30 s away
	// again; tok is still refused.
	h.now.Add(-int64(31 * time.Second))
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a revoked token authenticates after the clock stepped back")
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+other)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the other revoked token too")
	live := h.token(t, "acme", "alice", TokenLifetime(time.Hour))
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+live)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a live token still authenticates after the step back")
}
