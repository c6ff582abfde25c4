package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// primaryScript publishes on a primary only: every publication of the
// Invalidator (purge, purge-all, heartbeat) and its topology check run it,
// so the proof that the server is the primary and the publication are one
// step on one connection. Redis accepts PUBLISH on a replica and delivers
// it to that replica's own subscribers only (its own heartbeats would come
// back while the other replicas, subscribed on the primary, never hear its
// purges): a server that a failover demoted, and that the client's pooled
// connections still reach, must refuse it.
//
// KEYS[1] is a key of the Invalidator's own that nothing writes
// (invalidator.primaryKey). The script first deletes it, a write that
// changes nothing and is not replicated: a read-only replica refuses it
// (READONLY), and so does a primary that may not take writes (NOREPLICAS
// under min-replicas-to-write, MISCONF), whose publications could reach
// only one side of a split. Then INFO replication must say role:master,
// which a writable replica (replica-read-only no) does not (the write
// comes first: a script that wrote after a non-deterministic command
// would be refused by a Redis that replicates scripts verbatim). Only
// then ARGV[1] (PUBLISH or SPUBLISH) publishes ARGV[3] on ARGV[2]; with
// no ARGV the script only checks. Either way it answers the primary's
// master_replid, read from the same INFO replication: the replication
// history the publication joined, which a promotion (REPLICAOF NO ONE,
// FAILOVER, a Sentinel or Cluster failover) begins anew (see
// Invalidator.session). A classic PUBLISH is
// refused on a Cluster node (INFO cluster), which carries it over the
// Cluster's bus unordered with the heartbeats: only a redis.ClusterClient
// publishes on a Cluster, with SPUBLISH (a plain client on a Cluster node
// gets MOVED instead when the key's slot is elsewhere).
//
// A replica's refusal begins with "READONLY ", which go-redis takes as a
// connection to drop (the pool held it across the failover) and a command
// to retry on another: a retry that reaches the primary publishes there,
// and one that does not fails the publication.
const primaryScript = `local w = redis.pcall('DEL', KEYS[1])
local replica = 'READONLY redisstore: this Redis server is a replica, not the primary, so a publication here would reach only its own subscribers; the Invalidator\'s client must reach the primary'
if type(w) == 'table' and w.err then
  if string.sub(w.err, 1, 9) == 'READONLY ' then
    return redis.error_reply(replica)
  end
  return w
end
local info = redis.call('INFO', 'replication')
if not string.find(info, 'role:master', 1, true) then
  return redis.error_reply(replica)
end
local replid = string.match(info, 'master_replid:(%x+)')
if not replid then
  return redis.error_reply('ERR redisstore: this Redis server\'s INFO replication has no master_replid (Redis 4 or later, or Valkey, has it), so nothing tells its replication history apart')
end
if #ARGV == 0 then
  return replid
end
if ARGV[1] == 'PUBLISH' and string.find(redis.call('INFO', 'cluster'), 'cluster_enabled:1', 1, true) then
  return redis.error_reply('ERR redisstore: this Redis server is a Cluster node, whose classic pub/sub crosses the Cluster\'s bus unordered with the heartbeats; use a redis.ClusterClient (sharded pub/sub)')
end
redis.call(ARGV[1], ARGV[2], ARGV[3])
return replid
`

// onPrimary is primaryScript, sent as EVALSHA (EVAL once per server that
// does not know it yet).
var onPrimary = redis.NewScript(primaryScript)

// primaryKey is primaryScript's key: "<channel>:primary", in the
// channel's Cluster slot (as its heartbeat channels). The script deletes
// it at every publication, so nothing else may store anything there.
func (v *Invalidator) primaryKey() string {
	if !v.sharded || hasHashTag(v.channel) {
		return v.channel + ":primary"
	}
	return "{" + v.channel + "}:primary"
}

// publishOnPrimary publishes msg on channel through primaryScript: it
// returns a nil error only once a primary took the publication, with that
// primary's master_replid (never empty then).
func (v *Invalidator) publishOnPrimary(ctx context.Context, channel, msg string) (replid string, err error) {
	cmd := "PUBLISH"
	if v.sharded {
		cmd = "SPUBLISH"
	}
	replid, err = onPrimary.Run(ctx, v.client, []string{v.primaryKey()}, cmd, channel, msg).Text()
	if !v.sharded && isRedirect(err) {
		return "", fmt.Errorf("the Redis server the Invalidator's %T reaches is a Cluster node (%w); use a redis.ClusterClient (sharded pub/sub)", v.client, err)
	}
	if err == nil && replid == "" {
		err = errors.New("the Redis server answered the publication without its replication ID")
	}
	return replid, err
}

// isRedirect reports whether err is a Cluster node's redirection (MOVED,
// ASK), which only a redis.ClusterClient follows.
func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED ") || redis.HasErrorPrefix(err, "ASK ")
}

// isReplicaRefusal reports whether err is a replica's refusal of
// primaryScript (or of any write).
func isReplicaRefusal(err error) bool {
	return redis.HasErrorPrefix(err, "READONLY ")
}
