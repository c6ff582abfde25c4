package pep_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// TestTokenNeverLeaks: on the reference server's granted path, every call
// and its debug log, events, results and Stats hold nothing of the token.
// Gateways that echo the token back, in an error, a status or a body of
// any kind, are TestTokenEchoesNeverReachAString's.
func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	secret := g.token(t, "alice") // alice reads orders
	var logs bytes.Buffer
	c := g.newClient(t, fastRetry,
		pep.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		pep.WithEventHandler(func(ev events.Event) {
			if ev.Err != nil {
				assert.NotContains(t, ev.Err.Error(), secret)
			}
		}))
	c.SetToken(secret)

	d, texts := everyCallsTexts(t, c)
	require.True(t, d.Allowed())
	require.NotEmpty(t, logs.String(), "the debug logger saw the calls")
	texts = append(texts, logs.String())
	for _, s := range texts {
		requireNoEcho(t, s, secret)
	}
}
