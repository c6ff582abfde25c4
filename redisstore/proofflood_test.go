package redisstore

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestOneCallersProofsLockOutNoReplica: two replicas of the reference
// server binary on one Redis (-redis) of 16 MB, noeviction (a-rep13 F2:
// alice, through the public admin-cli client with her own DPoP key, sent
// proofs of one key until Redis was full, and every replica then answered
// 503 to every other client, DPoP or Bearer). Her proofs, at both
// replicas, are accepted up to the server's per-key limit (20,000 within
// the proof window; 20,000 exactly when the flood takes less than three
// quarters of the window, up to three times that over a longer one) and
// then refused (503, her key's alone); another client's Bearer token and
// another DPoP client's token request then pass at both replicas, and her
// key stays refused.
func TestOneCallersProofsLockOutNoReplica(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "16mb", "--maxmemory-policy", "noeviction")
	require.True(t, srv.Real(), "a memory bound needs redis-server, on PATH here and in CI")
	c := srv.Client()
	const prefix, perKey = "orgauthz:mockserver:dpop:", 20_000
	settled(t, c, prefix)
	args := []string{"-fixture", "../examples/fixtures/acme.json", "-key-seed", "redisstore-test-seed-0123", "-redis", srv.URL()}
	a, b := startMockserver(t, args...), startMockserver(t, args...)
	front := "http://" + frontHost
	victim := aliceToken(t, a)

	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	p, err := signer.Proof(http.MethodPost, front+tokenPath, "", "")
	require.NoError(t, err)
	tok := tokenAt(t, a, "acme", http.Header{"Dpop": {p}}, aliceForm)
	flood := func(base string) int {
		p, err := signer.Proof(http.MethodPost, front+decidePath, tok, "")
		require.NoError(t, err)
		s, _ := decideWith(t, base, http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {p}})
		return s
	}
	// One proof went to the token endpoint; the rest, at both replicas,
	// from 4 callers, until the key is refused (3 times the limit is the
	// most it can hold; past 16 MB, some 95,000 records, Redis is full).
	var accepted, refused atomic.Int64
	var other sync.Map // statuses other than 200 and 503
	var wg sync.WaitGroup
	for w := range 4 {
		base := []string{a, b}[w%2]
		wg.Go(func() {
			for refused.Load() == 0 && accepted.Load() < 3*perKey {
				switch s := flood(base); s {
				case http.StatusOK:
					accepted.Add(1)
				case http.StatusServiceUnavailable:
					refused.Add(1)
				default:
					other.Store(s, true)
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	other.Range(func(k, _ any) bool { t.Errorf("a flooding proof answered %v", k); return true })
	for _, base := range []string{a, b} {
		status, body := decideAt(t, base, victim)
		require.Equal(t, http.StatusOK, status, "another client's Bearer token: %s", body)
		another, err := dpop.GenerateKey()
		require.NoError(t, err)
		p, err := another.Proof(http.MethodPost, front+tokenPath, "", "")
		require.NoError(t, err)
		status, _, resp := frontCall(t, base, http.MethodPost, tokenPath, http.Header{"Dpop": {p}}, "application/x-www-form-urlencoded", aliceForm.Encode())
		require.Equal(t, http.StatusOK, status, "another DPoP client's token request: %s", resp)
		require.Equal(t, http.StatusServiceUnavailable, flood(base), "her key, past its limit")
	}
	t.Logf("her key's proofs accepted before it was refused: %d", accepted.Load())
	require.GreaterOrEqual(t, accepted.Load(), int64(perKey-1), "her key's proofs accepted, after the token request's")
	require.Less(t, accepted.Load(), int64(3*perKey), "her key's proofs accepted, after the token request's")
}
