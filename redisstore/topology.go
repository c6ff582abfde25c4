package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// checkTopology asks the server, through the client's ordinary command
// path (the one the purges and heartbeats take), whether the Invalidator
// may use it, since the Go client's type does not say where its commands
// land: a *redis.Client must reach a primary (primaryScript's check, the
// one every publication makes; a Sentinel client made with ReplicaOnly or
// RouteRandomly lands on replicas, where a PUBLISH reaches that replica's
// subscribers only) that is not a Cluster
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
	var info string
	var replica bool
	err := bounded(cctx, func() error {
		// INFO's default sections hold "cluster_enabled" on every Redis
		// and Valkey that has the section.
		var err error
		info, err = v.client.Info(cctx).Result()
		if err != nil || strings.Contains(info, "cluster_enabled:1") {
			return err
		}
		// The check the publications make (primaryScript without a
		// publication): go-redis drops a connection a replica refused
		// it on, so a pool that a failover left on the demoted primary
		// empties, and the retry dials the primary.
		err = onPrimary.Run(cctx, v.client, []string{v.primaryKey()}).Err()
		if isReplicaRefusal(err) {
			replica = true
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("redisstore: checking the Redis server's role: %w", err)
	}
	if strings.Contains(info, "cluster_enabled:1") {
		return fmt.Errorf("redisstore: the Redis server the Invalidator's %T reaches is a Cluster node, whose classic pub/sub crosses the Cluster's bus unordered with the heartbeats; use a redis.ClusterClient (sharded pub/sub)", v.client)
	}
	if replica {
		return errors.New("redisstore: the Redis server the Invalidator's client reaches is a replica, not a primary: a publication on a replica reaches only that replica's subscribers; use a client of the primary (redis.NewFailoverClient without ReplicaOnly or RouteRandomly)")
	}
	return nil
}
