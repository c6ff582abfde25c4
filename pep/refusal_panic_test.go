package pep_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// A 401 is handled (the token's cached decisions purged, tokenExpired
// emitted) once the gateway's answer is known, whatever the user code that
// runs after it does: a panic of the user's tracing SDK on the 401's span
// (recovered by the middleware, which refuses that one request) never
// leaves the refused token served its cached GRANTs. (It used to: the 401
// handler ran only once the exchange returned.)
func TestARefusalIsHandledEvenWhenUserCodePanicsAfterThe401(t *testing.T) {
	t.Parallel()
	for _, sdkPanics := range []bool{false, true} {
		t.Run(map[bool]string{false: "no panic", true: "the SDK panics on the 401's span"}[sdkPanics], func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			var expired atomic.Int32
			opts := []pep.Option{noRetry, pep.WithEventHandler(func(ev events.Event) {
				if ev.Kind == events.TokenExpired {
					expired.Add(1)
				}
			})}
			if sdkPanics {
				opts = append(opts, pep.WithTracerProvider(gatewaytest.ErrorPanicTracerProvider{}))
			}
			c := g.newClient(t, opts...)
			tok := g.token(t, "alice", mockserver.TokenClient(testClient))
			c.SetToken(tok)

			d, err := c.Check(t.Context(), "orders", "read") // GRANT, cached
			require.NoError(t, err)
			requireGatewayDecision(t, d, pep.Grant)

			g.revoke(t, tok)
			// Not cached: asked of the gateway, which answers 401.
			p := recoverCall(func() { _, err = c.Check(t.Context(), "orders", "write") })
			require.Equal(t, sdkPanics, p != nil, "the SDK's panic goes on on the caller's goroutine")
			require.Equal(t, int32(1), expired.Load(), "tokenExpired, once")

			// The cached GRANT is gone: the call goes to the gateway (and
			// the SDK panics again on its 401), or is refused.
			p = recoverCall(func() { d, err = c.Check(t.Context(), "orders", "read") })
			require.False(t, p == nil && err == nil && d.Allowed(), "a token the gateway refused (401) is still served its cached GRANT")
			require.Equal(t, sdkPanics, p != nil, "asked of the gateway again, not answered from the cache")
		})
	}
}
