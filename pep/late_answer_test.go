package pep_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAnAnswerReadCountsForWhatItSays: an answer the client read counts for
// all that makes it safer, however late it came, whatever became of its
// body and whatever user code did after it; only what could grant is
// refused for being late or unusable. The token's GRANT of (orders, read)
// is cached, then the gateway answers one call as the row says:
//   - a-client12b F1: a 401 read just past the call's deadline (its timer
//     not fired: a process frozen while the gateway answered) or cut
//     mid-body was taken for an unavailable gateway: the refused token's
//     cached GRANT stayed served and no tokenExpired came;
//   - a-client12b F2, a-fix12c F1, F3: a 200 DENY (the permission taken
//     away) read late, cut cleanly, past its bound, empty, not the answer,
//     or late with a log line that panics, was thrown away, and the older
//     GRANT stayed served;
//   - a-fix12b: a late 503, 429 or 400, which decided nothing, purged the
//     token's cache, so an overloaded gateway wiped the GRANTs that carry
//     it through the outage.
//
// Then the gateway fails (503): the cached GRANT is served only when the
// answer decided nothing.
func TestAnAnswerReadCountsForWhatItSays(t *testing.T) {
	t.Parallel()
	deny := `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}]}`
	revoked := func(w http.ResponseWriter) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token was revoked"`)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_token"}`))
	}
	status := func(code int, body string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.WriteHeader(code); _, _ = w.Write([]byte(body)) }
	}
	for _, tc := range []struct {
		name string
		// answer writes the gateway's answer; late: it comes after the
		// call's deadline; panics: the late-answer log line panics.
		answer      func(w http.ResponseWriter)
		late, panic bool
		kept        bool // the cached GRANT still served after it
		expired     bool // tokenExpired emitted
	}{
		{name: "401 read late", answer: revoked, late: true, expired: true},
		{name: "401 cut mid-body", expired: true, answer: func(w http.ResponseWriter) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token was revoked"`)
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":`))
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler) // the connection is lost mid-body
		}},
		{name: "DENY read late", answer: status(http.StatusOK, deny), late: true},
		{name: "DENY read late, its log line panicking", answer: status(http.StatusOK, deny), late: true, panic: true},
		{name: "DENY with a Content-Length short of its body", answer: func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(deny)/2))
			status(http.StatusOK, deny)(w)
		}},
		{name: "DENY past the bound of a body", answer: status(http.StatusOK, deny[:len(deny)-1]+`,"pad":"`+strings.Repeat("x", 1<<20)+`"}`)},
		{name: "200 with an empty body", answer: status(http.StatusOK, "")},
		{name: "200 not the answer", answer: status(http.StatusOK, deny[:len(deny)-1])},
		{name: "503 read late", answer: status(http.StatusServiceUnavailable, `{"error":"busy"}`), late: true, kept: true},
		{name: "429 read late", answer: status(http.StatusTooManyRequests, `{"error":"busy"}`), late: true, kept: true},
		{name: "400 read late", answer: status(http.StatusBadRequest, `{"error":"busy"}`), late: true, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			var armed atomic.Bool
			c := g.newClient(t, pep.WithTimeout(time.Hour), noRetry, pep.WithLogger(slog.New(lateLinePanics{&armed})))
			c.SetToken(g.token(t, "alice"))
			expired := make(chan struct{}, 4)
			t.Cleanup(c.Subscribe(func(e events.Event) {
				if e.Kind == events.TokenExpired {
					expired <- struct{}{}
				}
			}))
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "alice reads orders: %v", d.Cause)

			ctx := context.Context(t.Context())
			unfired := frozentest.NewUnfired(time.Minute)
			if tc.late {
				ctx = unfired
			}
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				if tc.late {
					unfired.Pass()
				}
				w.Header().Set("Content-Type", "application/json")
				tc.answer(w)
				return true
			})
			armed.Store(tc.panic)
			recovered := recoverCall(func() {
				d, _ = c.Check(ctx, "orders", "read", pep.NoCache())
				require.False(t, d.Allowed())
			})
			armed.Store(false)
			require.Equal(t, tc.panic, recovered != nil, "the log line panicked: %v", recovered)

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool { // the gateway fails
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			d, err = c.Check(t.Context(), "orders", "read")
			g.setHook(nil)
			assert.Equal(t, tc.kept, d.Allowed() && d.Cached, "the older cached GRANT served after the answer (err=%v)", err)
			if tc.expired {
				select {
				case <-expired:
				case <-time.After(10 * time.Second): // a hang guard: delivery ends with the call
					t.Error("no tokenExpired for the own token after the client read its 401")
				}
			}
			assert.Empty(t, expired, "tokenExpired once for the own token's 401, and for nothing else")
		})
	}
}

// lateLinePanics is a user's log handler with a bug: while armed, the
// line saying an answer came after the call's deadline panics.
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
