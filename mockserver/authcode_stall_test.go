package mockserver_test

import (
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
)

// TestARedemptionStalledPastTheCodesExpirySpendsItOnce (a-last10b): h-srvmem10
// bounds the token of a redemption held up between its checks and its
// mint (expiresBy), but the code's spend record in the shared store lasts
// only until the code's expiry plus dpop.ReplayStoreMargin
// (spendCode: sharedRecord(..., sp.expires, ...)), and spendCode never
// asks whether the code has expired since redeemCode checked it. A
// redemption frozen (GC pause, SIGSTOP, VM migration: the clock function
// below jumps once, right when spendCode reads it) for longer than that
// margin past the code's expiry finds no record, writes its own, and is
// minted a token: the one code is redeemed twice, and no reuse is
// detected, so the first token is not revoked either (RFC 6749 4.1.2).
func TestARedemptionStalledPastTheCodesExpirySpendsItOnce(t *testing.T) {
	var (
		offset atomic.Int64 // nanoseconds added to the real clock
		armed  atomic.Bool
	)
	clock := func() time.Time {
		if armed.Load() {
			pcs := make([]uintptr, 32)
			frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
			for {
				fr, more := frames.Next()
				if strings.HasSuffix(fr.Function, ".spendCode") && armed.CompareAndSwap(true, false) {
					offset.Add(int64(3 * time.Minute)) // the process was frozen here
					break
				}
				if !more {
					break
				}
			}
		}
		return time.Now().Add(time.Duration(offset.Load()))
	}
	store := &sharedStore{keys: map[string]time.Time{}, clock: clock}
	f := startSharedFront(t, store, mockserver.WithFixture(webFixture()), mockserver.WithClock(clock))

	code := f.authCode("a", webRedirect)
	first := f.redeemCode("a", code)
	require.Equal(t, http.StatusOK, first.Status, string(first.Body))
	// The second redemption passes its checks within the code's minute,
	// then is held up for three minutes before it spends the code.
	offset.Add(int64(30 * time.Second))
	armed.Store(true)
	second := f.redeemCode("b", code)
	require.False(t, armed.Load(), "the clock never saw spendCode")
	require.NotEqual(t, http.StatusOK, second.Status,
		"one code redeemed twice (the second after a freeze between its checks and its spend): %s", second.Body)
}
