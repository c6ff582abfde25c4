package pep_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/pep"
)

// a-fix12c F3: "settled" exists so that an answer's effect is applied
// before any user code runs after it (a panic of the logger, the span's
// end, the body's Close): core's post handles a 401 in a defer. The
// unused-200 purge did not follow that rule: it was decided from c.post's
// return value, so a panic of the user's code that runs after the answer
// is settled - here the very Debug line that says "answered after the
// call's deadline: the answer is not used" - skipped the purge, and the
// token's older GRANT was served after the gateway's newer DENY was read.
// Now post's defer purges too.
type lateLinePanics struct{ armed *atomic.Bool }

func (h lateLinePanics) Enabled(context.Context, slog.Level) bool { return true }
func (h lateLinePanics) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lateLinePanics) WithGroup(string) slog.Handler            { return h }
func (h lateLinePanics) Handle(_ context.Context, r slog.Record) error {
	if h.armed.Load() && strings.Contains(r.Message, "answered after the call's deadline") {
		panic("a bug in the user's log handler")
	}
	return nil
}

func TestAnUnused200WhoseLogLinePanicsStillDropsTheOlderGrant(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	var armed atomic.Bool
	c := g.newClient(t, pep.WithTimeout(time.Hour), noRetry, pep.WithLogger(slog.New(lateLinePanics{&armed})))
	c.SetToken(g.token(t, "alice"))

	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Allowed(), "alice reads orders: %v", d.Cause)

	deny := `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}]}`
	ctx := frozentest.NewUnfired(time.Minute)
	g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		ctx.Pass()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(deny))
		return true
	})
	armed.Store(true)
	recovered := recoverCall(func() { _, _ = c.Check(ctx, "orders", "read", pep.NoCache()) })
	armed.Store(false)
	require.NotNil(t, recovered, "control: the user's log handler panicked")
	require.Equal(t, http.StatusOK, g.last(t).Status, "the gateway answered")

	g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(deny))
		return true
	})
	d, err = c.Check(t.Context(), "orders", "read")
	g.setHook(nil)
	require.NoError(t, err)
	assert.False(t, d.Allowed() && d.Cached,
		"the older cached GRANT is served after the client read the gateway's newer DENY (its log line panicked)")
}
