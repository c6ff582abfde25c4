package authzen

// Member names that are case variants of the contract's names only under
// other readers' case rules (first found by the a-json4 attack, issue 25).

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeEvaluationRefusesNonASCIIMemberNames: an evaluation answer
// with a member name that is not ASCII is refused. "decısıon" (dotless ı,
// U+0131) is not a Unicode simple-fold variant of "decision", but a reader
// that matches names by upper-casing them (Go's strings.ToUpper,
// JavaScript's and Java's toUpperCase, Java's equalsIgnoreCase) reads it
// as DECISION, the last one winning: false, so the client must not allow.
func TestDecodeEvaluationRefusesNonASCIIMemberNames(t *testing.T) {
	body := []byte(`{"decision":true,"decısıon":false}`)
	require.Equal(t, "DECISION", strings.ToUpper("decısıon"), "an upper-casing reader takes it for decision")
	it, err := decodeEvaluation(body)
	require.False(t, err == nil && it.allowed,
		"the client allows an answer whose last case-insensitive \"decision\" is false")
}
