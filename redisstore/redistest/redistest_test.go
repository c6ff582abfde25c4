package redistest_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The harness gives a server that stores, and a restart that comes back
// empty on the same address, as a restarted Redis without persistence does.
func TestStartAndRestart(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(t.Context(), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
	srv.Restart()
	if n, err := c.Exists(t.Context(), "k").Result(); err != nil || n != 0 {
		t.Fatalf("after restart EXISTS k = %d, %v; want 0, nil", n, err)
	}
	t.Logf("real redis-server: %v", srv.Real())
}

// TestEveryServerStartsEmpty: a replica's full sync writes an RDB file;
// it stays in the test's own directory, so neither the package directory
// gains a dump.rdb nor does a later server (started, or restarted) load
// the data of another.
func TestEveryServerStartsEmpty(t *testing.T) {
	a := redistest.Start(t)
	if !a.Real() {
		t.Skip("miniredis has no replication or RDB files")
	}
	ctx := t.Context()
	if _, err := os.Stat("dump.rdb"); err == nil {
		t.Fatalf("a dump.rdb is in the package directory before the test: remove it")
	}
	b := redistest.Start(t)
	if err := a.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	// The replica loads the sync from disk (the default), writing an RDB.
	if err := b.Client().ConfigSet(ctx, "repl-diskless-load", "disabled").Err(); err != nil {
		t.Fatalf("CONFIG SET: %v", err)
	}
	host, port, _ := net.SplitHostPort(a.Addr())
	if err := b.Client().Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	bc := b.Client()
	require.Eventually(t, func() bool { return bc.Exists(ctx, "k").Val() == 1 }, 15*time.Second, 20*time.Millisecond, "the replica synced")
	if _, err := os.Stat("dump.rdb"); err == nil {
		_ = os.Remove("dump.rdb")
		t.Fatalf("the replica's full sync wrote dump.rdb in the package directory")
	}
	c := redistest.Start(t)
	if n, err := c.Client().DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("a new server holds %d keys (%v); want 0: it loaded another's RDB", n, err)
	}
	b.Restart()
	if n, err := b.Client().DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("a restarted replica holds %d keys (%v); want 0", n, err)
	}
}
