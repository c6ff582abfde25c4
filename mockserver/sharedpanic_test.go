package mockserver_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

const sharedPanicChildEnv = "MOCKSERVER_SHARED_PANIC_CHILD"

// panickyStore is a SharedStore whose Recorded panics while armed.
type panickyStore struct {
	*sharedStore
	armed atomic.Bool
}

func (s *panickyStore) Recorded(ctx context.Context, key string, since time.Time) (bool, error) {
	if s.armed.Load() {
		panic("a bug in the user's shared store")
	}
	return s.sharedStore.Recorded(ctx, key, since)
}

// A SharedStore (WithReplayStore) that panics is a failing store: the
// request that needed it is answered 503, as when the store errs, and the
// server goes on; once the store is well again, the same token is served.
// (The server called the store on a goroutine of its own with no recover:
// the panic ended the server.) The case runs in a child process, so that
// a panic that escapes fails this test rather than ending the test binary.
func TestPanickingSharedStoreIsAFailingStore(t *testing.T) {
	if os.Getenv(sharedPanicChildEnv) != "1" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPanickingSharedStoreIsAFailingStore$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), sharedPanicChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if len(out) > 4000 {
			out = out[len(out)-4000:]
		}
		require.NoError(t, err, "the server process died, or the case failed:\n%s", out)
		require.Contains(t, string(out), "--- PASS: TestPanickingSharedStoreIsAFailingStore")
		return
	}
	store := &panickyStore{sharedStore: &sharedStore{keys: map[string]time.Time{}}}
	gw := mockservertest.Start(t, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithKeySeed(keySeed), mockserver.WithReplayStore(store))
	realm := servertest.DPoPFixture().Realms[0].Name
	user := servertest.DPoPFixture().Realms[0].Users[0].Username
	token := gw.Token(realm, user)
	userinfo := func() int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.URL+"/realms/"+realm+"/protocol/openid-connect/userinfo", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := gw.Client().Do(req)
		require.NoError(t, err, "the server answers")
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	store.armed.Store(true)
	require.Equal(t, http.StatusServiceUnavailable, userinfo(), "a panicking store is a failing one")
	store.armed.Store(false)
	require.Equal(t, http.StatusOK, userinfo(), "the server goes on")
}
