package pep_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnAnswerAboutAnUncachedPairPurgesNothing: a-fix12d F1. A 200 the
// client read and used in full, about a pair the cache never holds (names
// past maxCachedNames), stored nothing, so its Writer closed as if the
// answer were unusable and purged every cached decision of the token: any
// call with a long resource name (user input reaching Check) wiped the
// token's GRANTs, and the next gateway outage refused (orders, read),
// which the cache was to carry through it. The decoder now says it read
// the answer (Writer.Used).
func TestAnAnswerAboutAnUncachedPairPurgesNothing(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, noRetry)
	c.SetToken(g.token(t, "alice"))
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Allowed(), "alice reads orders: %v", d.Cause)

	// A fully read, well-formed answer about a pair too long to cache.
	_, err = c.Check(t.Context(), strings.Repeat("r", 600), "read")
	require.NoError(t, err)

	g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool { // the gateway fails
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	d, err = c.Check(t.Context(), "orders", "read")
	g.setHook(nil)
	assert.True(t, d.Allowed() && d.Cached, "the cached GRANT of (orders, read) was purged by an answer about another pair (err=%v cause=%v)", err, d.Cause)
}
