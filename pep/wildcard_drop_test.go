package pep_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAnotherCallsWildcardFailsNoGrantClosed: a service's client (its own
// token, bob, who reads and writes orders) serves two requests at once.
// One calls CheckMany(orders: read, write), a call of two requests
// (WithBatchSize(1)); the other, an unrelated handler, calls
// ListGranted(invoices: every scope) while the gateway holds orders/write,
// twice. The wildcard drops only the invoices pairs, so CheckMany's
// answers stay cached and both GRANTs are returned (a-hold16 F1: the
// wildcard dropped every cached decision of the token and fenced the
// answers in flight, so both valid GRANTs failed closed: another caller's
// activity, nothing revoked or expired).
func TestAnotherCallsWildcardFailsNoGrantClosed(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), pep.WithBatchSize(1), noRetry)
	c.SetToken(g.token(t, "bob"))

	var writes atomic.Int32
	var listErr atomic.Value
	g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if strings.Contains(body, `"invoices"`) || !strings.Contains(body, `"write"`) {
			return false
		}
		// Another handler of the same service lists bob's invoices
		// scopes while the gateway holds orders/write (the first time,
		// and when it is asked again).
		if writes.Add(1) <= 2 {
			if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "invoices"}}); err != nil {
				listErr.Store(err)
			}
		}
		return false // the reference server answers
	})

	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	require.NoError(t, err)
	require.Nil(t, listErr.Load())
	require.Len(t, r.Decisions, 2)
	for _, s := range g.posts() {
		t.Logf("sent: %v", s.pairs())
	}
	for _, d := range r.Decisions {
		if d.Cause != nil {
			t.Logf("%s/%s: %v", d.Resource, d.Scope, d.Cause)
		}
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by another caller's ListGranted", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}

// TestAWildcardKeepsTheCallsOwnHits: ListGranted of a cached named pair
// (orders/read, a hit) and a wildcard of another resource (invoices, every
// scope) asks the gateway about the wildcard alone, call after call: the
// wildcard drops only what it covers, never the call's own hit (a-hold16
// F2: it dropped the whole token, so every such call asked its hits again,
// and a gateway blip on that needless request failed a GRANT the cache
// held; the class of a-fix15b F3).
func TestAWildcardKeepsTheCallsOwnHits(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), noRetry)
	c.SetToken(g.token(t, "bob"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant) // cached

	for round := range 2 {
		before := len(g.posts())
		got, err := c.ListGranted(t.Context(), []pep.Resource{
			{Name: "orders", Scopes: []string{"read"}},
			{Name: "invoices"},
		})
		require.NoError(t, err)
		require.NotEmpty(t, got)
		var asked []string
		for _, s := range g.posts()[before:] {
			asked = append(asked, s.pairs()...)
		}
		assert.Equal(t, []string{"invoices/*"}, asked, "round %d: only the wildcard is not cached; the hit was asked again", round)
	}
}

// TestAWildcardUnderAnotherContextFailsNoGrantClosed: a CheckMany(orders:
// read, write) under a request context (GET /orders/7) while another
// handler asks ListGranted(orders: every scope) with no request context,
// twice: the wildcard drops and fences only its own context's pairs, so
// both GRANTs are returned (a-fix16b F1: it fenced every context's answers,
// which its own answer never stores again, and both failed closed).
func TestAWildcardUnderAnotherContextFailsNoGrantClosed(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), pep.WithBatchSize(1), noRetry)
	c.SetToken(g.token(t, "bob"))

	var writes atomic.Int32
	var listErr atomic.Value
	g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if !strings.Contains(body, `"write"`) || !strings.Contains(body, `/orders/7`) {
			return false
		}
		if writes.Add(1) <= 2 {
			if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "orders"}}); err != nil {
				listErr.Store(err)
			}
		}
		return false // the reference server answers
	})

	rc := pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: "/orders/7"})
	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}, rc)
	require.NoError(t, err)
	require.Nil(t, listErr.Load())
	require.Len(t, r.Decisions, 2)
	for _, s := range g.posts() {
		t.Logf("sent: %v", s.pairs())
	}
	for _, d := range r.Decisions {
		if d.Cause != nil {
			t.Logf("%s/%s: %v", d.Resource, d.Scope, d.Cause)
		}
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by another caller's ListGranted under another request context", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}

// TestManyWildcardsFailNoGrantClosed: a CheckMany(orders: read, write)
// while other handlers ask ListGranted(invoices: every scope) 70 times,
// twice: the same wildcard is remembered once, never turned into a fence
// of the call's other keys, and both GRANTs are returned (a-fix16b F2:
// past 64 drops the cache fenced every older writer under every key).
func TestManyWildcardsFailNoGrantClosed(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), pep.WithBatchSize(1), noRetry)
	c.SetToken(g.token(t, "bob"))

	var writes atomic.Int32
	var listErr atomic.Value
	g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
		body, _ := readBodyString(r)
		if strings.Contains(body, `"invoices"`) || !strings.Contains(body, `"write"`) {
			return false
		}
		if writes.Add(1) <= 2 {
			for range 70 {
				if _, err := c.ListGranted(context.Background(), []pep.Resource{{Name: "invoices"}}); err != nil {
					listErr.Store(err)
				}
			}
		}
		return false // the reference server answers
	})

	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	require.NoError(t, err)
	require.Nil(t, listErr.Load())
	require.Len(t, r.Decisions, 2)
	for _, d := range r.Decisions {
		if d.Cause != nil {
			t.Logf("%s/%s: %v", d.Resource, d.Scope, d.Cause)
		}
		assert.Nil(t, d.Cause, "%s/%s: a valid GRANT failed closed by other callers' ListGranted about invoices", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status, "%s/%s", d.Resource, d.Scope)
	}
	assert.Equal(t, pep.Grant, r.Status)
	assert.Zero(t, c.Stats().FailClosed)
}
