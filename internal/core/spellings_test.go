package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// checkSpellings fails unless every list of an identity's spellings is
// whole both ways (a head without prev, each next's prev its node, each
// node indexed under its string and its identity) and every indexed token
// is in its identity's list once, found by its own digest when the index
// keeps those.
func checkSpellings(t *testing.T, x *digestIndex) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	listed := 0
	for identity, head := range x.byIdentity {
		require.Nil(t, head.prev, "the head of a list has a prev")
		for sp := head; sp != nil; sp = sp.next {
			listed++
			require.Equal(t, identity, sp.identity)
			require.Same(t, sp, x.ids[sp.token], "a listed spelling is not indexed by its string")
			if sp.next != nil {
				require.Same(t, sp, sp.next.prev, "a next's prev is not its node")
			}
			if x.byToken != nil {
				require.Same(t, sp, x.byToken[sp.own])
			}
			require.LessOrEqual(t, listed, len(x.ids), "a list runs in a circle")
		}
	}
	require.Equal(t, len(x.ids), listed, "an indexed token is in no list")
	if x.byToken != nil {
		require.Len(t, x.byToken, len(x.ids))
	}
}

// TestSpellingListsStayWholeWhateverTakesThemApart: a caller can make
// any number of spellings of one identity (any signature), so the index
// takes one out of its identity's list in O(1), through its prev and next
// (a-fix9b: a walk from the head made pruning 2 x CacheSize spellings of
// one identity quadratic, under the lock every request's writer takes).
// Stores, requests that store nothing, retirements by identity and by a
// token's own digest, and the pruning they set off, in random order,
// leave every list whole.
func TestSpellingListsStayWholeWhateverTakesThemApart(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			d := indexed(t, 16)
			tok := func() string {
				return fmt.Sprintf("eyJhbGciOiJFUzI1NiJ9.e%d.sig%d", rng.IntN(3), rng.IntN(40))
			}
			for range 600 {
				switch rng.IntN(5) {
				case 0, 1:
					store(d, bearer(tok()), "k")
				case 2: // sent, nothing stored: pruned later
					d.writer(bearer(tok())).Close()
				case 3:
					d.retire(transport.Ident{}, identityDigest(tok()), allSchemes)
				case 4:
					purgeDigest(d, tokenDigest(tok()))
				}
				checkSpellings(t, d.digests)
			}
		})
	}
}

// BenchmarkPruneSpellingsOfOneIdentity times the add that prunes 2 x size
// spellings sent with nothing stored, all of one identity (what one caller
// can send for free while the gateway is down) against distinct
// identities: the ratio stays near 1 (it was 17 at this size and about
// 125 at the default, 10,000, when a spelling was unlinked by a walk of
// its list).
func BenchmarkPruneSpellingsOfOneIdentity(b *testing.B) {
	const size = 2000
	for _, bc := range []struct {
		name string
		tok  func(i int) string
	}{
		{"one-identity", func(i int) string { return fmt.Sprintf("eyJhbGciOiJFUzI1NiJ9.e30.sig%08d", i) }},
		{"distinct", func(i int) string { return fmt.Sprintf("eyJhbGciOiJFUzI1NiJ9.e%08d.sig", i) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				d, err := newDecisions(&Settings{CacheSize: size, CacheMaxBytes: DefaultCacheMaxBytes, AllowTTL: time.Hour, DenyTTL: time.Hour})
				require.NoError(b, err)
				for i := range 2 * size {
					d.writer(bearer(bc.tok(i))).Close()
				}
				b.StartTimer()
				d.writer(bearer(bc.tok(-1))).Close() // this add prunes
			}
		})
	}
}
