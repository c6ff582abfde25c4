package pep_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackAnswerGrantOutlivesTheChannelsTrust (a-client15 F1): with an
// Invalidator, the cache serves nothing once its heartbeat is older than
// the trust window (a stalled channel, a frozen process) or once the
// channel was lost: purges from other replicas may have been missed. An
// answer's GRANT that a call read before its last wait is held to the same
// rule ("good no longer than the cache would have served it", core.Stamp),
// yet Holds checks only the purge count and the allow TTL: a GRANT read
// before the channel stalled (or broke) and carol's loss of it at another
// replica, whose purge never arrived, leaves the call unchanged although
// the cache would no longer serve it.
func TestAttackAnswerGrantOutlivesTheChannelsTrust(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wait func(clk *testkit.Clock, b *bus)
	}{
		{"the heartbeat goes stale (a stalled channel, a frozen process)", func(clk *testkit.Clock, _ *bus) {
			clk.Advance(invalidation.DefaultTrust + 3*time.Second) // 5 s: well within the 30 s allow TTL
		}},
		{"the channel is lost", func(_ *testkit.Clock, b *bus) { b.Lose(errors.New("connection reset")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := startReference(t)
			b := newBus()
			c := b.client(t, g, pep.WithClock(clk.Now), pep.WithCache(100, 30*time.Second, 10*time.Second),
				pep.WithTimeout(2*time.Hour), noRetry, pep.WithBatchSize(1))
			b.Beat(clk.Now())
			require.False(t, c.Stats().CacheBypassed)
			carol := g.token(t, "carol")

			readAnswered := make(chan struct{})
			var readOnce, waitOnce sync.Once
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				if strings.Contains(body, `"write"`) {
					<-readAnswered
					waitOnce.Do(func() {
						tc.wait(clk, b)
						// carol loses her department (her only way to read orders); the replica that did it
						// publishes her purge, which this replica's channel
						// never delivers (stalled or broken).
						g.unassign(t, "carol")
					})
					return false
				}
				r.Body = io.NopCloser(strings.NewReader(body))
				g.srv.ServeHTTP(w, r)
				readOnce.Do(func() { close(readAnswered) })
				return true
			})
			r := testkit.Must(c.CheckMany(pep.WithToken(t.Context(), carol),
				[]pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}))(t)
			require.Len(t, r.Decisions, 2)
			require.True(t, c.Stats().CacheBypassed, "the cache serves nothing now")
			assert.Equal(t, pep.Deny, r.Decisions[1].Status, "orders/write: carol never had it")
			assert.NotEqual(t, pep.Grant, r.Decisions[0].Status,
				"orders/read's GRANT, read before the channel stopped being trusted, left the call unchecked; carol lost it meanwhile")
		})
	}
}
