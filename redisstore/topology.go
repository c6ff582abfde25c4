package redisstore

import (
	"context"
	"fmt"
	"strings"
)

// checkTopology asks the server, through the client's ordinary command
// path (the one the purges and heartbeats take), whether the Invalidator
// may use it, since the Go client's type does not say where its commands
// land: a *redis.Client must reach a primary (ROLE master; a Sentinel
// client made with ReplicaOnly or RouteRandomly lands on replicas, where a
// PUBLISH reaches that replica's subscribers only) that is not a Cluster
// node (INFO's cluster_enabled; classic pub/sub crosses a Cluster over its bus, which
// nothing orders with the heartbeats). A *redis.ClusterClient is not
// checked: go-redis sends SPUBLISH to the channel's slot master, and a
// subscription on one of its replicas is meant. An error fails the session
// (reported lost, the cache untrusted) and says what to use.
func (v *Invalidator) checkTopology(ctx context.Context) error {
	if v.sharded {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, lostAfter)
	defer cancel()
	var role, info string
	err := bounded(cctx, func() error {
		r, err := v.client.Do(cctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if len(r) > 0 {
			role, _ = r[0].(string)
		}
		// INFO's default sections hold "cluster_enabled" on every Redis
		// and Valkey that has the section.
		info, err = v.client.Info(cctx).Result()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisstore: checking the Redis server's role: %w", err)
	}
	if role != "master" {
		return fmt.Errorf("redisstore: the Redis server the Invalidator's client reaches is a %q, not a primary: a publication on a replica reaches only that replica's subscribers; use a client of the primary (redis.NewFailoverClient without ReplicaOnly or RouteRandomly)", role)
	}
	if strings.Contains(info, "cluster_enabled:1") {
		return fmt.Errorf("redisstore: the Redis server the Invalidator's %T reaches is a Cluster node, whose classic pub/sub crosses the Cluster's bus unordered with the heartbeats; use a redis.ClusterClient (sharded pub/sub)", v.client)
	}
	return nil
}
