package ascii_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// TestNamesThatUnicodeFoldsTogetherStayApart: the names strings.ToLower and
// strings.EqualFold make equal, which the wire keeps apart, stay apart;
// ASCII case still folds.
func TestNamesThatUnicodeFoldsTogetherStayApart(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		equal bool
	}{
		{"Internal.Example", "internal.example", true},
		{"POST", "post", true},
		{"DPoP", "dpop", true},
		{"\u0130nternal.example", "internal.example", false}, // İ
		{"\u212Aey", "key", false},                           // Kelvin sign
		{"po\u017Ft", "post", false},                         // ſ
		{"b\u00e9arer", "B\u00c9arer", false},                // é, É: not ASCII, not folded
		{"abc", "abcd", false},
		{"", "", true},
	} {
		assert.Equal(t, c.equal, ascii.EqualFold(c.a, c.b), "EqualFold(%q, %q)", c.a, c.b)
		assert.Equal(t, c.equal, ascii.Lower(c.a) == ascii.Lower(c.b), "Lower(%q) == Lower(%q)", c.a, c.b)
	}
	assert.Equal(t, "\u0130nternal.example", ascii.Lower("\u0130NTERNAL.example"))
}

func TestIs(t *testing.T) {
	assert.True(t, ascii.Is("xn--internal-o0e.example"))
	assert.True(t, ascii.Is(""))
	assert.False(t, ascii.Is("\u0130nternal.example"))
	assert.False(t, ascii.Is("a\x80"))
}

func TestLowerKeepsALowerCaseName(t *testing.T) {
	s := "https"
	assert.Zero(t, testing.AllocsPerRun(100, func() { s = ascii.Lower(s) }))
	assert.Equal(t, "https", s)
}
