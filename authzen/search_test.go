package authzen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

var searchEndpoints = authzen.WithEndpoints(authzen.Endpoints{
	Evaluation: "/access/v1/evaluation", SearchSubject: "/access/v1/search/subject",
	SearchResource: "/access/v1/search/resource", SearchAction: "/access/v1/search/action",
})

// pagedPDP answers a search with the given pages, in order, page i+1
// asked with the token "t<i>"; it records the requests.
func pagedPDP(t *testing.T, pages ...string) (http.HandlerFunc, *[]map[string]any) {
	var seen []map[string]any
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		seen = append(seen, m)
		i := 0
		if p, ok := m["page"].(map[string]any); ok {
			if tok, ok := p["token"].(string); ok {
				_, _ = fmt.Sscanf(tok, "t%d", &i)
				i++
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if i >= len(pages) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, pages[i])
	}, &seen
}

func TestSearchFollowsPages(t *testing.T) {
	t.Parallel()
	h, seen := pagedPDP(t,
		`{"page":{"next_token":"t0","count":2,"total":3},"results":[{"type":"user","id":"alice"},{"type":"user","id":"bob","properties":{"dept":"eng"}}]}`,
		`{"results":[{"type":"user","id":"carol"}],"page":{"next_token":""},"context":{"x":1}}`)
	c, n := standIn(t, h, searchEndpoints)
	subs := testkit.Must(c.SearchSubject(t.Context(), req, authzen.WithPageLimit(2)))(t)
	assert.Equal(t, []authzen.Subject{{Type: "user", ID: "alice"}, {Type: "user", ID: "bob", Properties: map[string]any{"dept": "eng"}}, {Type: "user", ID: "carol"}}, subs)
	assert.EqualValues(t, 2, n.Requests())
	// The subject's id is not sent; everything but the token stays.
	assert.Equal(t, map[string]any{"type": "user"}, (*seen)[0]["subject"])
	assert.Equal(t, map[string]any{"limit": 2.0}, (*seen)[0]["page"])
	assert.Equal(t, map[string]any{"limit": 2.0, "token": "t0"}, (*seen)[1]["page"])
	assert.Equal(t, (*seen)[0]["resource"], (*seen)[1]["resource"])

	h, seen = pagedPDP(t, `{"results":[{"name":"can_read"},{"name":"can_write"}]}`)
	c, _ = standIn(t, h, searchEndpoints)
	acts := testkit.Must(c.SearchAction(t.Context(), req))(t)
	assert.Equal(t, []authzen.Action{{Name: "can_read"}, {Name: "can_write"}}, acts)
	assert.NotContains(t, (*seen)[0], "action")
	assert.NotContains(t, (*seen)[0], "page")

	h, seen = pagedPDP(t, `{"results":[]}`)
	c, _ = standIn(t, h, searchEndpoints)
	res := testkit.Must(c.SearchResource(t.Context(), req))(t)
	assert.Empty(t, res)
	assert.Equal(t, map[string]any{"type": "document"}, (*seen)[0]["resource"])
}

// Every fault is an error with no results, even after good pages.
func TestSearchFailsWithoutResults(t *testing.T) {
	t.Parallel()
	good := `{"page":{"next_token":"t0"},"results":[{"type":"user","id":"alice"}]}`
	tests := []struct {
		name string
		last string
		want error
	}{
		{"results not an array", `{"results":{"type":"user"}}`, authzen.ErrMalformedResponse},
		{"results missing", `{"page":{"next_token":""}}`, authzen.ErrMalformedResponse},
		{"results null", `{"results":null}`, authzen.ErrMalformedResponse},
		{"results twice", `{"results":[],"results":[{"type":"user","id":"x"}]}`, authzen.ErrMalformedResponse},
		{"results in another case", `{"results":[],"Results":[{"type":"user","id":"x"}]}`, authzen.ErrMalformedResponse},
		{"type twice", `{"results":[{"type":"user","type":"admin","id":"x"}]}`, authzen.ErrMalformedResponse},
		{"id in another case", `{"results":[{"type":"user","ID":"x"}]}`, authzen.ErrMalformedResponse},
		{"id a number", `{"results":[{"type":"user","id":7}]}`, authzen.ErrMalformedResponse},
		{"no type", `{"results":[{"id":"x"}]}`, authzen.ErrMalformedResponse},
		{"properties an array", `{"results":[{"type":"user","id":"x","properties":[]}]}`, authzen.ErrMalformedResponse},
		{"properties with a duplicate", `{"results":[{"type":"user","id":"x","properties":{"a":1,"a":2}}]}`, authzen.ErrMalformedResponse},
		{"next_token a number", `{"results":[],"page":{"next_token":1}}`, authzen.ErrMalformedResponse},
		{"page without next_token", `{"results":[],"page":{"count":0}}`, authzen.ErrMalformedResponse},
		{"next_token twice", `{"results":[],"page":{"next_token":"","next_token":"t9"}}`, authzen.ErrMalformedResponse},
		{"count wrong", `{"results":[],"page":{"next_token":"","count":1}}`, authzen.ErrMalformedResponse},
		{"count negative", `{"results":[],"page":{"next_token":"","count":-1}}`, authzen.ErrMalformedResponse},
		{"total a string", `{"results":[],"page":{"next_token":"","total":"3"}}`, authzen.ErrMalformedResponse},
		{"trailing data", `{"results":[]}{"results":[]}`, authzen.ErrMalformedResponse},
		{"not JSON", `<html>`, authzen.ErrMalformedResponse},
		{"token repeated", good, authzen.ErrMalformedResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, _ := pagedPDP(t, good, strings.Replace(tt.last, "t0", "t1", 1))
			if tt.name == "token repeated" { // page 2 sends page 1's token again
				h, _ = pagedPDP(t, good, `{"page":{"next_token":"t0"},"results":[]}`)
			}
			c, _ := standIn(t, h, searchEndpoints)
			subs, err := c.SearchSubject(t.Context(), req)
			require.ErrorIs(t, err, tt.want)
			var re *authzen.ResponseError
			assert.True(t, errors.As(err, &re), "%T", err)
			assert.Nil(t, subs)
			assert.NotContains(t, err.Error(), pepToken)
		})
	}
}

func TestSearchFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    http.HandlerFunc
		want error
	}{
		{"5xx", answer(500, `{"results":[]}`), authzen.ErrUnavailable},
		{"503", answer(503, `{}`), authzen.ErrUnavailable},
		{"400", answer(400, `{}`), nil},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, nil},
		{"401", answer(401, `{}`), authzen.ErrUnauthorized},
		{"over-long body", answer(200, `{"results":[`+strings.Repeat(`{"type":"user","id":"x"},`, 50_000)+`]}`), authzen.ErrMalformedResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := standIn(t, tt.h, searchEndpoints)
			res, err := c.SearchResource(t.Context(), req)
			require.Error(t, err)
			assert.Nil(t, res)
			var re *authzen.ResponseError
			require.True(t, errors.As(err, &re), "%T %v", err, err)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

// A PDP that never stops paging is stopped after MaxSearchPages pages; one
// that returns more results than allowed is stopped at once.
func TestSearchIsBounded(t *testing.T) {
	t.Parallel()
	var i atomic.Int64
	c, n := standIn(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"results":[{"name":"a"}],"page":{"next_token":"t%d"}}`, i.Add(1))
	}, searchEndpoints)
	acts, err := c.SearchAction(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrMalformedResponse)
	assert.Nil(t, acts)
	assert.EqualValues(t, authzen.MaxSearchPages, n.Requests())

	c, _ = standIn(t, answer(200, `{"results":[{"name":"a"},{"name":"b"},{"name":"c"}]}`), searchEndpoints)
	acts, err = c.SearchAction(t.Context(), req, authzen.WithMaxResults(2))
	require.ErrorIs(t, err, authzen.ErrMalformedResponse)
	assert.Nil(t, acts)
	acts = testkit.Must(c.SearchAction(t.Context(), req, authzen.WithMaxResults(3)))(t)
	assert.Len(t, acts, 3)

	// Properties are decoded into maps: those of a whole search are
	// bounded, however the PDP spreads them over pages.
	big := `{"results":[{"name":"a","properties":{"p":"` + strings.Repeat("x", 600<<10) + `"}}],"page":{"next_token":"t%d"}}`
	i.Store(0)
	c, _ = standIn(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, big, i.Add(1))
	}, searchEndpoints)
	_, err = c.SearchAction(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrMalformedResponse)
	assert.EqualValues(t, 2, i.Load(), "the second page goes past the bound")

	// A page token the client would have to keep is bounded too.
	c, _ = standIn(t, answer(200, `{"results":[],"page":{"next_token":"`+strings.Repeat("x", 5000)+`"}}`), searchEndpoints)
	_, err = c.SearchAction(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrMalformedResponse)
}

func TestSearchTimesOut(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	c, _ := standIn(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}, searchEndpoints, authzen.WithTimeout(100*time.Millisecond))
	t.Cleanup(func() { close(block) }) // before the server's Close, which waits for the handler
	// The PDP answers only when the test ends: the search returns at all
	// only on the client's timeout, which its error names. (A wall-clock
	// bound on the return, as the test had, is a threshold a loaded
	// machine can overrun.)
	subs, err := c.SearchSubject(t.Context(), req)
	require.ErrorIs(t, err, authzen.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, subs)
}

func TestSearchRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	c, n := standIn(t, answer(200, `{"results":[]}`)) // no search endpoints
	_, err := c.SearchSubject(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user"}, Action: req.Action})
	assert.ErrorIs(t, err, authzen.ErrInvalidArgument)
	_, err = c.SearchResource(t.Context(), authzen.Request{Subject: req.Subject, Action: req.Action})
	assert.ErrorIs(t, err, authzen.ErrInvalidArgument)
	_, err = c.SearchAction(t.Context(), authzen.Request{Subject: req.Subject})
	assert.ErrorIs(t, err, authzen.ErrInvalidArgument)
	_, err = c.SearchAction(t.Context(), req, authzen.WithPageLimit(-1))
	assert.ErrorIs(t, err, authzen.ErrInvalidArgument)
	assert.ErrorContains(t, err, "WithPageLimit: the page limit must be 0 (the PDP's) or more, got -1")
	_, err = c.SearchAction(t.Context(), req, authzen.WithMaxResults(0))
	assert.ErrorIs(t, err, authzen.ErrInvalidArgument)
	assert.ErrorContains(t, err, "WithMaxResults: the most results must be at least 1, got 0")
	_, err = c.SearchAction(t.Context(), req)
	assert.ErrorIs(t, err, authzen.ErrDiscovery, "the PDP names no action search endpoint")
	c.ClearToken()
	_, err = c.SearchSubject(t.Context(), req)
	assert.ErrorIs(t, err, authzen.ErrNoToken)
	assert.Zero(t, n.Requests())
}
