package authzen_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// TestAttackForgottenDenial (a-fix15b F2, authzen): a-client15 F3's case
// with the PDP's newer denial explaining itself (a response context with a
// reason, as AuthZEN PDPs commonly answer), which the cache does not keep
// but Forgets, under the default cache. Evaluations asks about doc 2 and
// doc 3 in two chunks; doc 2 is permitted; while doc 3 is asked alice is
// revoked and a NoCache Evaluate of doc 2 gets the PDP's newer denial. The
// denial removed the cache's permit and left nothing; core.Confirm then
// finds nothing under doc 2's key and holds the older permit by its
// request's Stamp (no purge came): Evaluations returns doc 2 permitted
// although the client already had the PDP's newer denial. The control,
// a bare denial (kept by the cache), replaces the permit.
func TestAttackForgottenDenial(t *testing.T) {
	t.Parallel()
	for _, denial := range []string{`{"decision":false}`, `{"decision":false,"context":{"reason_user":{"en":"access revoked"}}}`} {
		t.Run(denial, func(t *testing.T) {
			t.Parallel()
			doc2, doc3 := req, req
			doc2.Resource.ID, doc3.Resource.ID = "2", "3"
			var revoked atomic.Bool
			var c *authzen.Client
			doc2Asked := make(chan struct{})
			var doc2Once, duringOnce sync.Once
			c, _ = standIn(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/access/v1/evaluation" { // the NoCache Evaluate during the wait
					if revoked.Load() {
						_, _ = io.WriteString(w, denial)
					} else {
						_, _ = io.WriteString(w, `{"decision":true}`)
					}
					return
				}
				switch {
				case bytes.Contains(body, []byte(`"id":"2"`)):
					doc2Once.Do(func() { close(doc2Asked) })
				case bytes.Contains(body, []byte(`"id":"3"`)):
					<-doc2Asked
					duringOnce.Do(func() {
						revoked.Store(true)
						d, err := c.Evaluate(context.Background(), doc2, authzen.NoCache())
						if err != nil || d.Allowed() {
							panic(fmt.Sprintf("the NoCache Evaluate during the wait: %v, %v", d.Allowed(), err))
						}
					})
				}
				if revoked.Load() && bytes.Contains(body, []byte(`"id":"2"`)) {
					_, _ = io.WriteString(w, `{"evaluations":[`+denial+`]}`)
					return
				}
				_, _ = io.WriteString(w, `{"evaluations":[{"decision":`+fmt.Sprint(!revoked.Load() || bytes.Contains(body, []byte(`"id":"3"`)))+`}]}`)
			}, authzen.WithBatchSize(1))
			ds, err := c.Evaluations(t.Context(), authzen.Request{}, []authzen.Request{doc2, doc3})
			require.NoError(t, err)
			require.Len(t, ds, 2)
			assert.False(t, ds[0].Allowed(), "doc 2: the client had the PDP's newer denial before Evaluations returned, yet it returns the older permit")
		})
	}
}
