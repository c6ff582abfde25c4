package middleware

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

// TestKeyGuardFailsWhereFormKeysCounts: a keyGuard fails a body's read
// exactly when formKeys, which decides the refusals of a query and of a
// body read whole, counts a key _method in it (exact or lookalike), and
// gives back every byte of the body otherwise, however the body is cut
// into reads; and formKeys counts every _method net/http's own parser
// (url.ParseQuery) reads. The bodies are made of the pieces a key _method is spelt
// with (by PHP, Rack and qs too: keyMatch), and of separators, in a fixed
// pseudo-random order.
func TestKeyGuardFailsWhereFormKeysCounts(t *testing.T) {
	t.Parallel()
	pieces := []string{"_", "m", "M", "ethod", "%5F", "%5f", "%6D", "%6", "%", "method", "_method", "=", "&", ";", "x", "%zz", "+",
		"%5F%6D%65%74%68%6F%64", "\x00", "ſ", "%2",
		"[", "]", ".", " ", "%5B", "%5d", "%2E", "%00", "%20", "[]", "[0]", "ethod["}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		body := b.String()
		exact, lookalike := formKeys(body)
		want := exact > 0 || lookalike > 0
		if v, _ := url.ParseQuery(body); v.Has(formKey) && !want {
			t.Fatalf("body %q: net/http's parser reads %s=%q, which formKeys does not count", body, formKey, v[formKey])
		}
		for _, r := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body)), iotest.DataErrReader(strings.NewReader(body))} {
			got, err := io.ReadAll(newKeyGuard(io.NopCloser(r)))
			if failed := errors.Is(err, ErrFormMethodOverride); failed != want || !failed && (err != nil || string(got) != body) {
				t.Fatalf("body %q: read %q, %v; formKeys counts %d exact, %d lookalike", body, got, err, exact, lookalike)
			}
		}
	}
}

// FuzzKeyGuardAgreesWithFormKeys: for any body, a keyGuard read a byte at
// a time or whole fails exactly where formKeys counts a key read as
// _method, and gives back every byte otherwise.
func FuzzKeyGuardAgreesWithFormKeys(f *testing.F) {
	for _, s := range []string{"_method=x", "a=1&.method=x", "%5B_method%5D=x", "a=%&_method[0]=x", "+%2_method=x", "]]_method]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		exact, lookalike := formKeys(body)
		want := exact > 0 || lookalike > 0
		for _, r := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body))} {
			got, err := io.ReadAll(newKeyGuard(io.NopCloser(r)))
			if failed := errors.Is(err, ErrFormMethodOverride); failed != want || !failed && (err != nil || string(got) != body) {
				t.Fatalf("body %q: read %q, %v; formKeys counts %d exact, %d lookalike", body, got, err, exact, lookalike)
			}
		}
	})
}
