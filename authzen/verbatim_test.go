package authzen_test

// A question holding a string that is not valid UTF-8 is refused before
// anything is sent, cached or coalesced (a-dpop9 F2): encoding/json would
// send it as another question, U+FFFD for each invalid byte, and the
// cache would serve that question's answer for every spelling coerced
// alike.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
)

// bad is a string that is not valid UTF-8, as the attacker sent it.
// An error never echoes it.
const bad = "doc-\xff"

// utf8Read is a GRANT of the Todo scenario of the reference server.
var utf8Read = authzen.Request{
	Subject:  authzen.Subject{Type: "user", ID: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"},
	Action:   authzen.Action{Name: "can_read_todos"},
	Resource: authzen.Resource{Type: "todo", ID: "todo-1"},
}

// TestQuestionsNotValidUTF8AreRefused: for every string a question
// carries, from Evaluate, Evaluations and the three searches, a value
// that is not valid UTF-8 is refused with ErrInvalidArgument and an error
// naming the field, and nothing reaches the reference server's PDP or the
// cache.
func TestQuestionsNotValidUTF8AreRefused(t *testing.T) {
	t.Parallel()
	with := func(f func(r *authzen.Request)) authzen.Request {
		r := utf8Read
		f(&r)
		return r
	}
	type call func(c *authzen.Client, r authzen.Request) error
	evaluate := func(c *authzen.Client, r authzen.Request) error {
		d, err := c.Evaluate(t.Context(), r)
		assert.False(t, d.Allowed())
		return err
	}
	evaluations := func(c *authzen.Client, r authzen.Request) error {
		ds, err := c.Evaluations(t.Context(), authzen.Request{}, []authzen.Request{utf8Read, r})
		for _, d := range ds {
			assert.False(t, d.Allowed())
		}
		return err
	}
	asDefaults := func(c *authzen.Client, r authzen.Request) error {
		// Every item replaces the defaults' parts, which are still sent.
		ds, err := c.Evaluations(t.Context(), r, []authzen.Request{utf8Read})
		assert.False(t, ds[0].Allowed())
		return err
	}
	searchSubject := func(c *authzen.Client, r authzen.Request) error {
		_, err := c.SearchSubject(t.Context(), r)
		return err
	}
	searchResource := func(c *authzen.Client, r authzen.Request) error {
		_, err := c.SearchResource(t.Context(), r)
		return err
	}
	searchAction := func(c *authzen.Client, r authzen.Request) error {
		_, err := c.SearchAction(t.Context(), r)
		return err
	}
	type marshaled struct{ Owner string }
	tests := []struct {
		name  string
		call  call
		req   authzen.Request
		field string
	}{
		{"subject type", evaluate, with(func(r *authzen.Request) { r.Subject.Type = bad }), "subject.type"},
		{"subject id", evaluate, with(func(r *authzen.Request) { r.Subject.ID = bad }), "subject.id"},
		{"subject property value", evaluate, with(func(r *authzen.Request) { r.Subject.Properties = map[string]any{"dept": bad} }), "subject.properties (a string)"},
		{"action name", evaluate, with(func(r *authzen.Request) { r.Action.Name = bad }), "action.name"},
		{"action property name", evaluate, with(func(r *authzen.Request) { r.Action.Properties = map[string]any{bad: "x"} }), "action.properties (a member name)"},
		{"resource type", evaluate, with(func(r *authzen.Request) { r.Resource.Type = bad }), "resource.type"},
		{"resource id", evaluate, with(func(r *authzen.Request) { r.Resource.ID = bad }), "resource.id"},
		{"resource property deep in a list", evaluate, with(func(r *authzen.Request) {
			r.Resource.Properties = map[string]any{"a": []any{1.0, map[string]any{"b": []any{bad}}}}
		}), "resource.properties (a string)"},
		{"resource property of another type", evaluate, with(func(r *authzen.Request) {
			r.Resource.Properties = map[string]any{"owner": map[string][]string{"x": {bad}}}
		}), "resource.properties (a string)"},
		{"resource property a struct", evaluate, with(func(r *authzen.Request) { r.Resource.Properties = map[string]any{"owner": marshaled{bad}} }), "resource.properties (a string)"},
		{"resource property raw JSON", evaluate, with(func(r *authzen.Request) {
			r.Resource.Properties = map[string]any{"owner": json.RawMessage(`"` + bad + `"`)}
		}), "resource.properties (a string)"},
		{"context value", evaluate, with(func(r *authzen.Request) { r.Context = map[string]any{"ip": bad} }), "context (a string)"},
		{"context key", evaluate, with(func(r *authzen.Request) { r.Context = map[string]any{bad: true} }), "context (a member name)"},
		{"context string map", evaluate, with(func(r *authzen.Request) { r.Context = map[string]any{"h": map[string]string{"k": bad}} }), "context (a string)"},
		{"an item of a batch", evaluations, with(func(r *authzen.Request) { r.Resource.ID = bad }), "item 1: resource.id"},
		{"an item's context", evaluations, with(func(r *authzen.Request) { r.Context = map[string]any{"k": bad} }), "item 1: context (a string)"},
		{"a batch's defaults", asDefaults, with(func(r *authzen.Request) { r.Subject.ID = bad }), "defaults.subject.id"},
		{"subject search", searchSubject, with(func(r *authzen.Request) { r.Resource.ID = bad }), "resource.id"},
		{"resource search", searchResource, with(func(r *authzen.Request) { r.Subject.ID = bad }), "subject.id"},
		{"action search", searchAction, with(func(r *authzen.Request) { r.Context = map[string]any{"k": []string{bad}} }), "context (a string)"},
	}
	_, c := startTodo(t)
	d := evaluated(t, c, utf8Read) // discovery done, one entry cached
	require.True(t, d.Allowed())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.Stats()
			err := tt.call(c, tt.req)
			require.ErrorIs(t, err, authzen.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.field+" is not valid UTF-8")
			assert.NotContains(t, err.Error(), "\xff")
			assert.NotContains(t, err.Error(), `\xff`)
			after := c.Stats()
			assert.Equal(t, before.PDPRequests, after.PDPRequests, "the question was sent")
			assert.Equal(t, before.CacheEntries, after.CacheEntries, "the question was cached")
		})
	}
}

