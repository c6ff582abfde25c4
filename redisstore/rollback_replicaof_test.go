package redisstore

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// syncedFrom makes c a replica of primary, waits until its full sync is
// done and its dataset holds key, then (when detach) promotes it again.
func syncedFrom(t *testing.T, c *redis.Client, primary, key string, detach bool) {
	t.Helper()
	ctx := t.Context()
	host, port, err := net.SplitHostPort(primary)
	require.NoError(t, err)
	require.NoError(t, c.Do(ctx, "REPLICAOF", host, port).Err())
	require.Eventually(t, func() bool {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		n, err := c.Exists(ctx, key).Result()
		return err == nil && n == 1
	}, 20*time.Second, 20*time.Millisecond)
	if detach {
		require.NoError(t, c.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	}
}

// TestAKeyspaceSyncedFromAnOlderCopyBeginsAgain: a-fix12 F1. A full sync replaces a
// server's whole dataset while its run_id, evicted_keys and the
// commandstats the marker is bound to (SWAPDB, MOVE, DEBUG, CONFIG
// RESETSTAT) all stand. Primary A's keyspace is copied to B (B a replica of
// A, then promoted: a backup replica, a staging copy). Bob's token is
// revoked at replica A of the reference server. A is then made a replica
// of B and promoted back (REPLICAOF B, REPLICAOF NO ONE: a restore from the
// backup replica, a FAILOVER to B and back with B detached meanwhile): A's
// dataset is B's, the marker "<ms>@<A's run_id>@<hw>" with it, and the
// revocation is gone. The store still vouched, and B served the revoked
// token (200). Now every write raises the marker's generation, and a
// marker below the highest generation a process has seen begins the
// keyspace again: B refuses.
func TestAKeyspaceSyncedFromAnOlderCopyBeginsAgain(t *testing.T) {
	ctx := t.Context()
	rs := redistest.Start(t, "--maxmemory-policy", "noeviction")
	copyOf := redistest.Start(t, "--maxmemory-policy", "noeviction")
	c := rs.Client()
	store := NewReplayStore(c, "t:")
	settled(t, c, store.prefix)
	_, err := store.Recorded(ctx, "warm", time.Now())
	require.NoError(t, err)
	a, b := replicaOn(t, store, "keyloss-seed-0123456789abcdef"), replicaOn(t, store, "keyloss-seed-0123456789abcdef")

	// the copy: B holds A's keyspace, the marker bound to A's run with it
	syncedFrom(t, copyOf.Client(), rs.Addr(), "t:"+SinceKey, true)

	tok := tokenAt(t, a, "acme", nil, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob"}})
	status, body := decideAt(t, b, tok)
	require.Equal(t, http.StatusOK, status, "bob may read orders: %s", body)
	status, body = revokeAt(t, a, tok)
	require.Equal(t, http.StatusOK, status, body)
	status, body = decideAt(t, b, tok)
	require.Equal(t, http.StatusUnauthorized, status, "B refuses the revoked token: %s", body)

	// A resyncs from the copy and is promoted back: same run_id, no
	// SWAPDB/MOVE/DEBUG/RESETSTAT, the revocation's record gone
	syncedFrom(t, c, copyOf.Addr(), "t:"+SinceKey, true)
	require.Eventually(t, func() bool {
		return c.Set(ctx, "t:probe-writable", "1", time.Second).Err() == nil
	}, 10*time.Second, 20*time.Millisecond)

	status, body = decideAt(t, b, tok)
	require.NotEqual(t, http.StatusOK, status, "B serves the token A revoked, after A resynced from an older copy and was promoted back: %s", body)
	_, err = store.Recorded(ctx, "revoked", time.Now().Add(-time.Minute))
	require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the keyspace cannot vouch for what came before the full sync")
}
