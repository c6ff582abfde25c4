package dpop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// memStore is a ReplayStore in memory, shared by the Verifiers of a test
// as replicas share Redis. It expires keys by its own clock.
type memStore struct {
	now func() time.Time

	mu    sync.Mutex
	keys  map[string]time.Time
	calls []storeCall
}

type storeCall struct {
	key   string
	until time.Time
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, keys: make(map[string]time.Time)}
}

func (s *memStore) Remember(_ context.Context, key string, until time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, storeCall{key, until})
	if u, ok := s.keys[key]; ok && !s.now().After(u) {
		return false, nil
	}
	s.keys[key] = until
	return true, nil
}

func (s *memStore) recorded() []storeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeCall(nil), s.calls...)
}

// storeFunc adapts a function to ReplayStore.
type storeFunc func(ctx context.Context, key string, until time.Time) (bool, error)

func (f storeFunc) Remember(ctx context.Context, key string, until time.Time) (bool, error) {
	return f(ctx, key, until)
}

// TestReplayStoreSharedByReplicas: two Verifiers (two replicas) sharing a
// store refuse at one a proof the other accepted, until the store lets it
// go, which is no earlier than the end of the proof's window plus the
// margin; and the proof is refused by both for all of that time.
func TestReplayStoreSharedByReplicas(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	store := newMemStore(clock.Now)
	a := newTestVerifier(t, WithClock(clock.Now), WithReplayStore(store))
	b := newTestVerifier(t, WithClock(clock.Now), WithReplayStore(store))
	f := newFixture(t)
	p := f.proof(t, nil)

	verified(t, a, f.request(p))
	for _, tc := range []struct {
		name string
		v    *Verifier
	}{{"other replica", b}, {"same replica", a}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.v.Verify(t.Context(), f.request(p))
			requireOnly(t, err, ErrReplay)
		})
	}
	calls := store.recorded()
	require.Len(t, calls, 3)
	require.Equal(t, testNow.Add(DefaultMaxAge+ReplayStoreMargin), calls[0].until,
		"a proof is kept for its window and the margin")

	// At the last instant of the window the store still holds it.
	clock.Set(testNow.Add(DefaultMaxAge))
	_, err := b.Verify(t.Context(), f.request(p))
	requireOnly(t, err, ErrReplay)
	// After the window the iat check refuses it, whatever the store did.
	clock.Set(testNow.Add(DefaultMaxAge + ReplayStoreMargin + time.Second))
	_, err = b.Verify(t.Context(), f.request(p))
	requireOnly(t, err, ErrIATTooOld)
}

// TestReplayStoreKeysCarryNoProofMaterial: the key sent to the store is
// bounded in size whatever the jti, and holds neither the jti nor the
// thumbprint; distinct proofs get distinct keys, one key's proof another's.
func TestReplayStoreKeysCarryNoProofMaterial(t *testing.T) {
	t.Parallel()
	store := newMemStore(fixedClock(testNow))
	v := newTestVerifier(t, WithReplayStore(store))
	f, g := newFixture(t), otherFixture(t)
	longJTI := strings.Repeat("j", 4000)
	for _, p := range []struct {
		f   fixture
		jti string
	}{{f, "short-jti-1"}, {f, longJTI}, {g, "short-jti-1"}} {
		verified(t, v, p.f.request(p.f.proof(t, func(_, c map[string]any) { c["jti"] = p.jti })))
	}
	calls := store.recorded()
	require.Len(t, calls, 3)
	seen := map[string]bool{}
	for _, c := range calls {
		require.LessOrEqual(t, len(c.key), 64)
		require.NotContains(t, c.key, "short-jti-1")
		require.NotContains(t, c.key, "jjjjjjjj")
		require.NotContains(t, c.key, f.jkt)
		require.NotContains(t, c.key, g.jkt)
		require.False(t, seen[c.key], "two proofs share a key")
		seen[c.key] = true
	}
}

