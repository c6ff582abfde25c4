package strictjson

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// The conditions a strict reading refuses. Their texts are fixed: nothing
// the input held reaches them, so a client may show them (see Problem).
// A *MemberError matches the first four with errors.Is.
var (
	ErrDuplicateMember = errors.New("a member is named twice in one object")
	ErrAmbiguousMember = errors.New("a member's name differs from another's or a field's only in case")
	ErrNonASCIIMember  = errors.New("a member's name has a letter that readers take for ASCII letters in different ways, where members are matched to known names")
	ErrUnknownMember   = errors.New("an object names a member it does not take")
	ErrMissingMember   = errors.New("an object lacks a member the client needs")
	ErrWrongType       = errors.New("a value has the wrong type")
	ErrTrailingData    = errors.New("data follows the JSON value")
)

// memberProblem says what is wrong with a member.
type memberProblem uint8

const (
	twice    memberProblem = iota // named twice
	folded                        // differs only in case from an earlier member
	variant                       // names a field in another case
	unknown                       // names no field of a closed object
	notASCII                      // has a letter some reader takes for ASCII (caseConfusable), in an object read as a struct
)

// MemberError reports a member the rule refuses: given twice, differing
// only in case from an earlier member of its object, naming a field in
// another case, named with a letter some reader takes for ASCII letters
// (ı, ſ, ß, ...) in an object read as a struct, or naming no field of a closed object. Its text names the
// member, so a client must show Problem's instead.
type MemberError struct {
	Offset  int64    // where the member's name starts in the input
	Path    string   // the object holding it: "" at the top, "context.attributes", "resources[]"
	Name    string   // the member's name
	Other   string   // the earlier member or the field it clashes with
	Known   []string // the fields of the closed object, when the member names none
	problem memberProblem
}

// Field returns the path of the member: "resources[].SCOPES".
func (e *MemberError) Field() string {
	if e.Path == "" {
		return e.Name
	}
	return e.Path + "." + e.Name
}

// Problem says what is wrong with the member, without its path.
func (e *MemberError) Problem() string {
	switch e.problem {
	case twice:
		return "is given twice"
	case folded:
		return fmt.Sprintf("differs only in case from %q: members are matched case-insensitively", e.Other)
	case variant:
		return fmt.Sprintf("member names are case-sensitive: the field is %q", e.Other)
	case notASCII:
		return "member name has a letter that readers take for ASCII letters in different ways (such as ı, ſ or ß), so it could name a known member"
	}
	where := e.Path
	if where == "" {
		where = "the body"
	}
	return fmt.Sprintf("unknown member: %s takes only %s", where, quoteList(e.Known))
}

// Error returns "<field>: <problem>".
func (e *MemberError) Error() string { return e.Field() + ": " + e.Problem() }

// Is matches ErrDuplicateMember, ErrAmbiguousMember, ErrNonASCIIMember or
// ErrUnknownMember.
func (e *MemberError) Is(target error) bool { return target == sentinels[e.problem] }

// sentinels is the error each problem matches.
var sentinels = [...]error{twice: ErrDuplicateMember, folded: ErrAmbiguousMember, variant: ErrAmbiguousMember,
	unknown: ErrUnknownMember, notASCII: ErrNonASCIIMember}

// quoteList joins names as "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// TypeError reports a value that cannot decode into its Go type: of the
// wrong JSON kind, or out of its range.
type TypeError struct {
	Offset int64        // where the value starts in the input
	Path   string       // the value: "context.attributes.method", "resources[].scopes"
	Found  Kind         // the JSON kind of the value
	Want   reflect.Type // the Go type it decodes into, without pointers
	Err    error        // why, if more is known: strconv's range error, encoding/json's error
}

// Error returns "<path>: cannot decode a JSON <kind> into <type>".
func (e *TypeError) Error() string {
	path := e.Path
	if path == "" {
		path = "the value"
	}
	return fmt.Sprintf("%s: cannot decode a JSON %s into %v", path, KindName(e.Found), e.Want)
}

// Unwrap returns ErrWrongType.
func (e *TypeError) Unwrap() error { return ErrWrongType }

// KindName names a JSON kind as a JSON user would: "string", "number",
// "object", "array", "boolean", "null".
func KindName(k Kind) string {
	switch k {
	case '"', '0', 'n':
		return k.String()
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	}
	return "value"
}

// Problem describes why a JSON text could not be read, in words that hold
// nothing of the text itself: the text of the first of this package's
// errors or of own (the caller's fixed-text errors) that err matches.
func Problem(err error, own ...error) string {
	for _, e := range append([]error{ErrAmbiguousMember, ErrNonASCIIMember, ErrDuplicateMember, ErrUnknownMember,
		ErrMissingMember, ErrWrongType, ErrTrailingData}, own...) {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the body ends before the JSON value does"
	}
	return "the body is not well-formed JSON"
}
