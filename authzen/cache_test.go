package authzen_test

import (
	"bytes"
	"context"
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
	"github.com/orgauthz/orgauthz/internal/frozentest"
)

// TestEveryAnswerReplacesTheCachedDecision: whatever the PDP answers for an
// evaluation replaces what the cache held for it. An answer the cache does
// not keep (a denial that explains itself in its context, an item's error)
// removes the older permit: the next Evaluate asks the PDP instead of
// serving a decision older than the one the client has had since. A real
// PDP does not change its mind on demand, so a stand-in answers.
func TestEveryAnswerReplacesTheCachedDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// after is the PDP's answer once the permission is revoked.
		after string
		// call asks the PDP after the change, past the cache.
		call func(t *testing.T, c *authzen.Client)
	}{
		{"a denial with reasons (Evaluate, NoCache)", `{"decision":false,"context":{"reason":"the user's role was removed"}}`,
			func(t *testing.T, c *authzen.Client) {
				d := evaluated(t, c, req, authzen.NoCache())
				assert.False(t, d.Allowed())
			}},
		{"an item's error (Evaluations, NoCache)", `{"evaluations":[{"decision":false,"context":{"error":{"status":404,"message":"no such document"}}}]}`,
			func(t *testing.T, c *authzen.Client) {
				ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{req}, authzen.NoCache())
				assert.False(t, ds[0].Allowed())
			}},
		{"a denial with reasons under a semantic", `{"evaluations":[{"decision":false,"context":{"reason":"revoked"}}]}`,
			func(t *testing.T, c *authzen.Client) {
				ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{req}, authzen.WithSemantic(authzen.DenyOnFirstDeny))
				assert.False(t, ds[0].Allowed())
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var revoked atomic.Bool
			var asked atomic.Int32
			c, _ := standIn(t, func(w http.ResponseWriter, _ *http.Request) {
				asked.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if revoked.Load() {
					_, _ = w.Write([]byte(tt.after))
					return
				}
				_, _ = w.Write([]byte(`{"decision":true}`))
			})
			d := evaluated(t, c, req)
			require.True(t, d.Allowed()) // cached

			revoked.Store(true)
			tt.call(t, c)
			revoked.Store(false) // a new question would be answered afresh

			before := asked.Load()
			d = evaluated(t, c, req)
			assert.False(t, d.Cached, "the older permit is served in place of the PDP's newer answer")
			assert.Equal(t, before+1, asked.Load(), "the Evaluate asks the PDP")
		})
	}
}

// TestEvaluationsReadsItsHitsAgainAfterTheWait (a-client13 F2): an
// Evaluations call reads its first item from the cache (a permit) and
// waits for the PDP about the second. alice's permit is revoked at the PDP
// meanwhile, and the credential's decisions are purged (Purge, as an
// invalidation message does): the first item is read again when the wait
// is over and, the cache no longer serving it, asked again: denied. Past
// the call's deadline (the process frozen meanwhile) it is not asked but
// fails closed. Without the purge the permit stands (within its TTL).
func TestEvaluationsReadsItsHitsAgainAfterTheWait(t *testing.T) {
	t.Parallel()
	doc2 := req
	doc2.Resource.ID = "2"
	doc3 := req
	doc3.Resource.ID = "3"
	tests := []struct {
		name  string
		purge bool
		late  bool
		// chunks (a-client14b F1) asks about doc 2 and doc 3 in two chunks
		// (WithBatchSize(1)), nothing cached: doc 2 is answered with a
		// permit, and while doc 3 is asked alice's permits are revoked
		// and the credential purged. doc 2's permit, read before that
		// wait, is asked again after it.
		chunks bool
		// wantAsked counts the PDP's requests of the call.
		wantAsked   int32
		wantAllowed bool
	}{
		{name: "the entry still serves", wantAsked: 1, wantAllowed: true},
		{name: "purged meanwhile: asked again", purge: true, wantAsked: 2},
		{name: "purged, and the deadline passed: fails closed, nothing sent", purge: true, late: true, wantAsked: 1},
		{name: "an answer's permit, purged while a later chunk waits: asked again", chunks: true, wantAsked: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var revoked atomic.Bool
			var asked atomic.Int32
			var c *authzen.Client
			ctx := frozentest.NewUnfired(time.Hour)
			doc2Asked := make(chan struct{})
			var doc2Once sync.Once
			opts := []authzen.Option{authzen.WithTimeout(2 * time.Hour)}
			if tt.chunks {
				opts = append(opts, authzen.WithBatchSize(1))
			}
			c, _ = standIn(t, func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				body, _ := io.ReadAll(r.Body)
				decision := strconv.FormatBool(!revoked.Load()) // read before the wait below: doc 2's
				switch {
				case tt.chunks && bytes.Contains(body, []byte(`"id":"2"`)):
					doc2Once.Do(func() { close(doc2Asked) })
				case tt.chunks && bytes.Contains(body, []byte(`"id":"3"`)):
					<-doc2Asked
					revoked.Store(true)
					decision = "false"
					if err := c.Purge(context.Background(), pepToken); err != nil {
						panic(err) // the test's goroutine is waiting: the panic fails the test
					}
				case tt.chunks:
				case bytes.Contains(body, []byte(`"id":"2"`)): // the PDP answers the second item
					revoked.Store(true)
					if tt.purge {
						if err := c.Purge(context.Background(), pepToken); err != nil {
							panic(err) // the test's goroutine is waiting: the panic fails the test
						}
					}
					if tt.late {
						ctx.Pass()
					}
					decision = strconv.FormatBool(!revoked.Load())
				}
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/access/v1/evaluation" {
					_, _ = io.WriteString(w, `{"decision":`+decision+`}`)
					return
				}
				_, _ = io.WriteString(w, `{"evaluations":[{"decision":`+decision+`}]}`) // one item a request here
			}, opts...)
			items := []authzen.Request{req, doc2}
			if tt.chunks {
				items = []authzen.Request{doc2, doc3}
			} else {
				require.True(t, evaluated(t, c, req).Allowed()) // cached
			}

			before := asked.Load()
			ds, err := c.Evaluations(ctx, authzen.Request{}, items)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			assert.Equal(t, tt.wantAllowed, ds[0].Allowed())
			assert.Equal(t, tt.wantAllowed, ds[0].Cached)
			if tt.late {
				require.ErrorIs(t, ds[0].Cause, context.DeadlineExceeded)
				require.ErrorIs(t, ds[1].Cause, context.DeadlineExceeded)
			} else {
				require.NoError(t, ds[0].Cause)
			}
			assert.False(t, ds[1].Allowed())
			assert.Equal(t, tt.wantAsked, asked.Load()-before)
		})
	}
}
