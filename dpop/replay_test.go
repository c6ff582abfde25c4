package dpop

import (
	"encoding/binary"
	"errors"
	mathrand "math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestVerifyFutureDatedProofsLeaveFreshOnesIn: proofs may be dated up to
// maxSkew (10 s) ahead and are remembered until iat + maxAge, so proofs
// dated ahead look newer than any fresh one. Callers (one key each: the
// key limit does not help) send n proofs spread over ten seconds, each
// dated 10 s ahead; then another caller's fresh proof must be accepted,
// and every one of theirs must stay refused as a replay for as long as
// its iat is inside the window, also once it is no longer dated ahead.
// The cache used to keep the proofs dated ahead with the others, so n of
// them spread over 10 s filled a cache of n with proofs newer than any
// fresh one, and every fresh proof was refused with ErrReplayCacheFull (a
// 503 at the reference server) for as long as n/10 of them came a second,
// not the n a second the cache's promise implied.
func TestVerifyFutureDatedProofsLeaveFreshOnesIn(t *testing.T) {
	t.Parallel()
	const n = 100
	T := testNow
	clock := testkit.NewClock(T.Add(-10 * time.Second))
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(n), WithReplayKeyLimit(n))
	type sent struct {
		f     fixture
		proof string
	}
	var accepted []sent
	for i := range n {
		clock.Set(T.Add(-10*time.Second + time.Duration(i)*10*time.Second/n + 50*time.Millisecond))
		f := otherFixture(t)
		p := f.at(t, clock.Now().Add(DefaultMaxSkew))
		_, err := v.Verify(t.Context(), f.request(p))
		if err != nil {
			requireOnly(t, err, ErrReplayCacheFull) // the room for proofs dated ahead is full
			continue
		}
		accepted = append(accepted, sent{f, p})
	}
	require.GreaterOrEqual(t, len(accepted), n/10)

	clock.Set(T)
	honest := otherFixture(t)
	_, err := v.Verify(t.Context(), honest.request(honest.at(t, T)))
	require.NoError(t, err, "a fresh proof is refused after %d proofs spread over 10 s, each dated 10 s ahead", n)

	// Replays stay refused while each proof is dated ahead, once it is
	// not, and to the end of its window, however the cache moved it.
	for _, step := range []time.Duration{0, 5 * time.Second, 10 * time.Second, DefaultMaxAge} {
		clock.Set(T.Add(step))
		verified(t, v, honest.request(honest.at(t, clock.Now())))
		for _, s := range accepted {
			_, err = v.Verify(t.Context(), s.f.request(s.proof))
			require.Error(t, err, "a replay is never accepted (at T+%v)", step)
			require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "%v", err)
		}
	}
}

// TestVerifyProofsDatedAheadPastTheBoundCostOneKey: a proof
// dated more than a second ahead is held apart until it is dated at most a
// second ahead, within a tenth of the cache's size; past that bound the
// cache forgets the earliest due proof of the key holding the latest due
// one there (here a, the only one dated that late) and refuses, as full, that proof's replay and that key's proofs no
// newer, while another key's proofs are accepted, however many it sends
// dated ahead. Every replay stays refused, as the held proofs move in
// with the others, to the end of their window. The part used to refuse
// every further proof dated ahead once full (and a key's once it held a
// tenth of its limit).
func TestVerifyProofsDatedAheadPastTheBoundCostOneKey(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(100), WithReplayKeyLimit(100))
	verify := func(r Request) error { _, err := v.Verify(t.Context(), r); return err }
	a, b := otherFixture(t), otherFixture(t)
	ahead := testNow.Add(5 * time.Second)
	var sent []string
	for i := range 10 { // a tenth of 100: the part is full, all of it a's
		p := a.at(t, ahead)
		if i == 0 {
			p = a.at(t, ahead.Add(-time.Second)) // a's earliest due
		}
		sent = append(sent, p)
		require.NoError(t, verify(a.request(p)))
	}
	var bs []string
	for range 4 { // earlier due than a's held ones: a's go, earliest first
		p := b.at(t, ahead.Add(-time.Second))
		bs = append(bs, p)
		require.NoError(t, verify(b.request(p)), "another key's proof dated ahead, with the part full of a's")
	}
	requireOnly(t, verify(a.request(sent[0])), ErrReplayCacheFull)
	requireOnly(t, verify(b.request(bs[0])), ErrReplay)
	requireOnly(t, verify(a.request(a.at(t, ahead))), ErrReplayCacheFull) // no newer than a proof a's key lost
	require.NoError(t, verify(a.request(a.at(t, ahead.Add(time.Second)))), "a's newer proofs are taken")
	require.NoError(t, verify(b.request(b.at(t, testNow))), "b's fresh proofs are taken")

	for _, at := range []time.Time{ahead.Add(-time.Second), ahead, ahead.Add(DefaultMaxAge - time.Second)} {
		clock.Set(at) // b's, then a's, are dated at most a second ahead: in with the others
		for _, p := range sent {
			err := verify(a.request(p))
			require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "at %v: %v", at, err)
		}
		requireOnly(t, verify(b.request(bs[0])), ErrReplay)
	}
	clock.Advance(time.Second)
	requireOnly(t, verify(b.request(bs[0])), ErrIATTooOld)
}

