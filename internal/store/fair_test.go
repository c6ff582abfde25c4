package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pacedStore returns a store of realms a and b whose pacer runs on a clock
// the test moves: sleeping moves it, and so does a write that "takes" a
// duration (hold).
func pacedStore(t *testing.T) (s *Store, now *time.Duration, slept *time.Duration) {
	t.Helper()
	s = New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	now, slept = new(time.Duration), new(time.Duration)
	*now = time.Hour // far from 0, so that no realm looks recently seen
	s.pacer.clock = func() time.Duration { return *now }
	s.pacer.sleep = func(d time.Duration) { *now += d; *slept += d }
	s.pacer.share = 0.1
	return s, now, slept
}

// hold writes realm as a write that holds its lock for d.
func hold(t *testing.T, s *Store, now *time.Duration, realm string, d time.Duration) {
	t.Helper()
	require.NoError(t, s.Write(realm, func(*Realm) error { *now += d; return nil }))
}

// TestRealmAloneWritesUnpaced: however long a realm's writes hold its lock,
// with no other realm served its next write does not wait.
func TestRealmAloneWritesUnpaced(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)
	for range 10 {
		hold(t, s, now, "a", time.Second)
	}
	require.Zero(t, *slept)
	// b was last served longer ago than activeWindow.
	require.NoError(t, s.Read("b", func(*Realm) error { return nil }))
	*now += activeWindow
	hold(t, s, now, "a", time.Second)
	require.Zero(t, *slept)
}

// TestWritesPacedWhileAnotherRealmIsServed: while b is read, a's writes may
// hold a's lock for writeBurst at once and then for the pacer's share of
// the wall clock; the debt is paid by waiting before the lock, never by a
// read; and once b falls quiet a writes at full speed again.
func TestWritesPacedWhileAnotherRealmIsServed(t *testing.T) {
	t.Parallel()
	s, now, slept := pacedStore(t)
	readB := func() { require.NoError(t, s.Read("b", func(*Realm) error { return nil })) }

	readB()
	hold(t, s, now, "a", writeBurst) // the burst: no wait
	require.Zero(t, *slept)
	readB()
	hold(t, s, now, "a", time.Second) // starts at credit 0: no wait, but a debt
	require.Zero(t, *slept)

	// The debt is capped at writeBurst, less what the second elapsed
	// earned; paying it at share 0.1 takes ten times as long.
	readB()
	start := *now
	hold(t, s, now, "a", time.Millisecond)
	require.Equal(t, 10*writeBurst, *slept-time.Nanosecond, "waited")
	require.Equal(t, start+*slept+time.Millisecond, *now)

	// Reads of a never wait, in debt or not.
	readB()
	*slept = 0
	require.NoError(t, s.Read("a", func(*Realm) error { return nil }))
	require.Zero(t, *slept)

	// Over many writes, a holds its lock for its share of the time.
	var held time.Duration
	begin := *now
	for range 100 {
		readB()
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

// TestPacerTracksTheTwoLatestRealms: a realm is alone only when neither
// of the two realms used last is another realm seen within activeWindow,
// whatever order realms were used in.
func TestPacerTracksTheTwoLatestRealms(t *testing.T) {
	t.Parallel()
	s, now, _ := pacedStore(t)
	require.NoError(t, s.Install(keyedRealm(t, "c")))
	r := map[string]*Realm{}
	for _, name := range []string{"a", "b", "c"} {
		r[name], _ = s.Lookup(name)
	}
	use := func(name string) { require.NoError(t, s.Read(name, func(*Realm) error { return nil })) }
	use("a")
	require.False(t, s.pacer.others(r["a"], *now))
	use("b")
	use("c")
	use("a")
	require.True(t, s.pacer.others(r["a"], *now), "c was used just before a")
	use("a")
	use("a")
	require.True(t, s.pacer.others(r["a"], *now), "a's own uses do not push c out")
	*now += activeWindow
	require.False(t, s.pacer.others(r["a"], *now))
}

// TestPacedWriteProceeds: on the real clock, a write of a realm in the
// deepest debt, while another realm is served, still happens, after it
// has waited for the debt to be paid.
func TestPacedWriteProceeds(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	a, _ := s.Lookup("a")
	require.NoError(t, s.Read("a", func(*Realm) error { return nil }))
	s.pacer.charge(a, 2*writeBurst)
	require.NoError(t, s.Read("b", func(*Realm) error { return nil }))
	debt := time.Duration(float64(writeBurst) / s.pacer.share)
	began := s.pacer.clock()
	wrote := false
	require.NoError(t, s.Write("a", func(*Realm) error { wrote = true; return nil }))
	require.True(t, wrote)
	// A lower bound only: the pacer sleeps at least what it must. The
	// debt earns credit while the test runs, hence the millisecond.
	require.GreaterOrEqual(t, s.pacer.clock()-began, debt-time.Millisecond)
}
