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
// purged on A is never served from B's cache, whatever the bus does; and
// A's Purge fails with the same advice (the publications' script refuses
// a classic PUBLISH on a Cluster node).
// Scaffolding: cluster_test.go.

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// plainClientOnClusterNodeIsRefused is
// TestInvalidatorRefusesPlainClientOnClusterNode, a row of
// TestClusterPurgesTravelWithTheHeartbeat (cluster_test.go).
func plainClientOnClusterNodeIsRefused(t *testing.T, c twoNodeCluster) {
	ctx := t.Context()
	proxy, channel := c.proxy, c.channel

	// Each replica uses a plain *redis.Client on one cluster node (a
	// per-node endpoint, or a load balancer in front of the nodes): the
	// Invalidator accepts it as "a single server" and uses classic
	// PUBLISH/SUBSCRIBE, which a Cluster carries over the bus.
	node := func(n *redis.Client) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.Options().Addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	refusedSession(t, node(c.y), channel, "Cluster node", "redis.ClusterClient")

	gw := startGateway(t)
	a := replica(t, gw, node(c.x), channel)
	b := replica(t, gw, node(c.y), channel)
	firstSessionSettled(t, b)
	toks := make([]string, 4)
	for i := range toks {
		toks[i] = revocable(gw, "bob")
		served(t, b, toks[i])
	}
	proxy.Set(redistest.Drop) // the bus link X->Y drops, kept open; everything else is healthy
	for _, tok := range toks {
		gw.Revoke(t, realm, app, secret, tok)
		require.ErrorContains(t, a.Purge(ctx, tok), "redis.ClusterClient", "a classic publication on a Cluster node fails")
	}
	for _, tok := range toks {
		status, asked := served(t, b, tok)
		require.True(t, asked, "B served a revoked token from its cache")
		require.NotEqual(t, pep.Grant, status, "B granted a revoked token")
	}
	require.True(t, b.Stats().CacheBypassed, "B trusts its cache on a Cluster node through a plain client")
}
