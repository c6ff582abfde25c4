// Package strictjson is the module's one strict JSON reader, for the
// answers the clients read (pep, authzen), the request bodies and
// fixtures the reference server reads, and the DPoP proofs dpop verifies.
// It enforces one rule, so that no two JSON readers can take one text for
// two different things:
//
//   - a member given twice in any object, at any depth, is refused (JSON
//     parsers disagree on which one counts);
//   - in an object read as a Go struct (or through Reader.Object), a member
//     whose name holds a letter some reader takes for ASCII letters is
//     refused (ErrNonASCIIMember; caseConfusable lists them): readers
//     disagree on the case of those letters (Unicode simple folding
//     takes "ſtatus" and "K" with the Kelvin sign for "status" and "k",
//     Go's strings.ToUpper and JavaScript's toUpperCase take "ı" for "I",
//     Python's casefold "ß" for "ss"), and every name the clients and
//     structs read is ASCII, so any other name that is not ASCII is an
//     unknown member; two members whose names differ only in ASCII
//     case ("status" and "Status") are refused, and so is a member that
//     names a field only in another case (a case-insensitive reader such
//     as encoding/json would read it as the field, a case-sensitive one
//     would not);
//   - in an object read as a map, names are data: "Region" and "region"
//     are two keys, and "région" is a key; so are the names inside a value
//     no field takes or that is kept raw (json.RawMessage, an interface);
//   - invalid UTF-8, malformed JSON, nesting deeper than 10,000 and
//     anything after the value are refused.
//
// Members that name no field are otherwise ignored, unless the struct is
// Closed or the reading RejectUnknownMembers.
//
// A scanner of its own tokenizes and validates the text (RFC 8259, with
// json v2's refusals: invalid UTF-8, lone surrogates); the rule is a walk
// over its tokens, following the Go type, which also refuses a value of a
// JSON kind the type cannot take. Only then does encoding/json fill the Go
// value: its case-insensitive matching of names cannot bite once the walk
// has refused every member named twice or in another case than its field.
// Unmarshal reads a whole value into a Go value; Reader streams an answer
// whose size the client must not pay for (memory follows what the client
// keeps).
package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
)

// Option changes how Unmarshal reads.
type Option struct{ closed bool }

// RejectUnknownMembers makes every struct Closed: a member that names no
// field is refused (a *MemberError), as a misspelt key of a configuration
// file should be.
func RejectUnknownMembers() Option { return Option{closed: true} }

// Unmarshal decodes data, one JSON value, into v, a non-nil pointer, under
// the package's rule, as encoding/json.Unmarshal decodes it. Its errors are
// a *MemberError for a member the rule refuses, a *SyntacticError for
// malformed JSON (its Err is ErrTrailingData when something follows the
// value, io.ErrUnexpectedEOF when the text ends early), and a *TypeError
// for a value that does not fit its Go type; each says where in data. v is
// left unchanged when the rule, the syntax or a JSON kind refuses data. It
// is safe for concurrent use.
func Unmarshal(data []byte, v any, opts ...Option) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Unmarshal needs a non-nil pointer")
	}
	t := rv.Type().Elem()
	w := walkers.Get().(*walker)
	w.start(data)
	for _, o := range opts {
		w.closed = w.closed || o.closed
	}
	err := w.check(nodeOf(t))
	w.stop()
	walkers.Put(w)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return typeError(t, err)
	}
	return nil
}

// typeError turns an error of encoding/json, on a text the walk found
// sound (a value only the type itself judges: a map key, a base64 string,
// an interface, a type that decodes itself), into a *TypeError.
func typeError(t reflect.Type, err error) error {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		found, ok := map[string]Kind{"string": '"', "object": '{', "array": '[', "bool": 't'}[ute.Value]
		if !ok {
			found = '0' // "number", "number -5"
		}
		return &TypeError{Offset: ute.Offset, Path: ute.Field, Found: found, Want: ute.Type, Err: err}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return &TypeError{Want: t, Err: err}
}
