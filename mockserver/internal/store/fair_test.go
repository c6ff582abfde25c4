package store

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pacedStore returns a store of realms a and b whose pacer earns a share
// of 0.1 on a clock the test moves: sleeping moves it, and so does a write
// that "takes" a duration (hold). While a write of a sleeps, b goes on
// serving requests.
func pacedStore(t *testing.T) (s *Store, now *time.Duration, slept *time.Duration) {
	t.Helper()
	s = New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	b, _ := s.Lookup("b")
	now, slept = new(time.Duration), new(time.Duration)
	*now = time.Hour // far from 0, so that no realm looks recently served
	s.pacer.clock = func() time.Duration { return *now }
	s.pacer.sleep = func(_ context.Context, d time.Duration) error {
		*now += d
		*slept += d
		s.Serving(b)
		return nil
	}
	s.pacer.share = func() float64 { return 0.1 }
	return s, now, slept
}

// serving notes that realm serves a request now.
func serving(t *testing.T, s *Store, realm string) {
	t.Helper()
	r, ok := s.Lookup(realm)
	require.True(t, ok)
	s.Serving(r)
}

// hold writes realm as a write that holds its lock for d.
func hold(t *testing.T, s *Store, now *time.Duration, realm string, d time.Duration) {
	t.Helper()
	require.NoError(t, s.Write(realm, func(*Realm) error { *now += d; return nil }))
}

// TestRealmAloneWritesUnpaced: however long a realm's writes hold its lock,
// with no other realm served its next write does not wait; nor does it
// when the other realm was only read, not served (an anonymous request
// reads its realm too), or was served longer than activeWindow ago.
func TestRealmAloneWritesUnpaced(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)
	for range 10 {
		require.NoError(t, s.Read("b", func(*Realm) error { return nil }))
		hold(t, s, now, "a", time.Second)
	}
	require.Zero(t, *slept)
	serving(t, s, "b")
	*now += activeWindow
	hold(t, s, now, "a", time.Second)
	require.Zero(t, *slept)
}

// TestWritesPacedWhileAnotherRealmIsServed: while b serves requests, a's
// writes may hold a's lock for writeBurst at once and then for the pacer's
// share of the wall clock; the debt is paid by waiting before the lock,
// never by a read; and once b falls quiet a writes at full speed again.
func TestWritesPacedWhileAnotherRealmIsServed(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)

	serving(t, s, "b")
	hold(t, s, now, "a", writeBurst) // the burst: no wait
	require.Zero(t, *slept)
	serving(t, s, "b")
	hold(t, s, now, "a", time.Second) // starts at credit 0: no wait, but a debt
	require.Zero(t, *slept)

	// The debt is capped at writeDebt; paying it at share 0.1 takes ten
	// times as long.
	serving(t, s, "b")
	start := *now
	hold(t, s, now, "a", time.Millisecond)
	require.InDelta(t, float64(10*writeDebt), float64(*slept), float64(time.Microsecond), "waited")
	require.Equal(t, start+*slept+time.Millisecond, *now)

	// Reads of a never wait, in debt or not.
	serving(t, s, "b")
	hold(t, s, now, "a", writeBurst)
	*slept = 0
	require.NoError(t, s.Read("a", func(*Realm) error { return nil }))
	require.Zero(t, *slept)

	// Over many writes, a holds its lock for its share of the time.
	var held time.Duration
	begin := *now
	for range 100 {
		serving(t, s, "b")
		hold(t, s, now, "a", 5*time.Millisecond)
		held += 5 * time.Millisecond
	}
	share := float64(held) / float64(*now-begin)
	require.InDelta(t, 0.1, share, 0.02, "a's share of the wall clock")

	// b falls quiet: a's debt no longer holds it back.
	*now += activeWindow
	*slept = 0
	hold(t, s, now, "a", time.Second)
	hold(t, s, now, "a", time.Second)
	require.Zero(t, *slept)
}

// TestPacedWriteEndsWhenOthersFallQuiet: a write in debt waits only while
// another realm is served: when b served one request and no more, a's
// write waits until that request is activeWindow old, not for its debt.
func TestPacedWriteEndsWhenOthersFallQuiet(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)
	s.pacer.sleep = func(_ context.Context, d time.Duration) error { *now += d; *slept += d; return nil }
	hold(t, s, now, "a", time.Second) // the deepest debt: 2 s to pay at 0.1
	serving(t, s, "b")
	hold(t, s, now, "a", time.Millisecond)
	require.Equal(t, activeWindow, *slept)
}

