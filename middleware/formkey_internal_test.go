package middleware

// The '_'/'%' shortcut (mayHoldFormKey) against the real parser rather than
// formKeys: any query or body in which url.ParseQuery finds a key equal to
// _method in any case (strings.EqualFold, Unicode folding included), or
// whose ';'-cut pieces do, must be read pair by pair, and formKeys must
// then count it.

import (
	"net/url"
	"strings"
	"testing"
)

func FuzzMethodOverrideShortcutAgainstParseQuery(f *testing.F) {
	for _, s := range []string{
		"_method=PUT", "%5Fmethod=PUT", "%5f%4d%45%54%48%4f%44=x", "a=1&_METHOD=DELETE", "a=1;_method=DELETE",
		"_method+=x", "+_method=x", "%255Fmethod=x", "_me%74hod=x", "\uff3fmethod=x", "_meth\u00f6d=x", "_\u212aethod=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		found := false
		for _, piece := range strings.Split(s, ";") {
			vs, _ := url.ParseQuery(piece)
			for k := range vs {
				if strings.EqualFold(k, formKey) {
					found = true
				}
			}
		}
		if !found {
			return
		}
		if !mayHoldFormKey(s) {
			t.Fatalf("ParseQuery finds _method in %q, which mayHoldFormKey spares", s)
		}
		if exact, lookalike := formKeys(s); exact+lookalike == 0 {
			t.Fatalf("ParseQuery finds _method in %q, where formKeys counts none", s)
		}
	})
}