// TestReplayCacheRefusesWhenTheClockGoesBack: calls reach the cache's
// lock in another order than they read the clock, and a wall clock steps
// back, so the cache may be given a time earlier than one it was given
// before, by a call whose iat check let a proof through at that earlier
// time. It must refuse a proof it already dropped by the later time: one
// it purged as expired (the cache used to purge by whatever time it was
// given, and took such a proof again), and one its main part forgot,
// whose replay must not go to the part for proofs dated ahead.
func TestReplayCacheRefusesWhenTheClockGoesBack(t *testing.T) {
	t.Parallel()
	a, b := newOwnerKey("a"), newOwnerKey("b")
	tests := []struct {
		name    string
		size    int
		first   time.Time // iat of the proof replayed
		drop    time.Time // iat of the proof whose recording drops it
		dropAt  time.Time // when that proof is recorded
		replay  time.Time // when the call replaying it read the clock
		wantErr error
	}{
		{
			name: "purged as expired", size: 10,
			first: testNow, drop: testNow.Add(DefaultMaxAge), dropAt: testNow.Add(DefaultMaxAge + time.Second),
			replay: testNow.Add(DefaultMaxAge), wantErr: ErrIATTooOld,
		},
		{
			name: "forgotten for a newer proof", size: 1,
			first: testNow.Add(time.Second), drop: testNow.Add(2 * time.Second), dropAt: testNow.Add(time.Second),
			replay: testNow.Add(-time.Second / 2), wantErr: ErrReplayCacheFull,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newReplayCache(tt.size, tt.size, DefaultMaxAge)
			first := newReplayKey("a", "first")
			require.NoError(t, c.add(first, a, tt.first.Add(DefaultMaxAge), testNow))
			require.NoError(t, c.add(newReplayKey("b", "drop"), b, tt.drop.Add(DefaultMaxAge), tt.dropAt))
			require.Equal(t, 1, c.len(), "the first proof is no longer held")

			// The iat check, at the time the call read, lets the replay through.
			require.False(t, tt.first.Before(tt.replay.Add(-DefaultMaxAge)))
			require.False(t, tt.first.After(tt.replay.Add(DefaultMaxSkew)))
			requireOnly(t, c.check(first, a, tt.first.Add(DefaultMaxAge), tt.replay), tt.wantErr)
			requireOnly(t, c.add(first, a, tt.first.Add(DefaultMaxAge), tt.replay), tt.wantErr)
		})
	}
}

