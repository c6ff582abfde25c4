package verbatim_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/internal/verbatim"
)

// TestJSONTellsCoercedStrings: JSON refuses what encoding/json made of a
// string that was not valid UTF-8, and keeps every valid string, a real
// U+FFFD and the text `\ufffd` (a backslash and five letters) included.
func TestJSONTellsCoercedStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    any
		ok   bool
	}{
		{"ASCII", "doc-1", true},
		{"non-ASCII", "dóc-\U0001F512", true},
		{"U+FFFD itself", "doc-\uFFFD", true},
		{"the text of the escape", `doc-\ufffd`, true},
		{"a backslash before the text", `doc-\\ufffd`, true},
		{"an invalid byte", "doc-\xff", false},
		{"after a backslash", "doc-\\\xff", false},
		{"a member name", map[string]int{"\xfe": 1}, false},
		{"raw bytes", json.RawMessage("\"\xff\""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testkit.Must(json.Marshal(tt.s))(t)
			assert.Equal(t, tt.ok, verbatim.JSON(b), "%s", b)
			assert.Equal(t, tt.ok, verbatim.Walk(tt.s) == "")
		})
	}
}

// TestWalkEndsOnACycle: a map that holds itself is left to encoding/json,
// which refuses it; the walk ends.
func TestWalkEndsOnACycle(t *testing.T) {
	t.Parallel()
	m := map[string]any{}
	m["m"] = m
	assert.Empty(t, verbatim.Walk(m))
}

// TestWalkCostsNoMoreThanTheValue: a value that holds one map or slice
// along many paths (a cycle with two ways back into itself, a diamond 64
// levels deep: 2^64 paths) is walked in time bounded by maxNodes, not by
// its paths (a-last9: a map holding itself twice kept Evaluate busy past
// its deadline, forever). The one-minute guard only ends a failing run.
func TestWalkCostsNoMoreThanTheValue(t *testing.T) {
	t.Parallel()
	cycle := map[string]any{}
	cycle["a"], cycle["b"] = cycle, cycle
	var diamond any = "leaf"
	for range 64 {
		diamond = []any{diamond, diamond}
	}
	for name, v := range map[string]any{"a cycle with two ways back": cycle, "a diamond": diamond} {
		done := make(chan string, 1)
		go func() { done <- verbatim.Walk(v) }()
		select {
		case what := <-done:
			assert.Empty(t, what, name)
		case <-time.After(time.Minute):
			t.Fatalf("%s: Walk follows its paths, not its values", name)
		}
	}
}
