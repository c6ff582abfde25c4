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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func startRedisArgs(t *testing.T, port int, args ...string) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	t.Cleanup(func() { _ = c.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(t.Context()).Err() != nil {
		require.True(t, time.Now().Before(deadline), "redis on %d did not start", port)
		time.Sleep(20 * time.Millisecond)
	}
	return c
}

// sentinelSet is a primary, its replicas and one Sentinel that monitors
// them as mymaster, on loopback.
type sentinelSet struct {
	primary      *redis.Client
	replicaPorts []int
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
	common := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(), "--save", "", "--appendonly", "no"}
	}
	pm := freeClusterPort(t)
	// The primary sends its data to a new replica at once, rather than 5 s
	// later (repl-diskless-sync-delay's default, a wait for more replicas).
	set := sentinelSet{primary: startRedisArgs(t, pm, append(common(pm), "--repl-diskless-sync-delay", "0")...)}
	var replicas []*redis.Client
	for range n {
		pr := freeClusterPort(t)
		set.replicaPorts = append(set.replicaPorts, pr)
		replicas = append(replicas, startRedisArgs(t, pr, append(common(pr), "--replicaof", "127.0.0.1", strconv.Itoa(pm))...))
	}
	waitFor(t, "every replica's link to the primary is up", 60*time.Second, func() bool {
		for _, r := range replicas {
			if info, _ := r.Info(ctx, "replication").Result(); !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	ps := freeClusterPort(t)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"port %d\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 %d 1\nsentinel down-after-milliseconds mymaster 60000\nsentinel failover-timeout mymaster 60000\n",
		ps, pm)), 0o600))
	set.sentinelAddr = "127.0.0.1:" + strconv.Itoa(ps)
	set.sentinel = startRedisArgs(t, ps, conf, "--sentinel")
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
	want := strconv.Itoa(pr)
	waitFor(t, "Sentinel names the new master", 20*time.Second, func() bool {
		addr, err := s.Do(ctx, "sentinel", "get-master-addr-by-name", "mymaster").StringSlice()
		return err == nil && len(addr) == 2 && addr[1] == want
	})
	time.Sleep(500 * time.Millisecond) // the clients hear +switch-master
	subs, _ := m.Do(ctx, "client", "list", "type", "pubsub").Text()
	t.Logf("pub/sub clients still on the old master: %d", strings.Count(subs, "\n"))

	revoke(t, gw, toks[0])
	require.NoError(t, a.Purge(ctx, toks[0]), "Purge says the new master accepted it")
	// Watched until B asks the gateway (which refuses the token, and so
	// drops B's cached decisions of it).
	last := latestCachedGrant(t, b, toks[0], time.Now(), 40*time.Second)
	role, _ := m.Do(ctx, "role").Slice()
	t.Logf("B served the revoked token's cached GRANT until %v after Purge returned (CacheBypassed stayed false: %+v); old master's role now %v",
		last.Round(time.Millisecond), b.Stats(), role[0])
	require.Less(t, last, 2*time.Second, "B served a revoked token's cached GRANT %v after Purge returned", last.Round(time.Millisecond))
}
