// Package redisstore shares orgauthz's per-process state between replicas
// through Redis (or Valkey, which speaks the same protocol), with
// github.com/redis/go-redis/v9.
//
// It is a module of its own (github.com/orgauthz/orgauthz/redisstore), so a
// user of pep, dpop or middleware alone never downloads a Redis client.
// Every constructor takes a redis.UniversalClient: a single server, a
// Sentinel-managed primary or a Cluster serve alike.
package redisstore
