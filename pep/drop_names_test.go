package pep_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// encWide is how pep's drop name once spelled a wildcard pair (resource,
// every scope): a 16-bit resource length, a 16-bit scope length, the
// resource.
func encWide(resource string) string {
	n := len(resource)
	return string([]byte{byte(n >> 8), byte(n), 0, 0}) + resource
}

// TestWildcardsSpellingOthersNeverUnfenceAnOlderGrant: a ListGranted of
// one long wildcard resource whose bytes spell six wildcards' names, one
// of them "orders", then one of the six, while Check(orders, read) is in
// flight across carol's revocation: the Check's old GRANT is not stored
// and served afterwards (a-drop17b F1, high: the drop's name wrote
// two-byte lengths, the two sets shared it, and the cache kept the first
// one's coverage, which did not cover orders). The controls (the six
// alone, orders alone) show the drop fences it when no name is shared.
func TestWildcardsSpellingOthersNeverUnfenceAnOlderGrant(t *testing.T) {
	t.Parallel()
	r0 := strings.Repeat("a", 10)
	six := []string{r0, "orders", strings.Repeat("d", 100), strings.Repeat("b", 0x7F7F), strings.Repeat("c", 0x7F00), strings.Repeat("e", 0x0103)}
	long := r0
	for _, s := range six[1:] {
		long += encWide(s)
	}
	require.Len(t, long, 65536+10)
	var sixRes []pep.Resource
	for _, s := range six {
		sixRes = append(sixRes, pep.Resource{Name: s})
	}
	for _, tt := range []struct {
		name  string
		lists [][]pep.Resource
	}{
		{"orders alone (control)", [][]pep.Resource{{{Name: "orders"}}}},
		{"the six wildcards alone (control)", [][]pep.Resource{sixRes}},
		{"the long wildcard, then the six", [][]pep.Resource{{{Name: long}}, sixRes}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), noRetry)
			c.SetToken(g.token(t, "carol"))
			var once atomic.Bool
			g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
				body, _ := readBodyString(r)
				if !strings.Contains(body, `"read"`) && strings.Contains(body, `"orders"`) {
					// A gateway that lists only what it grants: the
					// wildcards' answer says nothing of orders (revoked).
					rec := httptest.NewRecorder()
					r2 := r.Clone(r.Context())
					b2 := strings.Replace(body, `"orders"`, `"nosuch"`, 1)
					r2.Body, r2.ContentLength = io.NopCloser(strings.NewReader(b2)), int64(len(b2))
					g.srv.ServeHTTP(rec, r2)
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.WriteHeader(rec.Code)
					_, _ = w.Write(rec.Body.Bytes())
					return true
				}
				if !strings.Contains(body, `"read"`) || !once.CompareAndSwap(false, true) {
					return false
				}
				// The gateway decides the Check (GRANT), then bob's roles
				// are revoked, then the wildcards are asked (their answers
				// no longer list orders), then the Check's answer arrives.
				rec := httptest.NewRecorder()
				r.Body = io.NopCloser(strings.NewReader(body))
				g.srv.ServeHTTP(rec, r)
				g.unassign(t, "carol")
				for _, l := range tt.lists {
					_, err := c.ListGranted(context.Background(), l) // the drop is made as it is sent
					t.Logf("ListGranted: %v", err)
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return true
			})
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, once.Load())
			require.Equal(t, pep.Grant, d.Status)
			d, err = c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.Equal(t, pep.Deny, d.Status, "stale GRANT (cached %v): the answer of a Check sent before a wildcard covering orders, and before the revocation, was stored and served", d.Cached)
		})
	}
}
