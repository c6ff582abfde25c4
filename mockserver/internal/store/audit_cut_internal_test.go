package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnAuditCutIsToldApartFromAWholeValue (a-last10b): auditKeep's
// doc says a cut value is "told apart ... from any kept whole (it is
// longer than maxAuditField)". It is not when the first 32 bytes are not
// UTF-8: the cut backs off to a rune start, down to 0 bytes, and the cut
// is then "…sha256:" and 43 characters, 53 bytes, which is kept whole.
// A path's {id} reaches the audit as raw bytes (%80 decodes to 0x80), so a
// caller names two different ids whose audit entries read the same.
func TestAnAuditCutIsToldApartFromAWholeValue(t *testing.T) {
	long := strings.Repeat("\x80", 70) // a made-up id, 70 bytes, not UTF-8
	cut := auditKeep(long)             // what the audit keeps of it
	require.LessOrEqual(t, len(cut), maxAuditField, "the cut is short enough to be kept whole: %q", cut)
	require.NotEqual(t, cut, long)
	require.NotEqual(t, auditKeep(cut), auditKeep(long),
		"two different ids (%d and %d bytes) recorded as the same audit value %q", len(long), len(cut), cut)
}
