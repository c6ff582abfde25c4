package redisstore

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestOneCallersProofsLockOutNoReplica: two replicas of the reference
// server binary on one Redis (-redis) of 16 MB, noeviction (a-rep13 F2:
// alice, through the public admin-cli client with her own DPoP key, sent
// proofs of one key until Redis was full, and every replica then answered
// 503 to every other client, DPoP or Bearer). Her key holds at most the
// server's per-key limit (20,000) of records, its oldest dropped to make
// room: her flood of 22,000 proofs, at both replicas, fills nothing, is
// refused (503) only for proofs of a second whose own records it dropped,
// and her key's next proof passes (a-fix13d: a count that refused a busy
// key for its whole window locked out every caller of a service signing
// with it); another client's Bearer token and another DPoP client's token
// request pass at both replicas.
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

	signer := testkit.Must(dpop.GenerateKey())(t)
	p := testkit.Must(signer.Proof(http.MethodPost, front+tokenPath, "", ""))(t)
	tok := tokenAt(t, a, "acme", http.Header{"Dpop": {p}}, aliceForm)
	floodWith := func(s *dpop.Signer, base string) int {
		p := testkit.Must(s.Proof(http.MethodPost, front+decidePath, tok, ""))(t)
		status, _ := decideWith(t, base, http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {p}})
		return status
	}
	// One proof went to the token endpoint; the rest, at both replicas,
	// from 4 callers.
	var sent, accepted atomic.Int64
	var other sync.Map // statuses other than 200 and 503
	var wg sync.WaitGroup
	for w := range 4 {
		base := []string{a, b}[w%2]
		wg.Go(func() {
			for sent.Add(1) <= perKey+2_000 {
				switch s := floodWith(signer, base); s {
				case http.StatusOK:
					accepted.Add(1)
				case http.StatusServiceUnavailable: // a second whose records it dropped
				default:
					other.Store(s, true)
				}
			}
		})
	}
	wg.Wait()
	other.Range(func(k, _ any) bool { t.Errorf("a flooding proof answered %v", k); return true })
	t.Logf("her key's proofs accepted: %d of %d", accepted.Load(), perKey+2_000)
	require.GreaterOrEqual(t, accepted.Load(), int64(perKey-1), "her key's proofs accepted, after the token request's")
	records := testkit.Must(c.Keys(t.Context(), prefix+"*").Result())(t)
	require.LessOrEqual(t, len(records), perKey+16, "her key's records, its set and mark, the marker")
	next := signer.WithClock(func() time.Time { return time.Now().Add(time.Second) })
	for _, base := range []string{a, b} {
		status, body := decideAt(t, base, victim)
		require.Equal(t, http.StatusOK, status, "another client's Bearer token: %s", body)
		another := testkit.Must(dpop.GenerateKey())(t)
		p := testkit.Must(another.Proof(http.MethodPost, front+tokenPath, "", ""))(t)
		status, _, resp := frontCall(t, base, http.MethodPost, tokenPath, http.Header{"Dpop": {p}}, "application/x-www-form-urlencoded", aliceForm.Encode())
		require.Equal(t, http.StatusOK, status, "another DPoP client's token request: %s", resp)
		require.Equal(t, http.StatusOK, floodWith(next, base), "her key's next proof, past its limit")
	}
}
