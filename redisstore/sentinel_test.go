package redisstore_test

// Sentinel: on a failover go-redis's FailoverClient closes its pooled
// connections to the old master but not its pub/sub connections, so a
// replica's subscription stays on the old master while every PUBLISH goes
// to the new one. The heartbeat is published through the same client as
// the purges, so it goes to the new master too and never comes back on the
// old subscription: the replica stops trusting its cache within the trust
// window and subscribes again, on the new master. (With a PING heartbeat,
// found by the attack of issue 24, the old master kept answering and a
// replica served a revoked GRANT ~10 s after Purge.)

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// sentinelSet is a primary, its replicas and one Sentinel that monitors
// them as mymaster, on loopback.
type sentinelSet struct {
	primary      *redis.Client
	replicaPorts []string
	sentinelAddr string
	sentinel     *redis.Client
}

// startSentinelSet starts a primary with n replicas and, once every
// replica's link to the primary is up, a Sentinel, and waits until the
// Sentinel lists the n replicas, connected. A Sentinel reads the replicas from the
// primary's INFO when it first connects and then only every 10 s: started
// after the links are up, it knows them from that first INFO.
func startSentinelSet(t *testing.T, n int) sentinelSet {
	t.Helper()
	ctx := t.Context()
	primary := redistest.Start(t)
	set := sentinelSet{primary: primary.Client()}
	host, pm, _ := net.SplitHostPort(primary.Addr())
	var replicas []*redis.Client
	for range n {
		r := redistest.Start(t, "--replicaof", host, pm)
		_, pr, _ := net.SplitHostPort(r.Addr())
		set.replicaPorts = append(set.replicaPorts, pr)
		replicas = append(replicas, r.Client())
	}
	waitFor(t, "every replica's link to the primary is up", 60*time.Second, func() bool {
		for _, r := range replicas {
			if info, _ := r.Info(ctx, "replication").Result(); !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	// A Sentinel needs a configuration file, which it rewrites.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	set.sentinelAddr = l.Addr().String()
	require.NoError(t, l.Close())
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"port %d\nbind 127.0.0.1\nsentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 60000\nsentinel failover-timeout mymaster 60000\n",
		l.Addr().(*net.TCPAddr).Port, host, pm)), 0o600))
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "Sentinel needs redis-server")
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	set.sentinel = redis.NewClient(&redis.Options{Addr: set.sentinelAddr})
	t.Cleanup(func() { _ = set.sentinel.Close() })
	waitFor(t, "the Sentinel answers", 10*time.Second, func() bool { return set.sentinel.Ping(ctx).Err() == nil })
	// As a client sees them: go-redis's Sentinel clients pass over the
	// replicas the Sentinel has not connected to yet (flag disconnected).
	sc := redis.NewSentinelClient(&redis.Options{Addr: set.sentinelAddr})
	t.Cleanup(func() { _ = sc.Close() })
	waitFor(t, "Sentinel lists the replicas, connected", 60*time.Second, func() bool {
		rs, err := sc.Replicas(ctx, "mymaster").Result()
		if err != nil || len(rs) != n {
			return false
		}
		for _, r := range rs {
			if strings.Contains(r["flags"], "disconnected") || strings.Contains(r["flags"], "_down") {
				return false
			}
		}
		return true
	})
	return set
}

// TestSentinelFailoverNeverLeavesAReplicaTrustingAStaleCache: two
// replicas on a Sentinel-managed primary; after a failover a token is
// revoked and Purged on A; B serves its cached GRANT no later than 2 s
// after Purge returned.
func TestSentinelFailoverNeverLeavesAReplicaTrustingAStaleCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	set := startSentinelSet(t, 1)
	m, s := set.primary, set.sentinel
	pr := set.replicaPorts[0]

	failover := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{set.sentinelAddr}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	gw := startGateway(t)
	a := replica(t, gw, failover(), "attack:sentinel")
	b := replica(t, gw, failover(), "attack:sentinel")
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))
	toks := []string{revocable(gw, "bob"), revocable(gw, "bob")}
	for _, tok := range toks {
		cache(t, tok, a, b)
	}

	require.NoError(t, s.Do(ctx, "sentinel", "failover", "mymaster").Err())
	want := pr
	waitFor(t, "Sentinel names the new master", 20*time.Second, func() bool {
		addr, err := s.Do(ctx, "sentinel", "get-master-addr-by-name", "mymaster").StringSlice()
		return err == nil && len(addr) == 2 && addr[1] == want
	})
	time.Sleep(500 * time.Millisecond) // the clients hear +switch-master
	subs, _ := m.Do(ctx, "client", "list", "type", "pubsub").Text()
	t.Logf("pub/sub clients still on the old master: %d", strings.Count(subs, "\n"))

	gw.Revoke(t, realm, app, secret, toks[0])
	require.NoError(t, a.Purge(ctx, toks[0]), "Purge says the new master accepted it")
	// Watched until B asks the gateway (which refuses the token, and so
	// drops B's cached decisions of it).
	last := latestCachedGrant(t, b, toks[0], time.Now(), 40*time.Second)
	role, _ := m.Do(ctx, "role").Slice()
	t.Logf("B served the revoked token's cached GRANT until %v after Purge returned (CacheBypassed stayed false: %+v); old master's role now %v",
		last.Round(time.Millisecond), b.Stats(), role[0])
	require.Less(t, last, 2*time.Second, "B served a revoked token's cached GRANT %v after Purge returned", last.Round(time.Millisecond))
}
