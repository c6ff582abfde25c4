package middleware

import "testing"

// FuzzMayHoldFormKey: the pre-check that spares most queries and bodies
// formKeys' pair-by-pair reading never spares one in which formKeys finds
// _method, exact or a lookalike (another case, escaped, after a ';', spelt
// as PHP, Rack or qs reads it), so
// that it changes no request's answer.
func FuzzMayHoldFormKey(f *testing.F) {
	for _, s := range []string{
		"", "page=2&size=50", "_method=PUT", "_METHOD=put", "%5Fmethod=PUT", "%5fMeThOd=x",
		"a=1;_method=DELETE", "_method=%zz", "%5F%6D%65%74%68%6F%64=PUT", "x=_method", "method=PUT",
		".method=PUT", "[method=PUT", "+_method=PUT", "[_method]=PUT", "_method[0]=PUT", "]]_METHOD]=x", "_method\x00=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		exact, lookalike := formKeys(s)
		if (exact > 0 || lookalike > 0) && !mayHoldFormKey(s) {
			t.Fatalf("formKeys(%q) = %d, %d, but mayHoldFormKey spares it", s, exact, lookalike)
		}
		if exact2, lookalike2 := formKeys([]byte(s)); (exact2 > 0 || lookalike2 > 0) && !mayHoldFormKey([]byte(s)) {
			t.Fatalf("formKeys of the bytes %q = %d, %d, but mayHoldFormKey spares them", s, exact2, lookalike2)
		}
	})
}
