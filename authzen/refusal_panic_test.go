package authzen_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// A 401 of the PDP is handled (the token's cached permits purged) once the
// answer is known, whatever the user code that runs after it does: a
// panic of the user's tracing SDK on the 401's span never leaves the
// refused token served its cached permits (it used to).
func TestARefusalIsHandledEvenWhenUserCodePanicsAfterThe401(t *testing.T) {
	t.Parallel()
	for _, sdkPanics := range []bool{false, true} {
		t.Run(map[bool]string{false: "no panic", true: "the SDK panics on the 401's span"}[sdkPanics], func(t *testing.T) {
			t.Parallel()
			var revoked atomic.Bool
			var opts []authzen.Option
			if sdkPanics {
				opts = append(opts, authzen.WithTracerProvider(gatewaytest.ErrorPanicTracerProvider{}))
			}
			c, _ := standIn(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(`{"error":"invalid_token"}`))
					return
				}
				_, _ = w.Write([]byte(`{"decision":true}`))
			}, opts...)
			d, err := c.Evaluate(t.Context(), req)
			require.NoError(t, err)
			require.True(t, d.Allowed()) // cached

			revoked.Store(true)
			other := req
			other.Resource.ID = "2" // not cached: asked of the PDP, 401
			require.Equal(t, sdkPanics, recovered(func() { _, _ = c.Evaluate(t.Context(), other) }), "the SDK's panic goes on on the caller's goroutine")

			// The cached permit is gone: the call goes to the PDP (and the
			// SDK panics again on its 401), or is refused.
			p := recovered(func() { d, err = c.Evaluate(t.Context(), req) })
			require.False(t, !p && err == nil && d.Allowed(), "a token the PDP refused (401) is still served its cached permit")
			require.Equal(t, sdkPanics, p, "asked of the PDP again, not answered from the cache")
		})
	}
}

// recovered runs f and reports whether it panicked.
func recovered(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}