// TestReplayCacheNeverForgetsAReplay drives caches of a few entries with
// random proofs of a few keys, dated (in whole seconds) anywhere in the
// window around a clock that moves in steps and lulls, some of them dated
// well ahead, and given to the cache by calls that may have read the
// clock a little late (as calls that reach the lock in another order than
// they read the clock, or by a wall clock wrong ahead or behind for one
// reading), so that the caches evict all the time and move
// proofs dated ahead into their main part. It replays the proofs they
// hold and, mostly, those they forgot, whenever the iat check would let
// them through, also after that move: every replay is refused, by check
// and by add. It also requires that check answers as add does, that a
// cache keeps within its bounds, and that it refuses a proof as full only
// as WithReplayCacheSize and WithReplayKeyLimit say: when it forgot, to
// make room, a proof expiring no earlier (its key's mark included), or
// when it holds n proofs (or the key's limit) dated no earlier and at
// most a second ahead of its clock; and never a proof dated further ahead
// otherwise, however many such proofs it holds.
func TestReplayCacheNeverForgetsAReplay(t *testing.T) {
	t.Parallel()
	const (
		maxAge   = DefaultMaxAge
		maxSkew  = DefaultMaxSkew
		maxStale = 3 * time.Second // how late a call may have read the clock
	)
	horizon := maxAge + aheadTolerance // a proof expiring later than the clock plus this is dated ahead
	type proof struct {
		owner   ownerKey
		expires time.Time
		ahead   bool // dated more than aheadTolerance ahead when accepted
	}
	var replays, crossReplays, aheadAccepted int
	for seed := range uint64(400) { // dropping any watermark or mark fails by seed 163
		rng := mathrand.New(mathrand.NewPCG(seed, 1))
		size := 1 + rng.IntN(6)
		if rng.IntN(2) == 0 {
			size = 7 + rng.IntN(30)
		}
		perKey := min(size, 1+rng.IntN(25))
		aheadMax := max(1, size/10)
		c := newReplayCache(size, perKey, maxAge)
		recorded := map[replayKey]proof{} // every proof accepted, until no call's iat check lets it through
		clock, latest := testNow, time.Time{}
		for i := range 400 {
			switch rng.IntN(20) {
			case 0: // a lull: part of the cache expires
				clock = clock.Add(time.Duration(rng.IntN(40)) * time.Second)
			case 1, 2, 3:
				clock = clock.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			}
			now := clock
			switch rng.IntN(40) {
			case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9:
				now = now.Add(-time.Duration(rng.Int64N(int64(maxStale))))
			case 10: // a wall clock wrong ahead for one reading
				now = now.Add(time.Duration(1+rng.IntN(3600)) * time.Second)
			case 11: // a wall clock wrong behind for one reading
				now = now.Add(-time.Duration(1+rng.IntN(120)) * time.Second)
			}
			for k, p := range recorded {
				if p.expires.Before(clock.Add(-maxStale)) {
					delete(recorded, k)
				}
			}
			owner := ownerKey(min(rng.IntN(5), rng.IntN(5))) // some keys busier
			// The proof is dated offset seconds from the call's clock.
			var offset int
			switch rng.IntN(4) {
			case 0, 1: // about now, as most callers date them
				offset = rng.IntN(5) - 2
			case 2: // anywhere
				offset = rng.IntN(72) - 61
			case 3: // well ahead
				offset = 2 + rng.IntN(9)
			}
			iat := now.Truncate(time.Second).Add(time.Duration(offset) * time.Second)
			if iat.Before(now.Add(-maxAge)) || iat.After(now.Add(maxSkew)) {
				continue // the iat check refuses it before the cache sees it
			}
			expires := iat.Add(maxAge)
			var key replayKey
			binary.BigEndian.PutUint64(key[:], uint64(i+1))
			replay, cross := false, false
			if rng.IntN(3) == 0 {
				forgotten := rng.IntN(4) > 0 // else any, held ones too
				for k, p := range recorded {
					_, kept := c.seen[k]
					if kept && forgotten || p.expires.Before(now) || p.expires.Add(-maxAge).After(now.Add(maxSkew)) {
						continue // not the kind wanted, or refused by the iat check
					}
					key, owner, expires, replay, cross = k, p.owner, p.expires, true, p.ahead && !kept
					break
				}
			}
			if now.After(latest) {
				latest = now // the latest time the cache was given
			}
			// A proof no newer than one the cache forgot to make room is
			// refused as full, whatever it holds now (its watermarks).
			forgotBefore := time.Unix(0, c.forgot)
			if o := c.owners[owner]; o != nil && o.forgot > forgotBefore.UnixNano() {
				forgotBefore = time.Unix(0, o.forgot)
			}
			if o := c.owners[owner]; o != nil && o.mark > forgotBefore.UnixNano() {
				forgotBefore = time.Unix(0, o.mark)
			}
			if m := c.marks.get(owner); m > forgotBefore.UnixNano() {
				forgotBefore = time.Unix(0, m)
			}
			checked := c.check(key, owner, expires, now)
			err := c.add(key, owner, expires, now)
			if checked != err {
				t.Fatalf("seed %d step %d: check answered %v, add %v", seed, i, checked, err)
			}
			if replay {
				replays++
				if cross {
					crossReplays++
				}
				if err != ErrReplay && err != ErrReplayCacheFull && err != ErrIATTooOld {
					t.Fatalf("seed %d step %d: a replay was answered %v", seed, i, err)
				}
				continue
			}
			dated := expires.Sub(now) > horizon // dated ahead of the call's clock
			switch {
			case err == nil:
				recorded[key] = proof{owner, expires, dated}
				if dated {
					aheadAccepted++
				}
			case errors.Is(err, ErrIATTooOld):
				require.True(t, expires.Before(latest), "seed %d step %d: refused as expired inside the window", seed, i)
			case errors.Is(err, ErrReplayCacheFull):
				if !expires.After(forgotBefore) {
					break
				}
				if dated {
					t.Fatalf("seed %d step %d: a proof dated ahead refused for room", seed, i)
				}
				all, own := 0, 0 // proofs held that leave no room for it
				for k, p := range recorded {
					e, kept := c.seen[k]
					if !kept || e.ahead || p.expires.Before(expires) {
						continue
					}
					all++
					if p.owner == owner {
						own++
					}
				}
				require.True(t, all >= size || own >= perKey,
					"seed %d step %d: refused with %d proofs as new held, %d of its key", seed, i, all, own)
			default:
				require.NoError(t, err, "seed %d step %d", seed, i)
			}
			// Plain comparisons: testify's cost a lot, this often.
			if len(c.main) > size || len(c.ahead) > aheadMax {
				t.Fatalf("seed %d step %d: %d proofs held, %d dated ahead", seed, i, len(c.main), len(c.ahead))
			}
			for _, o := range c.owners {
				if len(o.entries) > perKey {
					t.Fatalf("seed %d step %d: %d proofs of one key held", seed, i, len(o.entries))
				}
			}
		}
	}
	require.Greater(t, replays, 10_000, "the test replays forgotten proofs")
	require.Greater(t, aheadAccepted, 1_000, "the test records proofs dated ahead")
	require.Greater(t, crossReplays, 500, "the test replays proofs recorded as dated ahead and forgotten since")
	t.Logf("%d replays, %d of proofs recorded as dated ahead; %d proofs recorded as dated ahead", replays, crossReplays, aheadAccepted)
}

