package pep_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// heldAnswer is a transport whose first request reaches the server at once
// (it decides then) while its answer waits for release; later requests
// pass.
type heldAnswer struct {
	base    http.RoundTripper
	once    sync.Once
	decided chan struct{}
	release chan struct{}
}

func (h *heldAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(r)
	first := false
	h.once.Do(func() { first = true })
	if err != nil || !first {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	close(h.decided)
	<-h.release
	return resp, nil
}

// TestCheckBegunAfterPurgeSharesNoEarlierRequest: a Check of a token is in
// flight, its GRANT decided and on its way, when the token is revoked and
// Purged; a Check of it that begins after Purge returned sends a request
// of its own (DENY), rather than sharing the earlier one's GRANT; after
// Purge and PurgeAll alike.
func TestCheckBegunAfterPurgeSharesNoEarlierRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		purge func(ctx context.Context, c *pep.Client, tok string) error
	}{
		{"Purge", func(ctx context.Context, c *pep.Client, tok string) error { return c.Purge(ctx, tok) }},
		{"PurgeAll", func(ctx context.Context, c *pep.Client, _ string) error { return c.PurgeAll(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startReference(t)
			held := &heldAnswer{base: g.Client().Transport, decided: make(chan struct{}), release: make(chan struct{})}
			c := g.newClient(t, pep.WithHTTPClient(&http.Client{Transport: held}), pep.WithRetry(0, 0, 0), pep.WithTimeout(time.Minute))
			t.Cleanup(func() { _ = c.Close() })
			tok := g.token(t, "bob", mockserver.TokenClient(testClient))
			check := func() pep.Decision {
				d, _ := c.Check(pep.WithToken(context.Background(), tok), "orders", "read")
				return d
			}
			first := make(chan pep.Decision, 1)
			go func() { first <- check() }()
			<-held.decided

			g.revoke(t, tok)
			require.NoError(t, tc.purge(t.Context(), c, tok))
			late := make(chan pep.Decision, 1)
			go func() { late <- check() }()
			var d pep.Decision
			select {
			case d = <-late:
			case <-time.After(5 * time.Second):
				// It joined the held request (the defect): release it, so
				// that the failure shows what it returned.
				close(held.release)
				d = <-late
				<-first
				require.False(t, d.Allowed(), "a Check begun after Purge shared a request sent before it")
				return
			}
			close(held.release)
			require.Equal(t, pep.Deny, d.Status, "the revoked token's own request")
			require.True(t, (<-first).Allowed(), "the Check begun before Purge keeps its answer")
		})
	}
}
