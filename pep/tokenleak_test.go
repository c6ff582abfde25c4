package pep_test

import (
	"bytes"
	"fmt"
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

	var texts []string
	d, err := c.Check(t.Context(), "orders", "read")
	require.True(t, d.Allowed())
	texts = append(texts, errText(err), errText(d.Cause), fmt.Sprintf("%+v %v", d, d))
	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	texts = append(texts, errText(err), fmt.Sprintf("%+v", r))
	perms, err := c.ListGranted(t.Context(), nil)
	texts = append(texts, errText(err), fmt.Sprintf("%+v", perms))
	_, err = c.Organizations(t.Context())
	texts = append(texts, errText(err), fmt.Sprintf("%+v", c.Stats()))

	require.NotEmpty(t, logs.String(), "the debug logger saw the calls")
	texts = append(texts, logs.String())
	for _, s := range texts {
		requireNoEcho(t, s, secret)
	}
}