// TestVerifyProofDatedAheadNotLockedOutByOtherKeys: a proof may be dated
// up to maxSkew ahead (a client whose clock runs fast), and keys cost a
// caller nothing (a token endpoint binds a token to any key). One caller
// with ten keys sends, to a Verifier with the defaults' bounds scaled down
// tenfold, 1,100 proofs dated 10 s ahead (11,000 with the defaults);
// another key's proofs dated 2 s ahead must still be accepted,
// (the caller's own may be refused as full), and every one of the
// caller's proofs stays refused as a replay. The
// cache used to hold proofs dated ahead in a part of their own that
// refused every further one once it held 10,000 (1,000 of one key), so
// such a caller, keeping it full with some 1,100 proofs a second, locked
// out every client whose clock ran over a second fast.
func TestVerifyProofDatedAheadNotLockedOutByOtherKeys(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	// The defaults scaled down tenfold (the room for proofs dated ahead is
	// a tenth of the cache, 1,000 here; 10,000 by default): the same
	// bounds in the same proportions, at a tenth of the signatures.
	const cacheSize, keyLimit = DefaultReplayCacheSize / 10, DefaultReplayKeyLimit / 10
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(cacheSize), WithReplayKeyLimit(keyLimit))
	const url = "https://rs.example/api"
	ahead := func(d time.Duration) func() time.Time { return func() time.Time { return clock.Now().Add(d) } }
	var sent []string
	for range 10 {
		key := newKey(t)
		s := key.WithClock(ahead(DefaultMaxSkew))
		for i := range keyLimit/10 + 10 {
			p := proofOf(t, s, "GET", url, "", "")
			_, err := v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: url})
			if err != nil {
				// Past the part's bound, the key holding the latest due proof pays.
				requireOnly(t, err, ErrReplayCacheFull)
				continue
			}
			if i%10 == 0 {
				sent = append(sent, p)
			}
		}
	}
	honest := newKey(t)
	s := honest.WithClock(ahead(2 * time.Second))
	for i := range 3 {
		p := proofOf(t, s, "GET", url, "", "")
		testkit.Must(v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: url}))(t, "proof %d of another key dated 2 s ahead (10 s are allowed)", i)
	}
	for _, step := range []time.Duration{0, 9 * time.Second, DefaultMaxAge} {
		clock.Set(testNow.Add(step))
		for _, p := range sent {
			_, err := v.Verify(t.Context(), Request{Proofs: []string{p}, Method: "GET", URL: url})
			require.Error(t, err, "a replay is never accepted (at +%v)", step)
			require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "%v", err)
		}
	}
}

