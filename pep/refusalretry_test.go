package pep_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

// blipPublisher fails every Publish until up, then takes the message.
type blipPublisher struct {
	up   time.Time
	mu   sync.Mutex
	msgs [][]byte
}

func (p *blipPublisher) Publish(_ context.Context, msg []byte) error {
	if time.Now().Before(p.up) {
		return errors.New("redis: connection refused")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, bytes.Clone(msg))
	return nil
}

func (p *blipPublisher) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	r.Heartbeat(time.Now())
	<-ctx.Done()
	return ctx.Err()
}

func (p *blipPublisher) taken() (n, all int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.msgs {
		if bytes.Equal(m, []byte{1, 'a'}) {
			all++
		}
	}
	return len(p.msgs), all
}

// TestOneRefusalAndAShortOutagePurgeThatTokenOnly: one refused token
// while the channel is down for 2 s is published as that token's purge once
// the channel is back, not as a purge of every replica's cache: the
// publisher's own pauses between tries (200 ms up to 1 s) are no wait for a
// publisher (a-fix10c F2: they aged the refusal past the one second after
// which a backlog becomes a purge of every cache).
func TestOneRefusalAndAShortOutagePurgeThatTokenOnly(t *testing.T) {
	t.Parallel()
	inv := &blipPublisher{up: time.Now().Add(2 * time.Second)}
	c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithHTTPClient(&http.Client{Transport: refused401}), pep.WithInvalidator(inv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Check(pep.WithToken(t.Context(), "expired-token-1"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	require.Eventually(t, func() bool { n, all := inv.taken(); return n >= 2 || all > 0 }, 10*time.Second, 5*time.Millisecond,
		"nothing was published after the channel came back")
	n, all := inv.taken()
	require.Zero(t, all, "one refused token and a 2 s blip purged every replica's whole cache (%d messages, overflows %d)", n, c.Stats().InvalidationRefusalOverflows)
	require.Equal(t, 2, n, "the token's own purge (identity and own digest)")
}
