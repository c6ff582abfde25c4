package dpop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chargedStore is a ChargedReplayStore in memory: memStore's records, and
// an exact count of each owner's (the test's clock does not move, so no
// record expires).
type chargedStore struct {
	*memStore
	mu     sync.Mutex
	owners map[string]int
	limits []int
	iats   []time.Time
}

func (s *chargedStore) RememberCharged(ctx context.Context, key, owner string, limit int, iat, until time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, limit)
	s.iats = append(s.iats, iat)
	if s.owners[owner] >= limit {
		return false, errors.Join(errors.New("chargedStore: the key holds its limit"), ErrReplayCacheFull)
	}
	first, err := s.memStore.Remember(ctx, key, until)
	if first && err == nil {
		s.owners[owner]++
	}
	return first, err
}

// TestChargedReplayStoreBoundsOneKey: with a store that charges records
// to their key, WithReplayKeyLimit bounds one key's records in the store
// as it bounds them in memory: the key's proof past its limit is refused
// with ErrReplayCacheFull (no store outage: ErrReplayStoreUnavailable is
// not in the chain), and another key's proof, at another replica, is
// accepted. The owner the store is given is the same for every proof of
// a key, another for another key, and never holds the thumbprint.
func TestChargedReplayStoreBoundsOneKey(t *testing.T) {
	t.Parallel()
	store := &chargedStore{memStore: newMemStore(fixedClock(testNow)), owners: map[string]int{}}
	const limit = 3
	a := newTestVerifier(t, WithReplayStore(store), WithReplayKeyLimit(limit))
	b := newTestVerifier(t, WithReplayStore(store), WithReplayKeyLimit(limit))
	mallory := mustSigner(t, mustGenerateP256(t)).WithClock(fixedClock(testNow))
	alice := mustSigner(t, mustGenerateP256(t)).WithClock(fixedClock(testNow))
	verify := func(v *Verifier, s *Signer) error {
		_, err := v.Verify(t.Context(), Request{Proofs: []string{proofOf(t, s, "GET", testURL, "", "")}, Method: "GET", URL: testURL})
		return err
	}
	for range limit {
		require.NoError(t, verify(a, mallory))
	}
	requireOnly(t, verify(a, mallory), ErrReplayCacheFull)
	requireOnly(t, verify(b, mallory), ErrReplayCacheFull)
	require.NoError(t, verify(b, alice))

	require.Len(t, store.owners, 2)
	for owner := range store.owners {
		require.NotContains(t, owner, mallory.Thumbprint())
		require.NotContains(t, mallory.Thumbprint(), owner)
		require.NotContains(t, owner, alice.Thumbprint())
		require.LessOrEqual(t, len(owner), 64)
		require.Empty(t, strings.Trim(owner, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
	}
	for _, l := range store.limits {
		require.Equal(t, limit, l)
	}
	for _, iat := range store.iats {
		require.True(t, iat.Equal(testNow.Truncate(time.Second)), "the store is given the proof's iat, %v", iat)
	}
}

// TestPlainReplayStoreKeepsNoKeyLimit: a store without RememberCharged
// keeps its behaviour: WithReplayKeyLimit has no effect on it.
func TestPlainReplayStoreKeepsNoKeyLimit(t *testing.T) {
	t.Parallel()
	store := newMemStore(fixedClock(testNow))
	v := newTestVerifier(t, WithReplayStore(store), WithReplayKeyLimit(2))
	s := mustSigner(t, mustGenerateP256(t)).WithClock(fixedClock(testNow))
	for range 5 {
		_, err := v.Verify(t.Context(), Request{Proofs: []string{proofOf(t, s, "GET", testURL, "", "")}, Method: "GET", URL: testURL})
		require.NoError(t, err)
	}
	require.Len(t, store.recorded(), 5)
}

// mustGenerateP256 returns a fresh P-256 key.
func mustGenerateP256(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}