// TestVerifyProofDatedAheadNotLockedOutByKeysOfOneProofEach: keys cost a
// caller nothing, so a caller can hold the room for proofs dated ahead
// with one proof of each of many keys, dated 10 s ahead. A client whose
// clock runs 2 s fast, sending several proofs in one second, must have
// them all accepted: the cache makes room at the cost of the key holding
// the latest due proof (of those as late, the one holding the most), not
// of the one holding the most, which that client, alone with more than
// one proof, would be.
func TestVerifyProofDatedAheadNotLockedOutByKeysOfOneProofEach(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(testNow)
	v := mustVerifier(t, WithClock(clock.Now), WithReplayCacheSize(100))
	verify := func(r Request) error { _, err := v.Verify(t.Context(), r); return err }
	var sent []Request
	for range 30 { // three times the room (a tenth of 100)
		f := otherFixture(t)
		r := f.request(f.at(t, testNow.Add(DefaultMaxSkew)))
		require.NoError(t, verify(r))
		sent = append(sent, r)
	}
	honest := otherFixture(t)
	for i := range 5 {
		require.NoError(t, verify(honest.request(honest.at(t, testNow.Add(2*time.Second)))),
			"proof %d of a client 2 s fast, in one second", i)
	}
	for _, r := range sent {
		err := verify(r)
		require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "a replay: %v", err)
	}
}

// TestReplayCacheMemoryFollowsWhatItHolds: a cache's memory follows the
// proofs it holds now, not the most any key ever held. Keys each send a
// burst of proofs, most of which soon expire, and keep one: the cache
// ends holding one proof of each key, and must take about what a cache
// holding that many proofs takes, well under what a full one takes. A
// key's heaps used to keep the room of their largest burst for as long
// as the key held one proof, so a caller rotating keys (a burst of the
// key limit each, then one proof a minute) grew the cache without bound:
// 500 keys holding one proof each took 30 MB at the defaults.
func TestReplayCacheMemoryFollowsWhatItHolds(t *testing.T) {
	// Not parallel: it measures the heap.
	const (
		keys  = 200
		burst = 2000
		size  = 3000 // holds a burst and one proof of every key
	)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	c := newReplayCache(size, burst, DefaultMaxAge)
	var n uint64
	for k := range keys {
		now := testNow.Add(time.Duration(k) * 250 * time.Millisecond)
		for i := range burst {
			n++
			var key replayKey
			binary.BigEndian.PutUint64(key[:], n)
			expires := now.Add(100 * time.Millisecond) // gone by the next key's burst
			if i == burst-1 {
				expires = now.Add(DefaultMaxAge) // kept to the end
			}
			require.NoError(t, c.add(key, ownerKey(k+1), expires, now))
		}
	}
	end := testNow.Add(keys * 250 * time.Millisecond) // the last burst's short-lived proofs expired
	require.NoError(t, c.check(replayKey{}, ownerKey(keys+1), end.Add(DefaultMaxAge), end))
	require.Equal(t, keys, c.len(), "one proof of each key held")

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// A full cache of size proofs takes about 130 bytes a proof
	// (WithReplayCacheSize); the old heaps kept 16 KB for each key.
	const full = size * 130
	t.Logf("%d proofs of %d keys held in %d bytes", keys, keys, grown)
	require.Less(t, grown, int64(full), "a cache holding %d proofs of %d keys takes %d bytes; a full one of %d about %d", keys, keys, grown, size, full)
}