// TestPacerTracksTheTwoLatestRealms: a realm is alone only when neither
// of the two realms served last is another realm served within
// activeWindow, whatever order realms were served in.
func TestPacerTracksTheTwoLatestRealms(t *testing.T) {
	t.Parallel()
	s, now, _ := pacedStore(t)
	require.NoError(t, s.Install(keyedRealm(t, "c")))
	a, _ := s.Lookup("a")
	serving(t, s, "a")
	require.False(t, s.pacer.others(a, *now))
	serving(t, s, "b")
	serving(t, s, "c")
	serving(t, s, "a")
	require.True(t, s.pacer.others(a, *now), "c was served just before a")
	*now += time.Millisecond
	serving(t, s, "a")
	serving(t, s, "a")
	require.True(t, s.pacer.others(a, *now), "a's own requests do not push c out")
	*now += activeWindow
	require.False(t, s.pacer.others(a, *now))
}

// TestConcurrentWritersShareOneCredit: writers of a realm that arrive
// together pass the pacer one at a time, so that they cannot all spend
// the same credit: n writes of 10 ms each, all started at once while
// another realm is served, hold the lock for the pacer's share of the
// time they take.
func TestConcurrentWritersShareOneCredit(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	b, _ := s.Lookup("b")
	var now atomic.Int64 // the fake clock, which the goroutines share
	now.Store(int64(time.Hour))
	s.pacer.clock = func() time.Duration { return time.Duration(now.Load()) }
	s.pacer.share = func() float64 {
		runtime.Gosched() // let the other writers reach the pacer too, if they can
		return 0.1
	}
	s.pacer.sleep = func(_ context.Context, d time.Duration) error {
		now.Add(int64(d))
		s.Serving(b) // b is served throughout
		return nil
	}
	s.Serving(b)
	require.NoError(t, s.Write("a", func(*Realm) error { now.Add(int64(writeBurst)); return nil })) // spend the burst
	begin := now.Load()
	const n, each = 32, 10 * time.Millisecond
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-ready
			assert.NoError(t, s.Write("a", func(*Realm) error {
				now.Add(int64(each))
				s.Serving(b)
				return nil
			}))
		})
	}
	close(ready)
	wg.Wait()
	share := float64(n*each) / float64(now.Load()-begin)
	require.InDelta(t, 0.1, share, 0.01, "a's share of the wall clock")
}

// TestIdleRealmsCreditSaturates: credit earned over a very long idle time
// stops at writeBurst; it does not overflow into a debt.
func TestIdleRealmsCreditSaturates(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)
	s.pacer.share = func() float64 { return 64 }
	hold(t, s, now, "a", writeBurst)
	*now += 200 * 365 * 24 * time.Hour
	serving(t, s, "b")
	hold(t, s, now, "a", writeBurst)
	require.Zero(t, *slept)
}

// TestPacedWriteEndsWithItsContext: a write waiting for its turn gives up
// when its context ends, and then changes nothing; a write whose context
// has ended before its turn does not run at all.
func TestPacedWriteEndsWithItsContext(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	a, _ := s.Lookup("a")
	s.pacer.charge(a, writeDebt)
	serving(t, s, "b")
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	s.pacer.sleep = func(ctx context.Context, d time.Duration) error {
		cancel() // the client goes away while the write waits
		return sleep(ctx, d)
	}
	err := s.WriteContext(ctx, "a", func(*Realm) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)
	err = s.WriteContext(ctx, "a", func(*Realm) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)
}

// TestPacedWriteProceeds: on the real clock, a write of a realm in debt
// while another realm is served still happens: once the other realm has
// been quiet for activeWindow, if not before.
func TestPacedWriteProceeds(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	a, _ := s.Lookup("a")
	s.pacer.charge(a, writeDebt+writeBurst) // the credit starts at writeBurst
	serving(t, s, "b")
	began := s.pacer.clock()
	wrote := false
	require.NoError(t, s.Write("a", func(*Realm) error { wrote = true; return nil }))
	require.True(t, wrote)
	// A lower bound only: the pacer sleeps at least what it must.
	require.GreaterOrEqual(t, s.pacer.clock()-began, activeWindow-time.Millisecond)
}

// TestQueuedWriteEndsWithItsContext: a write queued behind another write of
// its realm gives up when its context ends, without waiting for the write
// ahead of it, and changes nothing.
func TestQueuedWriteEndsWithItsContext(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a")))
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Write("a", func(*Realm) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	ran := false
	go func() { queued <- s.WriteContext(ctx, "a", func(*Realm) error { ran = true; return nil }) }()
	cancel()
	require.ErrorIs(t, <-queued, context.Canceled, "the queued write returned while the first still held the realm")
	require.False(t, ran)
	close(release)
	require.NoError(t, <-first)
}
