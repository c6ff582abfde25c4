package redisstore_test

// TestInvalidatorIgnoresForgedHeartbeats (issue 24, found by the second
// attack). Before the fix: the heartbeat's nonce is public (it is in
// the channel's name, listed by PUBSUB CHANNELS) and its sequence number
// is a counter that grows by one every 250 ms, so anyone who can PUBLISH
// on the Redis where a replica's subscription sits can forge its
// heartbeat's echoes. With the subscription left on a server the purges no
// longer reach (Sentinel failover: go-redis leaves the subscription on the
// old master; modelled here by a dialer that sends the second connection,
// the subscription, to the "old" server and every later one, the
// publications, to the "new"), the forged echoes keep the replica trusting
// its cache, and a forged echo with a high sequence number also empties
// the table of pending heartbeats, so the "did not come back within 2 s"
// check never fires and the subscription is never made again. Promise:
// only an echo of a heartbeat's own random 128-bit token counts, and it
// removes its own pending entry only. Oracle:
// the README's bound, no cached GRANT of a purged token later than 2 s
// after Purge returned.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

func TestInvalidatorIgnoresForgedHeartbeats(t *testing.T) {
	t.Parallel()
	// "control": without the forger the fix holds (B resubscribes on the
	// new master within 2 s); "forged": it does not. Each has its own
	// servers and gateway.
	for _, forge := range []bool{false, true} {
		name := map[bool]string{false: "control", true: "forged"}[forge]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forgedHeartbeat(t, forge)
		})
	}
}

func forgedHeartbeat(t *testing.T, forge bool) {
	oldMaster := redistest.Start(t)
	newMaster := redistest.Start(t)
	if !oldMaster.Real() {
		t.Skip("needs the real redis-server")
	}
	const channel = "attack:forge"
	gw := startGateway(t)
	// A publishes its purges on the new master.
	a := replica(t, gw, newMaster.Client(), channel)
	// B: its first subscription (the second connection: the first carries
	// the session's topology check, INFO and the primary script, then the heartbeats)
	// stuck on the old master, its publications (heartbeats) on the new
	// one.
	var dials atomic.Int32
	rdbB := redis.NewClient(&redis.Options{Addr: newMaster.Addr(),
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr := newMaster.Addr()
			if dials.Add(1) == 2 {
				addr = oldMaster.Addr()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = rdbB.Close() })
	b := replica(t, gw, rdbB, channel)

	// The forger: any client of the old master. It learns the nonce from
	// PUBSUB CHANNELS and sprays echoes around the expected sequence
	// number, in ascending order.
	forger := oldMaster.Client()
	var hb string
	waitFor(t, "B's heartbeat channel is listed", 5*time.Second, func() bool {
		chs, _ := forger.PubSubChannels(t.Context(), channel+":hb:*").Result()
		if len(chs) == 1 {
			hb = chs[0]
		}
		return hb != ""
	})
	nonce, err := hex.DecodeString(hb[strings.LastIndex(hb, ":")+1:])
	require.NoError(t, err)
	seen := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	forged := make(chan struct{})
	go func() {
		defer close(forged)
		if !forge {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			est := int64(time.Since(seen)/(250*time.Millisecond)) + 1
			for n := max(1, est-12); n <= est+4; n++ {
				// The first version's echo (nonce and sequence number),
				// and a well-formed echo of today's with a guessed token.
				msg := append([]byte{1, 'h'}, nonce...)
				msg = binary.BigEndian.AppendUint64(msg, uint64(n))
				_ = forger.Publish(ctx, hb, msg).Err()
				_ = forger.Publish(ctx, hb, append([]byte{2, 'h'}, rand.Text()[:16]...)).Err()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-forged })

	waitFor(t, "both trust their caches", 10*time.Second, trusted(a, b))
	tok := revocable(gw, "bob")
	cache(t, tok, a, b)
	gw.Revoke(t, realm, app, secret, tok)
	require.NoError(t, a.Purge(t.Context(), tok))
	// Watched until B asks the gateway (which refuses tok, and so drops B's
	// cached decisions of it) or for 6 s, past the 2 s bound.
	late := latestCachedGrant(t, b, tok, time.Now(), 6*time.Second)
	t.Logf("B: %+v; subscriptions dialled: %d", b.Stats(), dials.Load())
	require.LessOrEqual(t, late, invalidation.DefaultTrust,
		"B served the revoked token's cached GRANT %v after Purge returned (forged heartbeats)", late)
}