// TestReplayCacheFreshProofsNotRefusedForAFloodDatedAhead: keys cost a
// caller nothing, so a caller can send each proof with a fresh key, dated
// 10 s ahead: past the room for proofs dated ahead, each is forgotten and
// its key's mark kept in the table of marks. Fresh proofs of other keys,
// dated now, must all be accepted while the flood goes on, and the
// flood's proofs stay refused to the end of their window. Here the cache
// holds 2,048 proofs and the flood is 150 proofs a second (the cache is
// sized for 29 a second; at the defaults this is some 7,300 a second,
// under the 20,000 a second WithReplayCacheSize says reach no fresh
// proof). The table used to let more than four keys with marks in force
// in one bucket share a mark, so at this rate most fresh proofs were
// refused with ErrReplayCacheFull (at the defaults: 5 % of them at 4,000
// proofs a second, 44 % at 8,000).
func TestReplayCacheFreshProofsNotRefusedForAFloodDatedAhead(t *testing.T) {
	t.Parallel()
	const (
		size    = 2048
		tick    = 20 * time.Millisecond
		perTick = 3    // 150 proofs a second, each of a fresh key, dated 10 s ahead
		ticks   = 4000 // 80 s
	)
	c := newReplayCache(size, DefaultReplayKeyLimit, DefaultMaxAge)
	var n uint64
	next := func() (replayKey, ownerKey) {
		n++
		var k replayKey
		binary.BigEndian.PutUint64(k[:], n)
		return k, ownerKey(n)
	}
	type sent struct {
		key     replayKey
		owner   ownerKey
		expires time.Time
	}
	var flood []sent
	refused, fresh := 0, 0
	for i := range ticks {
		now := testNow.Add(time.Duration(i) * tick)
		for j := range perTick {
			k, o := next()
			exp := now.Truncate(time.Second).Add(DefaultMaxSkew + DefaultMaxAge)
			err := c.add(k, o, exp, now)
			if err != nil {
				requireOnly(t, err, ErrReplayCacheFull)
			} else if i%25 == 0 && j == 0 {
				flood = append(flood, sent{k, o, exp})
			}
		}
		if i >= ticks/4 { // fresh proofs of other keys, dated now, 50 a second, once the flood fills the table
			k, o := next()
			fresh++
			if err := c.add(k, o, now.Truncate(time.Second).Add(DefaultMaxAge), now); err != nil {
				requireOnly(t, err, ErrReplayCacheFull)
				refused++
			}
		}
	}
	require.Zero(t, refused, "fresh proofs of keys that sent no other refused for the flood's, of %d", fresh)

	// The flood's proofs still in their window, while dated ahead, and
	// once not, to the end of it.
	end := testNow.Add(ticks * tick)
	checked := 0
	for _, s := range flood {
		if s.expires.Before(end) {
			continue
		}
		checked++
		for _, at := range []time.Time{end, s.expires.Add(-DefaultMaxAge), s.expires} {
			if at.Before(end) {
				continue
			}
			err := c.check(s.key, s.owner, s.expires, at)
			require.True(t, errors.Is(err, ErrReplay) || errors.Is(err, ErrReplayCacheFull), "a replay of the flood's at %v: %v", at.Sub(testNow), err)
		}
	}
	require.NotZero(t, checked)
}

