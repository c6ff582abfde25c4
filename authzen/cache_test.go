package authzen_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
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
//
// In chunks (a-client14b F1, a-client15 F1, F3, F4) the same holds of an
// answer's permit: it leaves the call only if the cache would serve it now
// (core.Confirm): the cache's entry for it, the newest decision the client
// had, wins; with none there, its request's Stamp must hold (no purge, the
// channel trusted throughout).
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
		// during, in chunks, replaces the revocation and purge while doc 3
		// is asked; bus gives the client an invalidation channel, trusted
		// when the call begins; opts are the call's.
		during func(e *chunkWait)
		bus    bool
		opts   []authzen.CallOption
		// reasons makes the PDP's denials carry a response context.
		reasons bool
		// wantAsked counts the PDP's requests of the call; wantAllowed is
		// the first item's decision, read from the cache (Cached) when it
		// is a hit or denialCached; secondAllowed the second's.
		wantAsked                  int32
		wantAllowed, secondAllowed bool
		denialCached               bool
	}{
		{name: "the entry still serves", wantAsked: 1, wantAllowed: true},
		{name: "purged meanwhile: asked again", purge: true, wantAsked: 2},
		{name: "purged, and the deadline passed: fails closed, nothing sent", purge: true, late: true, wantAsked: 1},
		{name: "an answer's permit, purged while a later chunk waits: asked again", chunks: true, wantAsked: 3},
		// a-client15 F1: the channel is lost (the cache serves nothing,
		// purges may be missed) and alice is revoked, whose purge this
		// replica never hears: doc 2's permit is asked again.
		{name: "an answer's permit, the channel lost and alice revoked unheard while a later chunk waits: asked again",
			chunks: true, bus: true, wantAsked: 3, during: func(e *chunkWait) {
				e.ch.Lose(errors.New("connection reset"))
				e.revoked.Store(true)
			}},
		// a-client15 F3: an Evaluate with NoCache gets the PDP's newer
		// denial of doc 2, which the cache holds: it replaces the permit,
		// without asking again.
		{name: "an answer's permit, a NoCache Evaluate gets the newer denial while a later chunk waits: the denial wins",
			chunks: true, wantAsked: 3, denialCached: true, during: func(e *chunkWait) {
				e.revoked.Store(true)
				if d, err := e.c.Evaluate(context.Background(), e.doc2, authzen.NoCache()); err != nil || d.Allowed() {
					panic(fmt.Sprintf("the NoCache Evaluate during the wait: %v, %v", d.Allowed(), err))
				}
			}},
		// a-fix15b F2: the same with the PDP's newer denial explaining
		// itself (a response context with a reason), which the cache does
		// not keep but forgets, removing the permit: nothing under doc 2's
		// key is no proof that nothing newer happened, so doc 2 is asked
		// again (the default cache; the older permit used to leave by its
		// request's Stamp).
		{name: "an answer's permit, a NoCache Evaluate gets the newer denial with reasons while a later chunk waits: asked again",
			chunks: true, reasons: true, wantAsked: 4, during: func(e *chunkWait) {
				e.revoked.Store(true)
				if d, err := e.c.Evaluate(context.Background(), e.doc2, authzen.NoCache()); err != nil || d.Allowed() {
					panic(fmt.Sprintf("the NoCache Evaluate during the wait: %v, %v", d.Allowed(), err))
				}
			}},
		// a-client15 F4: under DenyOnFirstDeny the call reads no cached
		// decision, but it stores its answers and reads them back: another
		// replica's purge of a stranger's made-up token (refused there)
		// sends nothing back to the PDP.
		{name: "DenyOnFirstDeny, a stranger's token purged by another replica while a later chunk waits: nothing asked again",
			chunks: true, bus: true, opts: []authzen.CallOption{authzen.WithSemantic(authzen.DenyOnFirstDeny)},
			wantAsked: 2, wantAllowed: true, secondAllowed: true, during: func(e *chunkWait) {
				msg := append([]byte{1, 'i'}, make([]byte, 32)...)
				_, _ = rand.Read(msg[2:])
				e.ch.Deliver(msg)
			}},
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
			e := &chunkWait{ch: invalidationtest.NewLong(), revoked: &revoked, doc2: doc2}
			if tt.bus {
				opts = append(opts, authzen.WithInvalidator(e.ch))
			}
			var duringOnce sync.Once
			c, _ = standIn(t, func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				body, _ := io.ReadAll(r.Body)
				decision := strconv.FormatBool(!revoked.Load()) // read before the wait below: doc 2's
				switch {
				case tt.chunks && bytes.Contains(body, []byte(`"id":"2"`)):
					doc2Once.Do(func() { close(doc2Asked) })
				case tt.chunks && bytes.Contains(body, []byte(`"id":"3"`)):
					<-doc2Asked
					duringOnce.Do(func() {
						if tt.during != nil {
							tt.during(e)
							return
						}
						revoked.Store(true)
						if err := c.Purge(context.Background(), pepToken); err != nil {
							panic(err) // the test's goroutine is waiting: the panic fails the test
						}
					})
					decision = strconv.FormatBool(!revoked.Load())
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
				answer := `{"decision":` + decision + `}`
				if tt.reasons && decision == "false" {
					answer = `{"decision":false,"context":{"reason_user":{"en":"access revoked"}}}`
				}
				if r.URL.Path == "/access/v1/evaluation" {
					_, _ = io.WriteString(w, answer)
					return
				}
				_, _ = io.WriteString(w, `{"evaluations":[`+answer+`]}`) // one item a request here
			}, opts...)
			e.c = c
			if tt.bus {
				<-e.ch.Joined
				e.ch.Beat(time.Now())
			}
			items := []authzen.Request{req, doc2}
			if tt.chunks {
				items = []authzen.Request{doc2, doc3}
			} else {
				require.True(t, evaluated(t, c, req).Allowed()) // cached
			}

			before := asked.Load()
			ds, err := c.Evaluations(ctx, authzen.Request{}, items, tt.opts...)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			assert.Equal(t, tt.wantAllowed, ds[0].Allowed())
			assert.Equal(t, tt.wantAllowed && !tt.chunks || tt.denialCached, ds[0].Cached)
			if tt.late {
				require.ErrorIs(t, ds[0].Cause, context.DeadlineExceeded)
				require.ErrorIs(t, ds[1].Cause, context.DeadlineExceeded)
			} else {
				require.NoError(t, ds[0].Cause)
			}
			assert.Equal(t, tt.secondAllowed, ds[1].Allowed())
			assert.Equal(t, tt.wantAsked, asked.Load()-before)
		})
	}
}

// chunkWait is what a row's during acts on: the client, its invalidation
// channel (subscribed to with bus), the PDP's revocation of alice, and
// doc 2.
type chunkWait struct {
	c       *authzen.Client
	ch      *invalidationtest.Bus
	revoked *atomic.Bool
	doc2    authzen.Request
}
