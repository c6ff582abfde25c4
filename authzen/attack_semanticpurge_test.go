package authzen_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
)

// TestAttackOtherTokensPurgesFailASemanticCallClosed (a-client15 F4,
// authzen): under DenyOnFirstDeny or PermitOnFirstPermit (and NoCache)
// Evaluations never reads the cache, so Reconfirm has no group to read its
// own answers back from: any purge of any token while it waits sends its
// permits back to the PDP, and one more during that re-ask fails them
// closed. Other replicas publish a purge for every token refused there
// (401), which anyone can cause with a made-up token. Two such purges,
// one during each wait, deny alice's DenyOnFirstDeny Evaluations of doc 2
// and doc 3, which the PDP permitted every time it was asked.
func TestAttackOtherTokensPurgesFailASemanticCallClosed(t *testing.T) {
	t.Parallel()
	doc2, doc3 := req, req
	doc2.Resource.ID, doc3.Resource.ID = "2", "3"
	ch := invalidationtest.NewLong()
	strangerPurge := func() {
		msg := append([]byte{1, 'i'}, make([]byte, 32)...)
		_, _ = rand.Read(msg[2:])
		ch.Deliver(msg) // a made-up token refused at another replica
	}
	var asked atomic.Int32
	var doc2Once sync.Once
	doc2Asked := make(chan struct{})
	c, _ := standIn(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := asked.Add(1)
		switch {
		case n == 2: // doc 3, the call's second wait (the chunks go one after the other)
			<-doc2Asked
			strangerPurge()
		case n > 2: // the re-ask
			strangerPurge()
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"evaluations":[{"decision":true}]}`)
		if bytes.Contains(body, []byte(`"id":"2"`)) {
			doc2Once.Do(func() { close(doc2Asked) })
		}
	}, authzen.WithBatchSize(1), authzen.WithInvalidator(ch), authzen.WithTimeout(time.Hour))
	<-ch.Joined
	ch.Beat(time.Now())
	ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{doc2, doc3}, authzen.WithSemantic(authzen.DenyOnFirstDeny))
	require.Len(t, ds, 2)
	t.Logf("PDP requests: %d", asked.Load())
	for i, d := range ds {
		assert.NoError(t, d.Cause, "item %d", i)
		assert.True(t, d.Allowed(), "item %d: permitted by the PDP every time it was asked", i)
	}
}