// TestReplayCacheNeverForgetsAReplayOfManyKeys: like
// TestReplayCacheNeverForgetsAReplay, with many keys and a table of
// marks of one or two buckets, growing or not, so that marks take ways
// of keys with marks in force, buckets split, and shared marks are raised
// all the time, while keys are dropped and come back and the clock jumps
// back and ahead: every replay of an accepted proof that the iat check
// lets through is refused.
func TestReplayCacheNeverForgetsAReplayOfManyKeys(t *testing.T) {
	t.Parallel()
	const maxAge, maxSkew = DefaultMaxAge, DefaultMaxSkew
	type proof struct {
		owner   ownerKey
		expires time.Time
	}
	replays, accepted := 0, 0
	for seed := range uint64(400) { // keys sharing a mark without raising it fail at seed 154
		rng := mathrand.New(mathrand.NewPCG(seed, 77))
		size := 1 + rng.IntN(40)
		perKey := min(size, 1+rng.IntN(10))
		c := newReplayCache(size, perKey, maxAge)
		// One or two buckets of marks, that grow or not.
		c.marks.n = 1 << rng.IntN(2)
		c.marks.base, c.marks.limit = c.marks.n, c.marks.n
		if rng.IntN(2) == 0 {
			c.marks.limit *= markGrowth
		}
		nkeys := 2 + rng.IntN(60)
		recorded := map[replayKey]proof{}
		clock := testNow
		var order []replayKey
		for i := range 600 {
			switch rng.IntN(25) {
			case 0:
				clock = clock.Add(time.Duration(rng.IntN(80)) * time.Second)
			case 1, 2, 3, 4:
				clock = clock.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			}
			now := clock
			switch rng.IntN(30) {
			case 0, 1, 2, 3, 4, 5:
				now = now.Add(-time.Duration(rng.Int64N(int64(3 * time.Second))))
			case 6:
				now = now.Add(time.Duration(1+rng.IntN(100)) * time.Second)
			case 7:
				now = now.Add(-time.Duration(1+rng.IntN(100)) * time.Second)
			}
			var key replayKey
			var owner ownerKey
			var exp time.Time
			isReplay := false
			if len(order) > 0 && rng.IntN(3) == 0 {
				for range 8 {
					k := order[rng.IntN(len(order))]
					p, ok := recorded[k]
					if !ok {
						continue
					}
					iat := p.expires.Add(-maxAge)
					if iat.Before(now.Add(-maxAge)) || iat.After(now.Add(maxSkew)) {
						continue
					}
					key, owner, exp, isReplay = k, p.owner, p.expires, true
					break
				}
			}
			if !isReplay {
				owner = ownerKey(1 + rng.IntN(nkeys))
				var off time.Duration
				switch rng.IntN(3) {
				case 0:
					off = time.Duration(rng.IntN(5)-2) * time.Second
				case 1:
					off = time.Duration(2+rng.IntN(9)) * time.Second
				case 2:
					off = time.Duration(rng.IntN(72)-61) * time.Second
				}
				iat := now.Truncate(time.Second).Add(off)
				if iat.Before(now.Add(-maxAge)) || iat.After(now.Add(maxSkew)) {
					continue
				}
				binary.BigEndian.PutUint64(key[:], seed<<20|uint64(i+1))
				exp = iat.Add(maxAge)
			}
			var err error
			if rng.IntN(2) == 0 {
				err = c.check(key, owner, exp, now)
				if err == nil {
					err = c.add(key, owner, exp, now)
				}
			} else {
				err = c.add(key, owner, exp, now)
			}
			if isReplay {
				replays++
				if err == nil {
					t.Fatalf("seed %d step %d (size %d perKey %d keys %d buckets %d): a replay of a proof of key %d expiring %v accepted at %v",
						seed, i, size, perKey, nkeys, c.marks.n, owner, exp.Sub(testNow), now.Sub(testNow))
				}
				continue
			}
			if err == nil {
				accepted++
				recorded[key] = proof{owner, exp}
				order = append(order, key)
			}
		}
	}
	require.Greater(t, replays, 20_000, "the test replays proofs")
	t.Logf("%d replays refused, %d proofs accepted", replays, accepted)
}

// TestReplayCacheAheadRoomCostsTheKeyHoldingTheLatestDue: past the room
// for proofs dated ahead, the cache forgets the earliest due proof of the
// key holding the latest due one, not of the key holding the most, as
// WithReplayCacheSize states (and WithReplayKeyLimit used to contradict):
// a holds 9 of the 10 places with proofs dated 3 s ahead, b one dated
// 10 s ahead; a third key's proof makes b's go, and a keeps all of its.
func TestReplayCacheAheadRoomCostsTheKeyHoldingTheLatestDue(t *testing.T) {
	t.Parallel()
	c := newReplayCache(100, 100, DefaultMaxAge)
	a, b := ownerKey(1), ownerKey(2)
	key := func(n uint64) replayKey {
		var k replayKey
		binary.BigEndian.PutUint64(k[:], n)
		return k
	}
	for i := range 9 {
		require.NoError(t, c.add(key(uint64(i+1)), a, testNow.Add(3*time.Second+DefaultMaxAge), testNow))
	}
	late := testNow.Add(DefaultMaxSkew + DefaultMaxAge)
	require.NoError(t, c.add(key(100), b, late, testNow))
	require.NoError(t, c.add(key(200), ownerKey(3), testNow.Add(2*time.Second+DefaultMaxAge), testNow))

	require.Len(t, c.owners[a].early, 9, "the key holding the most keeps all of its")
	requireOnly(t, c.check(key(100), b, late, testNow), ErrReplayCacheFull) // forgotten, refused by b's mark
	requireOnly(t, c.check(key(1), a, testNow.Add(3*time.Second+DefaultMaxAge), testNow), ErrReplay)
}
