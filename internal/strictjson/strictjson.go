// Package strictjson is the module's one strict JSON reader, for the
// answers the clients read (pep, authzen), the request bodies and
// fixtures the reference server reads, and the DPoP proofs dpop verifies.
// It enforces one rule, so that no two JSON readers can take one text for
// two different things:
//
//   - a member given twice in any object, at any depth, is refused (JSON
//     parsers disagree on which one counts);
//   - in an object read as a Go struct (or through Reader.Object), two
//     members whose names differ only in case, under Unicode case folding
//     ("status" and "Status", "ſtatus", "K" with the Kelvin sign), are
//     refused, and so is a member that names a field only in another case
//     (a case-insensitive reader such as encoding/json would read it as
//     the field, a case-sensitive one would not);
//   - in an object read as a map, names are data: "Region" and "region"
//     are two keys;
//   - invalid UTF-8, malformed JSON, nesting deeper than 10,000 and
//     anything after the value are refused.
//
// Members that name no field are otherwise ignored, unless the struct is
// Closed or the reading RejectUnknownMembers.
//
// It is built on github.com/go-json-experiment/json (json v2): its
// jsontext.Decoder tokenizes, validates and refuses names given twice; the
// case rule is a walk over that decoder's tokens, following the Go type;
// json v2 then decodes, matching names case-sensitively. Unmarshal reads a
// whole value into a Go value; Reader streams an answer whose size the
// client must not pay for (memory follows what the client keeps).
package strictjson

import (
	"errors"
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Option changes how Unmarshal reads.
type Option struct{ closed bool }

// RejectUnknownMembers makes every struct Closed: a member that names no
// field is refused (a *MemberError), as a misspelt key of a configuration
// file should be.
func RejectUnknownMembers() Option { return Option{closed: true} }

// Unmarshal decodes data, one JSON value, into v, a non-nil pointer, under
// the package's rule. Its errors are a *MemberError for a member the rule
// refuses, a *jsontext.SyntacticError for malformed JSON (its Err is
// ErrTrailingData when something follows the value), and a *TypeError for
// a value that does not fit its Go type; each says where in data. v is
// left unchanged when the rule or the syntax refuses data. It is safe for
// concurrent use.
func Unmarshal(data []byte, v any, opts ...Option) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Unmarshal needs a non-nil pointer")
	}
	t := rv.Type().Elem()
	u := getUnmarshaler(data)
	for _, o := range opts {
		u.closed = u.closed || o.closed
	}
	err := u.check(nodeOf(t))
	u.release()
	if err != nil {
		return err
	}
	// The walk refused every name given twice; json v2 need not look again.
	if err := json.Unmarshal(data, v, jsontext.AllowDuplicateNames(true)); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) && se.GoType != nil {
			return &TypeError{Offset: se.ByteOffset, Path: typedPath(t, se.JSONPointer),
				Found: se.JSONKind, Want: se.GoType, Err: se.Err}
		}
		return err
	}
	return nil
}