// TestQuestionsAreSentVerbatim: the attacker's PDP grants only the resource
// "doc-\uFFFD", what encoding/json makes of "doc-\xff". The client refuses
// "doc-\xff" and "doc-\xfe" without asking (before the fix the first was
// granted and the second served that grant from the cache), while valid
// non-ASCII ids, U+FFFD itself among them, reach the PDP byte for byte.
func TestQuestionsAreSentVerbatim(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	c, _ := standIn(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Resource struct {
				ID string `json:"id"`
			} `json:"resource"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		asked = append(asked, body.Resource.ID)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":` + map[bool]string{true: "true", false: "false"}[body.Resource.ID == "doc-\uFFFD"] + `}`))
	})
	tests := []struct {
		name    string
		id      string
		refused bool
		allowed bool
	}{
		{"an invalid byte", "doc-\xff", true, false},
		{"another invalid byte coerced alike", "doc-\xfe", true, false},
		{"a truncated sequence", "doc-\xe2\x82", true, false},
		{"U+FFFD itself", "doc-\uFFFD", false, true},
		{"an accent", "doc-é", false, false},
		{"an emoji", "doc-\U0001F512", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			r := req
			r.Resource.ID = tt.id
			d, err := c.Evaluate(t.Context(), r)
			assert.Equal(t, tt.allowed, d.Allowed())
			mu.Lock()
			got := append([]string(nil), asked...)
			mu.Unlock()
			if tt.refused {
				require.ErrorIs(t, err, authzen.ErrInvalidArgument)
				assert.Empty(t, got, "a refused question was sent")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{tt.id}, got, "the PDP was asked about another id")
		})
	}
	assert.Equal(t, 3, c.Stats().CacheEntries, "only the valid ids are cached")
}

// TestUTF8ErrorSaysWhatToFix: the error tells the caller what to do.
func TestUTF8ErrorSaysWhatToFix(t *testing.T) {
	t.Parallel()
	c, _ := standIn(t, answer(200, `{"decision":true}`))
	r := req
	r.Subject.ID = bad
	_, err := c.Evaluate(t.Context(), r)
	require.ErrorIs(t, err, authzen.ErrInvalidArgument)
	assert.True(t, strings.HasPrefix(err.Error(), "authzen: invalid argument: subject.id is not valid UTF-8"), err.Error())
	assert.Contains(t, err.Error(), "pass text as UTF-8")
}

// TestAPropertyHoldingItselfIsRefusedAtOnce: a map that holds itself
// twice is refused as JSON cannot carry it, without a request; the check
// for text that JSON would change visits no more than a bounded number
// of values (a-last9: it followed 2^1000 paths, past the call's deadline,
// forever).
func TestAPropertyHoldingItselfIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	_, c := startTodo(t)
	m := map[string]any{}
	m["a"], m["b"] = m, m
	r := utf8Read
	r.Resource.Properties = m
	_, err := c.Evaluate(t.Context(), r)
	require.ErrorIs(t, err, authzen.ErrInvalidArgument)
	require.Zero(t, c.Stats().PDPRequests)
}
