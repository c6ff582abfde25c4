package redisstore

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAKeyspaceRestoredOnTheRunningServerBeginsAgain: a-fix12 F2. The marker is bound to the
// run_id and to the calls of SWAPDB, MOVE, DEBUG and CONFIG RESETSTAT, but
// a running server's keyspace is put back as it was by other commands
// too, none of them counted: a backup taken key by key (DUMP, as riot or
// redis-dump-go do; or COPY to another database) and restored after a
// FLUSHDB (RESTORE, COPY ... DB 0) brings back the marker of this very
// run, and with it the keyspace from before bob's token was revoked. B
// served the revoked token again (200); the marker's generation now tells
// the older copy (TestAKeyspaceSyncedFromAnOlderCopyBeginsAgain). The last case is SWAPDB hidden by
// CONFIG RESETSTAT in one MULTI after an earlier RESETSTAT: the counts read
// "d1" before and after.
func TestAKeyspaceRestoredOnTheRunningServerBeginsAgain(t *testing.T) {
	ctx := t.Context()
	type backup func(t *testing.T, c *redis.Client) (restore func())
	for _, tc := range []struct {
		name   string
		args   []string
		before func(t *testing.T, c *redis.Client)
		backup backup
	}{
		{name: "FLUSHDB and RESTORE of a DUMP backup", backup: func(t *testing.T, c *redis.Client) func() {
			keys, err := c.Keys(ctx, "t:*").Result()
			require.NoError(t, err)
			dumps := map[string]string{}
			ttls := map[string]time.Duration{}
			for _, k := range keys {
				dumps[k], err = c.Dump(ctx, k).Result()
				require.NoError(t, err)
				ttls[k], err = c.PTTL(ctx, k).Result()
				require.NoError(t, err)
			}
			return func() {
				require.NoError(t, c.FlushDB(ctx).Err())
				for k, d := range dumps {
					ttl := ttls[k]
					if ttl < 0 {
						ttl = 0
					}
					require.NoError(t, c.Restore(ctx, k, ttl, d).Err())
				}
			}
		}},
		{name: "COPY to database 1, FLUSHDB, COPY back", backup: func(t *testing.T, c *redis.Client) func() {
			keys, err := c.Keys(ctx, "t:*").Result()
			require.NoError(t, err)
			for _, k := range keys {
				require.NoError(t, c.Copy(ctx, k, k, 1, true).Err())
			}
			return func() {
				require.NoError(t, c.FlushDB(ctx).Err())
				// COPY back from database 1 on a connection that selected it
				c1 := redis.NewClient(&redis.Options{Addr: c.Options().Addr, DB: 1})
				defer c1.Close()
				for _, k := range keys {
					require.NoError(t, c1.Copy(ctx, k, k, 0, true).Err())
				}
			}
		}},
		{name: "SWAPDB and CONFIG RESETSTAT in one MULTI after an earlier RESETSTAT",
			before: func(t *testing.T, c *redis.Client) {
				require.NoError(t, c.ConfigResetStat(ctx).Err())
				settled(t, c, "t:")
				_, err := NewReplayStore(c, "t:").Recorded(ctx, "warm", time.Now())
				require.NoError(t, err)
			},
			backup: func(t *testing.T, c *redis.Client) func() {
				keys, err := c.Keys(ctx, "t:*").Result()
				require.NoError(t, err)
				for _, k := range keys {
					require.NoError(t, c.Copy(ctx, k, k, 1, true).Err())
				}
				return func() {
					_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Do(ctx, "SWAPDB", 0, 1)
						p.ConfigResetStat(ctx)
						return nil
					})
					require.NoError(t, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := redistest.Start(t, "--maxmemory-policy", "noeviction") // with arguments: redis-server
			c := rs.Client()
			store := NewReplayStore(c, "t:")
			settled(t, c, store.prefix)
			_, err := store.Recorded(ctx, "warm", time.Now())
			require.NoError(t, err)
			if tc.before != nil {
				tc.before(t, c)
			}
			a, b := replicaOn(t, store, "keyloss-seed-0123456789abcdef"), replicaOn(t, store, "keyloss-seed-0123456789abcdef")
			tok := tokenAt(t, a, "acme", nil, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob"}})
			status, body := decideAt(t, b, tok)
			require.Equal(t, http.StatusOK, status, "bob may read orders: %s", body)

			restore := tc.backup(t, c)
			status, body = revokeAt(t, a, tok)
			require.Equal(t, http.StatusOK, status, body)
			status, body = decideAt(t, b, tok)
			require.Equal(t, http.StatusUnauthorized, status, "B refuses the revoked token: %s", body)

			restore()
			status, body = decideAt(t, b, tok)
			require.NotEqual(t, http.StatusOK, status, "B serves the token A revoked: %s", body)
			_, err = store.Recorded(ctx, "revoked", time.Now().Add(-time.Minute))
			require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the keyspace cannot vouch for what came before")
		})
	}
}
