// Package redisstore shares orgauthz's per-process state between replicas
// through Redis (or Valkey, which speaks the same protocol), with
// github.com/redis/go-redis/v9.
//
// It is a module of its own (github.com/orgauthz/orgauthz/redisstore), so a
// user of pep, dpop or middleware alone never downloads a Redis client.
// Every constructor takes a redis.UniversalClient: a single server, a
// Sentinel-managed primary or a Cluster. [Invalidator] uses sharded pub/sub
// on a Cluster, refuses a redis.Ring, checks the server at every
// subscription (a *redis.Client must reach a primary that is not a Cluster
// node), and publishes every purge and heartbeat through a script that
// publishes only on a primary (see its documentation). Every
// call returns by its context's deadline whatever the client's
// configuration (ContextTimeoutEnabled or not).
//
// [ReplayStore] is a dpop.ReplayStore: replicas whose dpop.Verifiers share
// one accept each DPoP proof once between them:
//
//	store := redisstore.NewReplayStore(rdb, "orders-api:dpop:")
//	v, err := dpop.NewVerifier(dpop.WithReplayStore(store))
//
// A Redis that fails, or may have lost writes, makes the Verifier refuse
// proofs (dpop.ErrReplayStoreUnavailable) rather than accept a replay: the
// store's marker is bound to the server's run (INFO server's run_id), so a
// flush, a restart (a crash restored from an RDB snapshot or an AOF that
// had not synced its last second included) and a failover to a replica
// all begin the keyspace again, and proofs are refused for the proof
// window (70 s with the defaults). A Redis that may evict keys (maxmemory
// set with a maxmemory-policy other than noeviction) fails every call,
// saying so; keys it evicted, and SWAPDB, MOVE, DEBUG or CONFIG RESETSTAT
// called on it, begin the keyspace again. Redis expires records by its own
// clock, so a Redis whose clock steps ahead loses every record whose end
// falls within the step: each call sends the marker's script this
// process's clock reading, and the marker keeps the high-water of Redis's
// clock; a call for which Redis's clock, now or at its high-water, is
// more than dpop.ReplayStoreMargin past the reading is refused, and a
// Redis clock stepped back below its high-water by more than the margin
// begins the keyspace again. Keep the clocks of Redis and of the replicas
// within that margin (see [ReplayStore]). To make each record count only once
// replicas hold it, the store waits for them ([WithReplicas]):
//
//	store := redisstore.NewReplayStore(rdb, "orders-api:dpop:",
//		redisstore.WithReplicas(2, 300*time.Millisecond))
//
// [Invalidator] is a pep.Invalidator (and authzen's): the cache purges of
// one replica reach every replica, and a replica serves its cache only
// while a heartbeat that travels the same route as the purges comes back
// fresh. A heartbeat, like a purge, is published only once the server it
// reaches has proved, in the same step, that it is the primary: Redis
// accepts PUBLISH on a replica (a demoted primary that a client's pooled
// connections still reach) and delivers it to that replica's subscribers
// only, so a heartbeat coming back from there would prove nothing about
// the other replicas. A publication a replica refused fails (or is
// retried on a connection to the primary); it never succeeds silently.
// And a heartbeat counts only when a primary of the subscription's
// replication history (the master_replid of the primary that took its
// first publication) took it: a heartbeat or purge taken under another
// ends the subscription, so a replica subscribed on a primary that a
// failover left behind stops serving its cache at its first heartbeat on
// the new one:
//
//	inv := redisstore.NewInvalidator(rdb, "orders-api:invalidations")
//	client, err := pep.New(gatewayURL, "acme", "orders-api", pep.WithInvalidator(inv))
package redisstore
