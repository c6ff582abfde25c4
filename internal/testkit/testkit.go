// Package testkit holds the small helpers the tests of several packages
// share: a clock moved by hand, a log buffer written from any goroutine, a
// user's log handler with a bug, a measure of the live heap's growth, a
// DPoP proof's nonce, a server closed when the test ends and Must, for a
// value a test needs from a call that must not fail.
// It is imported by tests only, and imports the standard library only.
package testkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Must returns a function that returns v, having failed the test it is
// given (and stopped it, as require.NoError does) if err is not nil: a
// test's `v := testkit.Must(f())(t)` for the call and then its
// require.NoError(t, err). msgAndArgs, as require's, say what failed.
func Must[T any](v T, err error) func(t testing.TB, msgAndArgs ...any) T {
	return func(t testing.TB, msgAndArgs ...any) T {
		t.Helper()
		noError(t, err, msgAndArgs)
		return v
	}
}

// Must2 is Must for a call of two values and an error.
func Must2[A, B any](a A, b B, err error) func(t testing.TB, msgAndArgs ...any) (A, B) {
	return func(t testing.TB, msgAndArgs ...any) (A, B) {
		t.Helper()
		noError(t, err, msgAndArgs)
		return a, b
	}
}

// noError fails and stops the test if err is not nil, saying
// msgAndArgs (a message, or a format and its arguments) before it.
func noError(t testing.TB, err error, msgAndArgs []any) {
	t.Helper()
	switch {
	case err == nil:
	case len(msgAndArgs) == 0:
		t.Fatalf("unexpected error: %v", err)
	default:
		msg := fmt.Sprint(msgAndArgs...)
		if f, ok := msgAndArgs[0].(string); ok && len(msgAndArgs) > 1 {
			msg = fmt.Sprintf(f, msgAndArgs[1:]...)
		}
		t.Fatalf("%s: unexpected error: %v", msg, err)
	}
}

// Clock is a clock that moves only when told to; safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// SyncBuffer is a log's text, written from any goroutine.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns the text written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WarnPanics is a user's slog handler with a bug on its Warn and Error
// path: it panics on every record at Warn or above.
type WarnPanics struct{}

// Enabled reports true for every level.
func (WarnPanics) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns the handler itself.
func (h WarnPanics) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns the handler itself.
func (h WarnPanics) WithGroup(string) slog.Handler { return h }

// Handle panics on a record at Warn or above.
func (WarnPanics) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		panic("a bug in the user's log handler")
	}
	return nil
}

// HeapGrowth returns how many bytes the live heap grew by while fill ran.
func HeapGrowth(fill func()) int64 {
	before := LiveHeap()
	fill()
	return int64(LiveHeap()) - int64(before)
}

// LiveHeap returns the live heap once a collection has run.
func LiveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ProofNonce returns the nonce claim of a DPoP proof, "" if none (or if
// the proof cannot be read: the server then refuses it, and the test sees
// the refusal).
func ProofNonce(proof string) string {
	var claims struct {
		Nonce string `json:"nonce"`
	}
	if parts := strings.Split(proof, "."); len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			_ = json.Unmarshal(b, &claims)
		}
	}
	return claims.Nonce
}

// Serve starts an httptest.Server of h, closed when the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
