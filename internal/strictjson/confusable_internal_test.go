package strictjson

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestCaseConfusableIsComplete: every rune that is not ASCII but that
// Unicode's simple upper, lower or title case, or its simple folding,
// takes to an ASCII letter is one caseConfusable names, so that no name a
// case-insensitive reader matches to a known one gets past the rule as an
// unknown member. The full-folding and fullwidth runes it names besides
// are checked by hand: the standard library has no table of them.
func TestCaseConfusableIsComplete(t *testing.T) {
	t.Parallel()
	ascii := func(r rune) bool { return r < utf8.RuneSelf && unicode.IsLetter(r) }
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		takes := ascii(unicode.ToUpper(r)) || ascii(unicode.ToLower(r)) || ascii(unicode.ToTitle(r))
		for f := unicode.SimpleFold(r); f != r && !takes; f = unicode.SimpleFold(f) {
			takes = ascii(f)
		}
		if takes && !caseConfusable(r) {
			t.Errorf("%U (%c) becomes an ASCII letter under a case mapping, but caseConfusable does not name it", r, r)
		}
	}
	for _, r := range []rune{'ß', 'ẞ', 'ﬀ', 'ﬁ', 'ﬂ', 'ﬃ', 'ﬄ', 'ﬅ', 'ﬆ', 'ｓ', 'Ｓ', '！', '～'} {
		if !caseConfusable(r) {
			t.Errorf("%U (%c) folds or normalizes to ASCII, but caseConfusable does not name it", r, r)
		}
	}
	for _, r := range []rune{'é', 'α', 'Å', 'ü', '中', 'ǰ'} {
		if caseConfusable(r) {
			t.Errorf("%U (%c) maps to no ASCII letter, but caseConfusable names it", r, r)
		}
	}
}
