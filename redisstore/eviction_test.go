package redisstore

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// infoField returns the integer field name of INFO section.
func infoField(t *testing.T, c *redis.Client, section, name string) int {
	t.Helper()
	info := testkit.Must(c.Info(t.Context(), section).Result())(t)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return testkit.Must(strconv.Atoi(v))(t)
		}
	}
	t.Fatalf("INFO %s has no %s", section, name)
	return 0
}

// fillUntilEvicted writes keys with an expiry straight to c (what every
// accepted DPoP proof is) until Redis evicted some, with maxmemory set
// just above what it uses now, and then as many again as the memory
// holds, so that records written before the fillers are evicted too.
func fillUntilEvicted(t *testing.T, c *redis.Client) {
	t.Helper()
	before := infoField(t, c, "stats", "evicted_keys")
	used := infoField(t, c, "memory", "used_memory")
	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory", strconv.Itoa(used+512<<10)).Err())
	for i := 0; i < 100_000 && infoField(t, c, "stats", "evicted_keys") == before; i += 1000 {
		pipe := c.Pipeline()
		for j := i; j < i+1000; j++ {
			pipe.Set(t.Context(), "filler:"+strconv.Itoa(j)+strings.Repeat("x", 64), "1", time.Minute)
		}
		_, _ = pipe.Exec(t.Context())
	}
	require.Greater(t, infoField(t, c, "stats", "evicted_keys"), before, "Redis evicted nothing")
	pipe := c.Pipeline() // as many again: the least recently used go too
	for j := range 20_000 {
		pipe.Set(t.Context(), "filler:more:"+strconv.Itoa(j)+strings.Repeat("x", 64), "1", time.Minute)
	}
	_, _ = pipe.Exec(t.Context())
}

// TestReplayStoreRefusesARedisThatMayEvict: a-rep10 F3. Two reference
// server replicas share a Redis whose maxmemory-policy evicts keys
// (volatile-lru, ElastiCache's default; allkeys-lru, where the marker
// itself can go). alice's token is revoked at A; proof records fill the
// memory and Redis evicts the revocation's record while the marker stays;
// B served the revoked token again (200). The store now refuses every call
// on such a Redis, with an error that names the fix, and B answers 503:
// fail closed, never the revoked token served.
func TestReplayStoreRefusesARedisThatMayEvict(t *testing.T) {
	for _, policy := range []string{"volatile-lru", "allkeys-lru"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			rs := redistest.Start(t, "--maxmemory-policy", policy)
			c := rs.Client()
			store := NewReplayStore(c, "t:")
			settled(t, c, store.prefix)
			const seed = "rep10-eviction-seed-0123456789"
			a, b := replicaOn(t, store, seed), replicaOn(t, store, seed)
			// and the binary, on its own client of the same script
			settled(t, c, "orgauthz:mockserver:dpop:")
			bin := startMockserver(t, "-fixture", "../examples/fixtures/acme.json", "-key-seed", seed, "-redis", rs.URL())

			// maxmemory 0: nothing is evicted whatever the policy.
			tok := aliceToken(t, a)
			status, body := decideAt(t, b, tok)
			require.Equal(t, http.StatusOK, status, body)
			status, body = revokeAt(t, a, tok)
			require.Equal(t, http.StatusOK, status, body)
			status, body = decideAt(t, b, tok)
			require.Equal(t, http.StatusUnauthorized, status, "B refuses the revoked token: %s", body)
			other := aliceToken(t, a)
			status, body = decideAt(t, bin, other)
			require.Equal(t, http.StatusOK, status, body)

			fillUntilEvicted(t, c)
			status, body = decideAt(t, b, tok)
			require.Equal(t, http.StatusServiceUnavailable, status, "a Redis that may have evicted the revocation vouches for nothing: %s", body)
			status, body = decideAt(t, bin, other)
			require.Equal(t, http.StatusServiceUnavailable, status, "the binary refuses it too: %s", body)

			_, err := store.Remember(t.Context(), "proof", time.Now().Add(time.Minute))
			require.ErrorContains(t, err, "maxmemory-policy noeviction")
			_, err = store.Recorded(t.Context(), "proof", time.Now())
			require.ErrorContains(t, err, "maxmemory-policy noeviction")
			_, err = store.RecordOnce(t.Context(), "once", "w", time.Now().Add(time.Minute), time.Now())
			require.ErrorContains(t, err, "maxmemory-policy noeviction")

			v := testkit.Must(dpop.NewVerifier(dpop.WithReplayStore(store)))(t)
			signer := testkit.Must(dpop.GenerateKey())(t)
			err = v.RecordContext(t.Context(), &dpop.Result{Thumbprint: signer.Thumbprint(),
				Claims: dpop.Claims{ID: "jti-evict", IssuedAt: time.Now()}})
			require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "a Verifier on the store cannot vouch for a proof")
		})
	}
}

// TestReplayStoreOnNoevictionRedisWithMaxmemoryWorks: maxmemory set with
// maxmemory-policy noeviction is a Redis that never evicts (it refuses
// writes when full): the store runs on it, and replicas share a
// revocation through it.
func TestReplayStoreOnNoevictionRedisWithMaxmemoryWorks(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction").Client()
	store := NewReplayStore(c, "t:")
	settled(t, c, store.prefix)

	first := testkit.Must(store.Remember(t.Context(), "proof", time.Now().Add(time.Minute)))(t)
	require.True(t, first)
	first = testkit.Must(store.Remember(t.Context(), "proof", time.Now().Add(time.Minute)))(t)
	require.False(t, first, "a replayed proof is refused")

	const seed = "rep10-noeviction-seed-012345678"
	a, b := replicaOn(t, store, seed), replicaOn(t, store, seed)
	tok := aliceToken(t, a)
	status, body := decideAt(t, b, tok)
	require.Equal(t, http.StatusOK, status, body)
	status, body = revokeAt(t, a, tok)
	require.Equal(t, http.StatusOK, status, body)
	status, body = decideAt(t, b, tok)
	require.Equal(t, http.StatusUnauthorized, status, "B refuses the token A revoked: %s", body)
}

// TestReplayStoreEvictionsBetweenCallsBeginTheKeyspace: an operator
// switches the policy to an evicting one and back between two calls of
// the store; Redis evicted keys meanwhile, some of them records. No call
// saw the policy, but INFO stats' evicted_keys rose: the keyspace begins
// again, as after a restart, and nothing from before is vouched for.
func TestReplayStoreEvictionsBetweenCallsBeginTheKeyspace(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, "--maxmemory-policy", "noeviction").Client()
	store := NewReplayStore(c, "t:")
	settled(t, c, store.prefix)
	issued := time.Now().Add(-time.Minute) // a token of a minute ago
	_, err := store.Recorded(t.Context(), "revoked", issued)
	require.NoError(t, err, "the keyspace vouches for it")

	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory-policy", "volatile-lru").Err())
	fillUntilEvicted(t, c)
	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory-policy", "noeviction").Err())
	require.NoError(t, c.ConfigSet(t.Context(), "maxmemory", "0").Err()) // room again

	_, err = store.Recorded(t.Context(), "revoked", issued)
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "keys were evicted: the keyspace cannot vouch for what came before")
	_, err = store.Recorded(t.Context(), "revoked", issued)
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "and it stays new for what came before it")
}
