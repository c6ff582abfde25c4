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
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAKeyspaceThatLostKeysBeginsAgain: the marker vouched for a keyspace
// while the server's run_id and evicted_keys stood, but a running server
// loses keys, or is put back as it was, with both unchanged. In each row
// bob's token (bob may read orders) was revoked at replica A and B refused
// it, then B served it again (200):
//   - a-rep12 F1, F2: CONFIG RESETSTAT after an evicting window zeroes
//     evicted_keys; SWAPDB 0 1 and back brings back database 0 with its
//     older marker; MOVE takes the records to another database; DEBUG
//     RELOAD NOSAVE reloads a snapshot from before (the marker is bound
//     to the calls of these commands, INFO commandstats);
//   - a-fix12 F1, F2: the keyspace put back from a copy of itself,
//     REPLICAOF the copy and back, RESTORE of a DUMP, COPY back, SWAPDB
//     hidden in a MULTI with a RESETSTAT after an earlier one (every write
//     raises the marker's generation, and a marker below the one a store
//     has seen begins the keyspace again).
//
// Now B refuses the token or the call, and the store does not vouch for a
// record from before.
func TestAKeyspaceThatLostKeysBeginsAgain(t *testing.T) {
	ctx := t.Context()
	copyKeys := func(t *testing.T, c *redis.Client) []string {
		keys := testkit.Must(c.Keys(ctx, "t:*").Result())(t)
		for _, k := range keys {
			require.NoError(t, c.Copy(ctx, k, k, 1, true).Err())
		}
		return keys
	}
	for _, tc := range []struct {
		name string
		args []string
		// before runs before the token is issued.
		before func(t *testing.T, c *redis.Client)
		// lose runs before the revocation (a backup) and returns what
		// runs after it, with no call of the store between.
		lose func(t *testing.T, c *redis.Client) (after func())
	}{
		{name: "RESETSTAT after an evicting window", args: []string{"--maxmemory-policy", "noeviction"},
			lose: func(t *testing.T, c *redis.Client) func() {
				return func() {
					require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
					fillUntilEvicted(t, c)
					require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
					require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
					require.NoError(t, c.ConfigResetStat(ctx).Err())
				}
			}},
		{name: "SWAPDB and back",
			before: func(t *testing.T, c *redis.Client) { // the keyspace in use is one swapped in
				require.NoError(t, c.Do(ctx, "SWAPDB", 0, 1).Err())
				warm(t, c)
			},
			lose: func(t *testing.T, c *redis.Client) func() {
				return func() { require.NoError(t, c.Do(ctx, "SWAPDB", 0, 1).Err()) }
			}},
		{name: "MOVE", lose: func(t *testing.T, c *redis.Client) func() {
			return func() {
				keys := testkit.Must(c.Keys(ctx, "t:*").Result())(t)
				for _, k := range keys {
					if k != "t:"+SinceKey {
						require.NoError(t, c.Move(ctx, k, 1).Err())
					}
				}
			}
		}},
		{name: "DEBUG RELOAD NOSAVE", args: []string{"--enable-debug-command", "yes"},
			lose: func(t *testing.T, c *redis.Client) func() {
				require.NoError(t, c.Save(ctx).Err())
				return func() { require.NoError(t, c.Do(ctx, "DEBUG", "RELOAD", "NOSAVE").Err()) }
			}},
		{name: "REPLICAOF a copy and back", args: []string{"--maxmemory-policy", "noeviction"},
			lose: func(t *testing.T, c *redis.Client) func() {
				backup := redistest.Start(t, "--maxmemory-policy", "noeviction").Client()
				syncedFrom(t, backup, c.Options().Addr)
				return func() {
					syncedFrom(t, c, backup.Options().Addr)
					require.Eventually(t, func() bool { return c.Set(ctx, "t:probe-writable", "1", time.Second).Err() == nil },
						10*time.Second, 20*time.Millisecond)
				}
			}},
		{name: "FLUSHDB and RESTORE of a DUMP", args: []string{"--maxmemory-policy", "noeviction"}, lose: dumped},
		{name: "COPY to database 1, FLUSHDB, COPY back", args: []string{"--maxmemory-policy", "noeviction"},
			lose: func(t *testing.T, c *redis.Client) func() {
				keys := copyKeys(t, c)
				return func() {
					require.NoError(t, c.FlushDB(ctx).Err())
					c1 := redis.NewClient(&redis.Options{Addr: c.Options().Addr, DB: 1})
					defer c1.Close()
					for _, k := range keys {
						require.NoError(t, c1.Copy(ctx, k, k, 0, true).Err())
					}
				}
			}},
		{name: "SWAPDB and RESETSTAT in one MULTI after an earlier RESETSTAT", args: []string{"--maxmemory-policy", "noeviction"},
			before: func(t *testing.T, c *redis.Client) {
				require.NoError(t, c.ConfigResetStat(ctx).Err())
				warm(t, c)
			},
			lose: func(t *testing.T, c *redis.Client) func() {
				copyKeys(t, c)
				return func() {
					testkit.Must(c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Do(ctx, "SWAPDB", 0, 1)
						p.ConfigResetStat(ctx)
						return nil
					}))(t)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.Start(t, tc.args...).Client()
			store := NewReplayStore(c, "t:")
			warm(t, c)
			a, b := replicaOn(t, store, "keyloss-seed-0123456789abcdef"), replicaOn(t, store, "keyloss-seed-0123456789abcdef")
			if tc.before != nil {
				tc.before(t, c)
			}
			tok := tokenAt(t, a, "acme", nil, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob"}})
			status, body := decideAt(t, b, tok)
			require.Equal(t, http.StatusOK, status, "bob may read orders: %s", body)
			after := tc.lose(t, c)
			status, body = revokeAt(t, a, tok)
			require.Equal(t, http.StatusOK, status, body)
			status, body = decideAt(t, b, tok)
			require.Equal(t, http.StatusUnauthorized, status, "B refuses the revoked token: %s", body)

			after()
			status, body = decideAt(t, b, tok)
			require.NotEqual(t, http.StatusOK, status, "B serves the token A revoked: %s", body)
			_, err := store.Recorded(ctx, "revoked", time.Now().Add(-time.Minute))
			require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the keyspace cannot vouch for what came before")
		})
	}
}

