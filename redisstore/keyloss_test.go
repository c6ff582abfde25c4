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

// TestCommandsThatLoseKeysBeginTheKeyspace: a-rep12 F1, F2. The marker
// vouched for a keyspace while the server's run_id and evicted_keys stood,
// but commands lose or bring back keys with both unchanged: CONFIG
// RESETSTAT after an evicting window zeroes evicted_keys; SWAPDB 0 1 and
// back brings back database 0 with its older marker of the same run; MOVE
// takes the revocation's record to another database; DEBUG RELOAD NOSAVE
// reloads a snapshot taken before it. In each, bob's token (bob may read
// orders) was revoked at replica A and B refused it, then B served it again
// (200). The marker is now bound to the calls of those commands too (INFO
// commandstats): B refuses the token or the call, and the store does not
// vouch for a record from before.
func TestCommandsThatLoseKeysBeginTheKeyspace(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		args []string
		// lose is what the operator does after the revocation, with no
		// call of the store between its commands.
		lose func(t *testing.T, c *redis.Client)
		// before runs before the token is issued.
		before func(t *testing.T, c *redis.Client)
	}{
		{name: "RESETSTAT after an evicting window", args: []string{"--maxmemory-policy", "noeviction"},
			lose: func(t *testing.T, c *redis.Client) {
				require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
				fillUntilEvicted(t, c)
				require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
				require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
				require.NoError(t, c.ConfigResetStat(ctx).Err())
			}},
		{name: "SWAPDB and back",
			before: func(t *testing.T, c *redis.Client) {
				// the keyspace in use is one swapped in; the old one waits
				require.NoError(t, c.Do(ctx, "SWAPDB", 0, 1).Err())
				settled(t, c, "t:")
				_, err := NewReplayStore(c, "t:").Recorded(ctx, "warm", time.Now())
				require.NoError(t, err)
			},
			lose: func(t *testing.T, c *redis.Client) { require.NoError(t, c.Do(ctx, "SWAPDB", 0, 1).Err()) }},
		{name: "MOVE", lose: func(t *testing.T, c *redis.Client) {
			keys, err := c.Keys(ctx, "t:*").Result()
			require.NoError(t, err)
			for _, k := range keys {
				if k != "t:"+SinceKey {
					require.NoError(t, c.Move(ctx, k, 1).Err())
				}
			}
		}},
		{name: "DEBUG RELOAD NOSAVE", args: []string{"--enable-debug-command", "yes"},
			before: func(t *testing.T, c *redis.Client) { require.NoError(t, c.Save(ctx).Err()) },
			lose: func(t *testing.T, c *redis.Client) {
				require.NoError(t, c.Do(ctx, "DEBUG", "RELOAD", "NOSAVE").Err())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := redistest.Start(t, tc.args...)
			c := rs.Client()
			store := NewReplayStore(c, "t:")
			settled(t, c, store.prefix)
			// a call binds the marker to this run, as a keyspace in use has it
			_, err := store.Recorded(ctx, "warm", time.Now())
			require.NoError(t, err)
			a, b := replicaOn(t, store, "keyloss-seed-0123456789abcdef"), replicaOn(t, store, "keyloss-seed-0123456789abcdef")
			if tc.before != nil {
				tc.before(t, c)
			}
			tok := tokenAt(t, a, "acme", nil, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"bob"}, "password": {"bob"}})
			status, body := decideAt(t, b, tok)
			require.Equal(t, http.StatusOK, status, "bob may read orders: %s", body)
			status, body = revokeAt(t, a, tok)
			require.Equal(t, http.StatusOK, status, body)
			status, body = decideAt(t, b, tok)
			require.Equal(t, http.StatusUnauthorized, status, "B refuses the revoked token: %s", body)

			tc.lose(t, c)
			status, body = decideAt(t, b, tok)
			require.NotEqual(t, http.StatusOK, status, "B serves the token A revoked: %s", body)
			_, err = store.Recorded(ctx, "revoked", time.Now().Add(-time.Minute))
			require.ErrorIs(t, err, dpop.ErrKeyspaceNew, "the keyspace cannot vouch for what came before")
		})
	}
}
