package redisstore_test

// Attack (round 2, a-replicas2): NewInvalidator decides the topology from
// the Go client's type, not from the server. A *redis.Client on a node of
// a Redis Cluster is taken for "a single server": classic PUBLISH and
// SUBSCRIBE, whose messages a Cluster carries between nodes over the bus.
// Replica A publishes its purges on node X, replica B subscribes (and
// publishes its own heartbeats) on node Y: B's heartbeats never leave Y
// and always come back, while A's purges wait on (or are lost by) the bus
// link X->Y. This is finding (1) of the first attack, through the
// "supported" single-server path. Scaffolding: cluster_test.go.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

func TestAttackPlainClientOnClusterNodesOutrunByHeartbeat(t *testing.T) {
	ctx := t.Context()
	px, py := freeClusterPort(t), freeClusterPort(t)
	// Y announces a bus port that is the proxy's; the proxy forwards to
	// Y's real bus port.
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	proxyPort := pln.Addr().(*net.TCPAddr).Port
	proxy := startBusProxy(t, pln, "127.0.0.1:"+strconv.Itoa(py+10000))
	x := startClusterNode(t, px)
	y := startClusterNode(t, py, "--cluster-announce-bus-port", strconv.Itoa(proxyPort))

	require.NoError(t, x.Do(ctx, "cluster", "addslotsrange", 0, 8191).Err())
	require.NoError(t, y.Do(ctx, "cluster", "addslotsrange", 8192, 16383).Err())
	require.NoError(t, x.Do(ctx, "cluster", "meet", "127.0.0.1", py, proxyPort).Err())
	deadline := time.Now().Add(30 * time.Second)
	for {
		okx, _ := x.ClusterInfo(ctx).Result()
		oky, _ := y.ClusterInfo(ctx).Result()
		if strings.Contains(okx, "cluster_state:ok") && strings.Contains(oky, "cluster_state:ok") &&
			strings.Contains(okx, "cluster_known_nodes:2") && strings.Contains(oky, "cluster_known_nodes:2") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the cluster did not form: %s / %s", okx, oky)
		time.Sleep(50 * time.Millisecond)
	}
	// A channel whose slot is Y's: the replicas' subscriptions go to Y.
	var channel string
	for i := 0; ; i++ {
		channel = fmt.Sprintf("orders-api:invalidations:%d", i)
		slot, err := x.ClusterKeySlot(ctx, channel).Result()
		require.NoError(t, err)
		if slot >= 8192 {
			break
		}
	}
	// Sanity: the cluster delivers a PUBLISH on X to a subscriber on Y.
	sub := y.Subscribe(ctx, channel)
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, x.Publish(ctx, channel, "hello").Err())
	m, err := sub.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err, "a PUBLISH on X reaches Y's subscribers over the bus")
	require.Equal(t, "hello", m.(*redis.Message).Payload)
	_ = sub.Close()

	// Each replica uses a plain *redis.Client on one cluster node (a
	// per-node endpoint, or a load balancer in front of the nodes): the
	// Invalidator accepts it as "a single server" and uses classic
	// PUBLISH/SUBSCRIBE, which a Cluster carries over the bus.
	node := func(port int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	gw := startGateway(t)
	a := replica(t, gw, node(px), channel)
	b := replica(t, gw, node(py), channel)
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))

	toks := make([]string, 4)
	for i := range toks {
		toks[i] = revocable(gw, "bob")
		cache(t, toks[i], a, b)
	}

	proxy.drop.Store(true) // the bus link X->Y drops; everything else is healthy
	for _, tok := range toks {
		revoke(t, gw, tok)
		require.NoError(t, a.Purge(ctx, tok), "Purge says Redis accepted the purge")
	}
	purged := time.Now()

	time.Sleep(3 * time.Second)         // past the promised bound of 2 s
	received := b.Stats().Invalidations // before the Checks, whose 401s publish more
	var stale int
	for _, tok := range toks {
		before := b.Stats().GatewayRequests
		d, err := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		asked := b.Stats().GatewayRequests > before
		if err == nil && d.Allowed() && !asked {
			stale++
		}
	}
	t.Logf("%v after the last Purge returned: B received %d of %d purges, served %d revoked GRANTs from its cache (CacheBypassed=%v)",
		time.Since(purged).Round(time.Millisecond), b.Stats().Invalidations, len(toks), stale, b.Stats().CacheBypassed)
	require.Zero(t, stale, "replica B served revoked tokens' cached GRANTs %v after Purge returned", time.Since(purged).Round(time.Millisecond))
	require.EqualValues(t, len(toks), received, "the purges reach the slot master B subscribes on, whatever the bus does")
}
