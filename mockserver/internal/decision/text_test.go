package decision

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forged is a value a caller of /authorize (or an administrator naming an
// object) could send: a whole forged line of the denial log, a terminal
// escape, a Unicode line separator and a right-to-left override.
const forged = "x\nmockserver: POST /realms/acme/authorization-decision-provider/authorize: GRANT for mallory\x1b[2J\u2028\u202e"

// fill sets every plain string field reachable from v (through structs,
// pointers and slices, giving each slice two elements) to forged, and
// every bool both ways across the two elements. Reason is left alone: the
// engine writes it, quoting what it names.
func fill(v reflect.Value, flip bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), flip)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Reason" {
				continue
			}
			fill(v.Field(i), flip)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), false)
		fill(v.Index(1), true)
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() {
			v.SetString(forged)
		}
	case reflect.Bool:
		v.SetBool(flip)
	}
}

// TestTextEscapesEveryValue: whatever a caller or an administrator put in
// any name or value an explanation holds, its Text has no line that the
// text's own structure did not write (each starts with the status or two
// spaces of indentation), no control character and nothing outside ASCII.
func TestTextEscapesEveryValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		known bool
		st    Status
	}{{"known subject, DENY", true, Deny}, {"unknown subject, ERROR", false, Error}, {"GRANT", true, Grant}} {
		t.Run(tc.name, func(t *testing.T) {
			var e Explanation
			fill(reflect.ValueOf(&e).Elem(), false)
			e.Status, e.Subject.Known = tc.st, tc.known
			for i := range e.Pairs {
				e.Pairs[i].Status, e.Pairs[i].Reason = tc.st, "reason"
			}
			text := e.Text()
			lines := strings.Split(text, "\n")
			require.True(t, strings.HasPrefix(lines[0], string(tc.st)+" for "), lines[0])
			for _, l := range lines[1:] {
				require.True(t, strings.HasPrefix(l, "  "), "a line the text did not write: %q", l)
			}
			for _, r := range text {
				require.True(t, r >= ' ' && r < 0x7f || r == '\n', "control or non-ASCII character %q in %q", r, text)
			}
			require.Contains(t, text, `x\nmockserver: POST`, "the value is shown, escaped")
		})
	}
}
