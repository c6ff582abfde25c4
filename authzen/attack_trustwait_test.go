package authzen_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
)

// TestAttackAnswerPermitOutlivesTheChannelsTrust (a-client15 F1, authzen):
// Evaluations of doc 2 and doc 3 in two chunks (WithBatchSize(1)) on a
// client with an Invalidator. doc 2's permit is read; while doc 3 is asked
// the invalidation channel breaks (Lost: the cache serves nothing, purges
// may be missed), and alice's permits are revoked at the PDP, whose purge
// this replica never hears. doc 2's permit, read before that wait, leaves
// the call unchecked: Holds reads the purge count and the TTL, not the
// channel's trust, although the cache would no longer serve it.
func TestAttackAnswerPermitOutlivesTheChannelsTrust(t *testing.T) {
	t.Parallel()
	doc2, doc3 := req, req
	doc2.Resource.ID, doc3.Resource.ID = "2", "3"
	ch := invalidationtest.NewLong()
	var revoked atomic.Bool
	doc2Asked := make(chan struct{})
	var doc2Once, lostOnce sync.Once
	c, _ := standIn(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"id":"3"`)) {
			<-doc2Asked
			lostOnce.Do(func() {
				ch.Lose(errors.New("connection reset"))
				revoked.Store(true) // the revocation's purge is published on a channel this replica lost
			})
		}
		decision := strconv.FormatBool(!revoked.Load())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"evaluations":[{"decision":`+decision+`}]}`)
		if bytes.Contains(body, []byte(`"id":"2"`)) {
			doc2Once.Do(func() { close(doc2Asked) })
		}
	}, authzen.WithBatchSize(1), authzen.WithInvalidator(ch), authzen.WithTimeout(time.Hour))
	<-ch.Joined
	ch.Beat(time.Now())
	ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{doc2, doc3})
	require.Len(t, ds, 2)
	assert.False(t, ds[1].Allowed(), "doc 3, asked after the revocation")
	assert.False(t, ds[0].Allowed(),
		"doc 2's permit, read before the channel was lost, left the call unchecked; alice was revoked meanwhile")
}