// TestReplayStoreFailureRefusesTheProof: every way the store can fail
// refuses the proof with ErrReplayStoreUnavailable (and no other
// sentinel), never accepts it: an error, an error with first set, a store
// that hangs past the caller's context (even one that ignores ctx), a
// store that panics (on the Verifier's own goroutine, where the panic
// would end the process: it used to).
func TestReplayStoreFailureRefusesTheProof(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		store storeFunc
		cause string
	}{
		{"error", func(context.Context, string, time.Time) (bool, error) { return false, down }, down.Error()},
		{"error with first", func(context.Context, string, time.Time) (bool, error) { return true, down }, down.Error()},
		{"panic", func(context.Context, string, time.Time) (bool, error) { panic("a bug in the user's store") }, "the replay store panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newTestVerifier(t, WithReplayStore(tc.store))
			f := newFixture(t)
			_, err := v.Verify(t.Context(), f.request(f.proof(t, nil)))
			requireOnly(t, err, ErrReplayStoreUnavailable)
			require.ErrorContains(t, err, tc.cause)
		})
	}
}

// TestReplayStoreHungStopsAtTheContext: a store that does not answer, and
// ignores its context, holds Verify only until the caller's context ends;
// the proof is refused with ErrReplayStoreUnavailable.
func TestReplayStoreHungStopsAtTheContext(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hung := storeFunc(func(context.Context, string, time.Time) (bool, error) {
		once.Do(func() { close(entered) })
		<-release // ignores ctx
		return true, nil
	})
	t.Cleanup(func() { close(release) })
	v := newTestVerifier(t, WithReplayStore(hung))
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-entered
		cancel()
	}()
	_, err := v.Verify(ctx, f.request(f.proof(t, nil)))
	requireOnly(t, err, ErrReplayStoreUnavailable)
	require.ErrorIs(t, err, context.Canceled)
}

// TestReplayStoreFrozenProcessRefusesStaleProof: a process frozen (or
// starved) between its iat check and the store's answer may find that the
// store forgot another replica's record of the proof meanwhile, and
// answers first. The Verifier reads its clock again after the store
// answered and refuses a proof whose window ended meanwhile: otherwise a
// replica frozen for an hour would accept a replay.
func TestReplayStoreFrozenProcessRefusesStaleProof(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	shared := newMemStore(clock.Now)
	a := newTestVerifier(t, WithClock(clock.Now), WithReplayStore(shared))
	f := newFixture(t)
	p := f.proof(t, nil)
	verified(t, a, f.request(p))

	// Replica b checks the replay of p's iat at testNow, then freezes for
	// an hour before its Remember reaches the store, which let p go.
	frozen := storeFunc(func(ctx context.Context, key string, until time.Time) (bool, error) {
		clock.Advance(time.Hour)
		return shared.Remember(ctx, key, until)
	})
	b := newTestVerifier(t, WithClock(clock.Now), WithReplayStore(frozen))
	_, err := b.Verify(t.Context(), f.request(p))
	requireOnly(t, err, ErrIATTooOld)
}

// TestReplayStoreOneWinnerAcrossReplicas: many requests carrying one
// proof, spread over replicas sharing a store, are accepted exactly once.
func TestReplayStoreOneWinnerAcrossReplicas(t *testing.T) {
	t.Parallel()
	store := newMemStore(fixedClock(testNow))
	replicas := make([]*Verifier, 3)
	for i := range replicas {
		replicas[i] = newTestVerifier(t, WithReplayStore(store))
	}
	f := newFixture(t)
	p := f.proof(t, nil)
	var accepted atomic.Int32
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			if _, err := replicas[i%len(replicas)].Verify(t.Context(), f.request(p)); err == nil {
				accepted.Add(1)
			} else if !errors.Is(err, ErrReplay) {
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, accepted.Load())
}

// TestReplayStoreCheckThenRecord: with a store, Check records nothing (a
// request that then fails authentication stores nothing) and leaves the
// replay check to Record, which refuses a proof another replica recorded.
func TestReplayStoreCheckThenRecord(t *testing.T) {
	t.Parallel()
	store := newMemStore(fixedClock(testNow))
	a := newTestVerifier(t, WithReplayStore(store))
	b := newTestVerifier(t, WithReplayStore(store))
	f := newFixture(t)
	req := f.request(f.proof(t, nil))

	resA := testkit.Must(a.Check(t.Context(), req))(t)
	resB := testkit.Must(b.Check(t.Context(), req))(t)
	require.Empty(t, store.recorded(), "Check stored something")

	require.NoError(t, a.RecordContext(t.Context(), resA))
	requireOnly(t, b.Record(resB), ErrReplay)
	requireOnly(t, a.Record(resA), ErrReplay)
}
