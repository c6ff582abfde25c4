package core

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// indexed returns a decision cache of size entries with a digest index,
// as a client with an Invalidator has.
func indexed(t testing.TB, size int) *decisions {
	d, err := newDecisions(&Settings{CacheSize: size, CacheMaxBytes: 1 << 40, AllowTTL: time.Hour, DenyTTL: time.Hour})
	require.NoError(t, err)
	d.digests = newDigestIndex(size, math.MaxInt64)
	d.digests.hearEarlierVersions()
	return d
}

func bearer(token string) transport.Ident {
	return transport.Ident{Scheme: transport.SchemeBearer, Token: token}
}

// purgeDigest drops the decisions of the tokens of digest dg, as
// Core.purgeDigest does.
func purgeDigest(d *decisions, dg [digestBytes]byte) {
	if identity, ok := d.tokenIdentity(dg); ok {
		d.retire(transport.Ident{}, identity, allSchemes)
	}
}

// store caches one GRANT of token under key.
func store(d *decisions, id transport.Ident, key string) {
	w := d.writer(id)
	w.Add(key, true)
	w.Close()
}

// TestTokenDigestIsTheWireFormat: every replica names a token by the
// SHA-256 of the version 1 domain and the token, however long the token
// (those up to 2 KiB are hashed from the stack, longer ones through a
// hasher: both must agree with replicas of other versions), and a short
// one's digest, made for every request of a per-call token with an
// Invalidator, allocates nothing.
func TestTokenDigestIsTheWireFormat(t *testing.T) {
	for _, n := range []int{0, 1, 2047, 2048, 2049, 9000, 20000} {
		tok := strings.Repeat("t", n)
		require.Equal(t, sha256.Sum256([]byte("orgauthz/invalidation/v1\x00"+tok)), tokenDigest(tok), "%d bytes", n)
	}
	jwt := strings.Repeat("j", 1200)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = tokenDigest(jwt) }))
}

// TestDigestPurgeFindsEveryScheme: a purge by digest drops the token's
// decisions under both schemes and no other token's.
func TestDigestPurgeFindsEveryScheme(t *testing.T) {
	d := indexed(t, 100)
	dp := transport.Ident{Scheme: transport.SchemeDPoP, Token: "tok"}
	store(d, bearer("tok"), "k")
	store(d, dp, "k")
	store(d, bearer("other"), "k")
	purgeDigest(d, tokenDigest("tok"))
	for id, want := range map[transport.Ident]bool{bearer("tok"): false, dp: false, bearer("other"): true} {
		_, ok := d.lru.Get(id, "k")
		require.Equal(t, want, ok, "%v", id)
	}
	store(d, bearer("tok"), "k") // indexed again once cached again
	purgeDigest(d, tokenDigest("tok"))
	_, ok := d.lru.Get(bearer("tok"), "k")
	require.False(t, ok)
}

// TestDigestIndexStaysInProportionToTheCache: tokens whose decisions the
// cache evicted leave the index, which stays within twice the cache's
// entries, while those still cached stay findable.
func TestDigestIndexStaysInProportionToTheCache(t *testing.T) {
	const size = 50
	d := indexed(t, size)
	for i := range 20 * size {
		store(d, bearer(fmt.Sprint("token-", i)), "k")
	}
	require.LessOrEqual(t, len(d.digests.ids), 2*size)
	last := fmt.Sprint("token-", 20*size-1)
	purgeDigest(d, tokenDigest(last))
	_, ok := d.lru.Get(bearer(last), "k")
	require.False(t, ok, "a cached token was pruned from the index")
}

// BenchmarkDigestPurge applies a purge from another replica to caches of
// ever more tokens: its cost must not grow with them (a purge that hashed
// every cached token made a flood of purges a denial of service).
func BenchmarkDigestPurge(b *testing.B) {
	for _, tokens := range []int{10, 10_000} {
		b.Run(fmt.Sprint("tokens=", tokens), func(b *testing.B) {
			d := indexed(b, tokens+1)
			for i := range tokens {
				store(d, bearer(fmt.Sprintf("%01000d", i)), "k")
			}
			dg := tokenDigest("absent")
			b.ReportAllocs()
			for b.Loop() {
				purgeDigest(d, dg)
			}
		})
	}
}
