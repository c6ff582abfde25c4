package pep_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestOneRefusalAndAShortOutagePurgeThatTokenOnly: one refused token
// while the channel is down for 2 s is published as that token's purge once
// the channel is back, not as a purge of every replica's cache: the
// publisher's own pauses between tries (200 ms up to 1 s) are no wait for a
// publisher (a-fix10c F2: they aged the refusal past the one second after
// which a backlog becomes a purge of every cache).
func TestOneRefusalAndAShortOutagePurgeThatTokenOnly(t *testing.T) {
	t.Parallel()
	inv := &gatedPublisher{up: time.Now().Add(2 * time.Second)}
	c := refusedClient(t, inv)
	_, err := c.Check(pep.WithToken(t.Context(), "expired-token-1"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	require.Eventually(t, func() bool { n, all := inv.taken(); return n >= 2 || all > 0 }, 10*time.Second, 5*time.Millisecond,
		"nothing was published after the channel came back")
	n, all := inv.taken()
	require.Zero(t, all, "one refused token and a 2 s blip purged every replica's whole cache (%d messages, overflows %d)", n, c.Stats().InvalidationRefusalOverflows)
	require.Equal(t, 2, n, "the token's own purge (identity and own digest)")
}

// TestCloseLetsEveryRefusalBePublished: a replica shut down just after a
// 401 (Close as the last request is answered), or while a call is at the
// gateway (Close as the process stops), still tells the other replicas:
// Close waits, at most 2 s, for the calls under way and the purges they
// and earlier calls queued (a-rep13 F1: Close dropped what was queued;
// a-fix13 F1: a 401 read after Close began was never queued; either way
// another replica served the revoked token's cached GRANT for its TTL).
// The channel fails for its first half second.
func TestCloseLetsEveryRefusalBePublished(t *testing.T) {
	t.Parallel()
	for _, underWay := range []bool{false, true} {
		t.Run(map[bool]string{false: "queued before Close", true: "read while Close waits"}[underWay], func(t *testing.T) {
			t.Parallel()
			inv := &gatedPublisher{up: time.Now().Add(500 * time.Millisecond)}
			arrived, release := make(chan struct{}), make(chan struct{})
			gw := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if underWay {
					close(arrived)
					<-release
				}
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				w.WriteHeader(http.StatusUnauthorized)
			}))
			c := mustPep(t, gw.URL, "acme", "orders-api", pep.WithInvalidator(inv))
			called := make(chan error, 1)
			go func() {
				_, err := c.Check(pep.WithToken(t.Context(), "revoked-token"), "orders", "read")
				called <- err
			}()
			closed := make(chan struct{})
			if underWay {
				<-arrived
				go func() { _ = c.Close(); close(closed) }()
				close(release)
			} else {
				require.ErrorIs(t, <-called, pep.ErrUnauthorized)
				_ = c.Close()
				close(closed)
			}
			<-closed
			n, all := inv.taken()
			require.Equal(t, 2, n, "the refused token's purge (identity and own digest) was not published before Close returned")
			require.Zero(t, all)
			if underWay {
				require.ErrorIs(t, <-called, pep.ErrUnauthorized)
			}
		})
	}
}

// deafPublisher's Publish ignores its context (a Redis client stuck on a
// dead connection) and returns only when stop is closed.
type deafPublisher struct {
	upSubscription
	entered, stop chan struct{}
	once          sync.Once
}

func (p *deafPublisher) Publish(context.Context, []byte) error {
	p.once.Do(func() { close(p.entered) })
	<-p.stop
	return nil
}

// closingHandler closes the client (self) on every warning it logs,
// counting the times.
type closingHandler struct {
	self   *atomic.Pointer[pep.Client]
	closes *atomic.Int32
}

func (closingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h closingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && h.closes.Add(1) < 50 {
		_ = h.self.Load().Close()
	}
	return nil
}
func (h closingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h closingHandler) WithGroup(string) slog.Handler      { return h }

// TestCloseReturnsWhateverTheInvalidatorDoes: Close waits for the
// publications under way, but never on user code without a bound: one
// Publish that ignores its context hung Close, and the replica's shutdown
// with it, for ever (a-fix13 F2); and a logger that closed the client on
// Close's own warning made Close call itself for ever (a-fix13b F1). One
// Close does the work and logs only once it is done; another waits for
// it. Close returns (within its 2 s for the purges and 2 s for the
// Invalidator's calls) before the Publish does, having warned.
func TestCloseReturnsWhateverTheInvalidatorDoes(t *testing.T) {
	t.Parallel()
	inv := &deafPublisher{entered: make(chan struct{}), stop: make(chan struct{})}
	var self atomic.Pointer[pep.Client]
	var closes atomic.Int32
	c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithHTTPClient(&http.Client{Transport: refused401}), pep.WithInvalidator(inv),
		pep.WithLogger(slog.New(closingHandler{&self, &closes})))
	require.NoError(t, err)
	self.Store(c)
	_, err = c.Check(pep.WithToken(t.Context(), "revoked-token"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	<-inv.entered
	require.NoError(t, c.Close(), "Close returned, the Publish still under way")
	require.NotZero(t, closes.Load(), "Close warned that a Publish outlived it, to a logger that closed the client again")
	close(inv.stop) // the goroutine it holds ends; goleak checks it does
}
