package pep_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// TestTokenNeverLeaks drives every path that produces an error or a log line
// while the gateway echoes the token back, and looks for it everywhere. The
// reference server never echoes a token, so the echoes are hooks; the
// granted case is the server's.
func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	echo := func(status int) func(secret string) gwHook {
		return func(secret string) gwHook {
			return func(w http.ResponseWriter, r *http.Request, _ int) bool {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", token="`+secret+`"`)
				writeJSON(w, status, map[string]string{
					"error":   "Echo " + r.Header.Get("Authorization"),
					"message": "you sent " + r.Header.Get("Authorization"),
				})
				return true
			}
		}
	}
	body := func(before, after string) func(secret string) gwHook {
		return func(secret string) gwHook { return bodyHook(before + secret + after) }
	}
	tests := []struct {
		name string
		hook func(secret string) gwHook // nil: the server answers
	}{
		{"401", echo(http.StatusUnauthorized)},
		{"403", echo(http.StatusForbidden)},
		{"400", echo(http.StatusBadRequest)},
		{"503 after retries", echo(http.StatusServiceUnavailable)},
		{"unknown status echoing the token", body(`{"status":"`, `","permissions":[]}`)},
		{"unknown pair status echoing the token", body(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"`, `"}]}`)},
		{"unparseable body holding the token", body("", "")},
		{"granted", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			secret := g.token(t, "alice") // alice reads orders
			if tt.hook != nil {
				g.setHook(tt.hook(secret))
			}
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
			texts = append(texts, errText(err), errText(d.Cause), fmt.Sprintf("%+v %v", d, d))
			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
			texts = append(texts, errText(err), fmt.Sprintf("%+v", r))
			perms, err := c.ListGranted(t.Context(), nil)
			texts = append(texts, errText(err), fmt.Sprintf("%+v", perms))
			_, err = c.Organizations(t.Context())
			texts = append(texts, errText(err), fmt.Sprintf("%+v", c.Stats()))

			require.NotEmpty(t, logs.String(), "the debug logger saw the calls")
			assert.NotContains(t, logs.String(), secret)
			for _, s := range texts {
				assert.NotContains(t, s, secret)
			}
		})
	}
}