// warm marks the keyspace of prefix "t:" settled (an hour old) and makes
// a call bind the marker to this run, as a keyspace in use has it.
func warm(t *testing.T, c *redis.Client) {
	t.Helper()
	settled(t, c, "t:")
	testkit.Must(NewReplayStore(c, "t:").Recorded(t.Context(), "warm", time.Now()))(t)
}

// syncedFrom makes c a replica of primary, waits until its full sync is
// done (its dataset holds the marker), and promotes it again.
func syncedFrom(t *testing.T, c *redis.Client, primary string) {
	t.Helper()
	ctx := t.Context()
	host, port := testkit.Must2(net.SplitHostPort(primary))(t)
	require.NoError(t, c.Do(ctx, "REPLICAOF", host, port).Err())
	require.Eventually(t, func() bool {
		info, err := c.Info(ctx, "replication").Result()
		n, _ := c.Exists(ctx, "t:"+SinceKey).Result()
		return err == nil && strings.Contains(info, "master_link_status:up") && n == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, c.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
}

// dumped takes a backup of c's keys (DUMP) and returns its restore after a
// FLUSHDB.
func dumped(t *testing.T, c *redis.Client) (restore func()) {
	ctx := t.Context()
	keys, err := c.Keys(ctx, "t:*").Result()
	require.NoError(t, err)
	dumps, ttls := map[string]string{}, map[string]time.Duration{}
	for _, k := range keys {
		dumps[k], err = c.Dump(ctx, k).Result()
		require.NoError(t, err)
		ttls[k], err = c.PTTL(ctx, k).Result()
		require.NoError(t, err)
	}
	return func() {
		require.NoError(t, c.FlushDB(ctx).Err())
		for k, d := range dumps {
			require.NoError(t, c.Restore(ctx, k, max(ttls[k], 0), d).Err())
		}
	}
}

// TestAFinishPutBackIsSeen: a-fix12b F4. Finish (the step on which the
// reference server redeems an authorization code: it issues tokens only
// when Finish answers true) wrote without the marker's script, so it
// raised no generation: a copy taken between RecordOnce and Finish and
// restored after it had the keyspace's own generation, and the writer's
// repeated call finished the record a second time (a code redeemed
// twice). Finish now raises the generation as every write does.
func TestAFinishPutBackIsSeen(t *testing.T) {
	ctx := t.Context()
	c := redistest.Start(t, "--maxmemory-policy", "noeviction").Client()
	s := NewReplayStore(c, "t:")
	settled(t, c, "t:")
	since, until := time.Now(), time.Now().Add(time.Minute)
	mine := testkit.Must(s.RecordOnce(ctx, "code", "w", until, since))(t)
	require.True(t, mine)
	restore := dumped(t, c)
	done, err := s.Finish(ctx, "code", "w")
	require.NoError(t, err)
	require.True(t, done, "the first redemption answers")

	restore()
	mine, err = s.RecordOnce(ctx, "code", "w", until, since)
	if err == nil && mine {
		done, err = s.Finish(ctx, "code", "w")
		require.False(t, err == nil && done, "the record is finished a second time after the keyspace was put back to a copy from before its Finish")
	}
}
