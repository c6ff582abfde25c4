package redistest_test

import (
	"testing"

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
