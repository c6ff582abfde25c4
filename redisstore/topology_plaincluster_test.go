package redisstore_test

// TestInvalidatorRefusesPlainClientOnClusterNode (issue 24, found by the
// second attack): a *redis.Client on a node of a Redis Cluster (a per-node
// endpoint, or a load balancer in front of the nodes) was taken for "a
// single server": classic PUBLISH and SUBSCRIBE, which a Cluster carries
// between nodes over its bus. B's heartbeats, published and received on
// node Y, always came back while A's purges, published on X, waited on
// (or were lost by) the bus link X->Y. Promise: every session asks the
// server (INFO cluster) and is lost with an error that says to use a
// redis.ClusterClient, so the cache is never trusted and a revoked token
// purged on A is never served from B's cache, whatever the bus does.
// Scaffolding: cluster_test.go.

import (
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

func TestInvalidatorRefusesPlainClientOnClusterNode(t *testing.T) {
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
	refusedSession(t, node(py), channel, "Cluster node", "redis.ClusterClient")

	gw := startGateway(t)
	a := replica(t, gw, node(px), channel)
	b := replica(t, gw, node(py), channel)
	toks := make([]string, 4)
	for i := range toks {
		toks[i] = revocable(gw, "bob")
		served(t, b, toks[i])
	}
	proxy.drop.Store(true) // the bus link X->Y drops; everything else is healthy
	for _, tok := range toks {
		revoke(t, gw, tok)
		require.NoError(t, a.Purge(ctx, tok), "Purge says Redis accepted the purge")
	}
	for _, tok := range toks {
		status, asked := served(t, b, tok)
		require.True(t, asked, "B served a revoked token from its cache")
		require.NotEqual(t, pep.Grant, status, "B granted a revoked token")
	}
	require.True(t, b.Stats().CacheBypassed, "B trusts its cache on a Cluster node through a plain client")
}
