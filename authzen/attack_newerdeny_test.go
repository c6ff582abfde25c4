package authzen_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// TestAttackAnswerPermitOutlivesANewerDenial (a-client15 F3, authzen):
// NoCache promises "a later call never gets an older decision than the one
// this call got". Evaluations of doc 2 and doc 3 in two chunks reads doc
// 2's permit; while doc 3 is asked alice's permit is revoked and an
// Evaluate of doc 2 with NoCache gets the PDP's denial, which the cache
// now holds. The Evaluations, which returns after it, still permits doc 2.
func TestAttackAnswerPermitOutlivesANewerDenial(t *testing.T) {
	t.Parallel()
	doc2, doc3 := req, req
	doc2.Resource.ID, doc3.Resource.ID = "2", "3"
	var revoked atomic.Bool
	doc2Asked := make(chan struct{})
	var doc2Once, waitOnce sync.Once
	var c *authzen.Client
	var newer authzen.Decision
	var newerErr error
	c, _ = standIn(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"id":"3"`)) {
			<-doc2Asked
			waitOnce.Do(func() {
				revoked.Store(true)
				newer, newerErr = c.Evaluate(r.Context(), doc2, authzen.NoCache())
			})
		}
		decision := strconv.FormatBool(!revoked.Load())
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/access/v1/evaluation" {
			_, _ = io.WriteString(w, `{"decision":`+decision+`}`)
			return
		}
		_, _ = io.WriteString(w, `{"evaluations":[{"decision":`+decision+`}]}`)
		if bytes.Contains(body, []byte(`"id":"2"`)) {
			doc2Once.Do(func() { close(doc2Asked) })
		}
	}, authzen.WithBatchSize(1))
	ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{doc2, doc3})
	require.NoError(t, newerErr)
	require.False(t, newer.Allowed(), "the NoCache Evaluate during the wait: the PDP's newer denial")
	require.False(t, evaluated(t, c, doc2).Allowed(), "the cache holds the newer denial")
	require.Len(t, ds, 2)
	assert.False(t, ds[1].Allowed())
	assert.False(t, ds[0].Allowed(),
		"doc 2: the Evaluations returned after the client had the PDP's newer denial, and still permitted it")
}
