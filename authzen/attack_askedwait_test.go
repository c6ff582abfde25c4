package authzen_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// TestAttackAskedItemIsNotReadAgainAfterTheWait (a-client14b F1, authzen):
// Evaluations reads item 1 from the cache (a permit) and asks the PDP
// about item 2 (doc 2). While item 2 is asked the credential is purged
// (an invalidation message), so Reconfirm asks about item 1 again; while
// that re-ask waits, alice's permits are revoked at the PDP and the
// credential purged again. Item 1 comes back denied; item 2's permit, read
// before that wait, is returned though the purge came after it.
func TestAttackAskedItemIsNotReadAgainAfterTheWait(t *testing.T) {
	doc2 := req
	doc2.Resource.ID = "2"
	var revoked atomic.Bool
	var inCall atomic.Bool
	var n atomic.Int32
	var c *authzen.Client
	c, _ = standIn(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if inCall.Load() {
			switch n.Add(1) {
			case 1: // item 2: the hit goes stale meanwhile
				if !bytes.Contains(body, []byte(`"id":"2"`)) {
					panic("the call's first request is not item 2's")
				}
				if err := c.Purge(context.Background(), pepToken); err != nil {
					panic(err)
				}
			case 2: // the re-ask of item 1: revoked and purged meanwhile
				revoked.Store(true)
				if err := c.Purge(context.Background(), pepToken); err != nil {
					panic(err)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		decision := strconv.FormatBool(!revoked.Load())
		if r.URL.Path == "/access/v1/evaluation" {
			_, _ = io.WriteString(w, `{"decision":`+decision+`}`)
			return
		}
		_, _ = io.WriteString(w, `{"evaluations":[{"decision":`+decision+`}]}`)
	}, authzen.WithTimeout(2*time.Hour))
	require.True(t, evaluated(t, c, req).Allowed()) // cached
	inCall.Store(true)
	ds, err := c.Evaluations(t.Context(), authzen.Request{}, []authzen.Request{req, doc2})
	require.NoError(t, err)
	require.Len(t, ds, 2)
	require.Equal(t, int32(2), n.Load(), "item 1 was asked again")
	t.Logf("item 1 allowed %v, item 2 allowed %v", ds[0].Allowed(), ds[1].Allowed())
	assert.False(t, ds[0].Allowed())
	assert.False(t, ds[1].Allowed(),
		"item 2's permit, read before the call waited again, left the client after the credential's purge")
}
