package mockserver

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The server reads request bodies as strictly as the client reads answers:
// a member given twice in one object is ambiguous (encoding/json keeps the
// last, other readers the first), and so are two members of an object
// decoded into a struct whose names differ only in case ("resources" and
// "Resources"), because encoding/json matches struct fields
// case-insensitively. For the same reason a member that names a field only
// in another case ("Resources" alone) is refused, as the client refuses a
// deciding member spelt in another case: the OpenAPI document, like any
// case-sensitive reader, sees an unknown member there, where encoding/json
// would quietly read it as the field. checkMembers finds all three before
// the body is decoded; decodeBody is its only caller, so every JSON body of
// the server goes through this one checker.
//
// It scans the bytes itself instead of using json.Decoder.Token, which
// allocated for every token and doubled the cost of a decision; it
// allocates nothing for bodies whose objects have at most smallObject
// members and whose names carry no escapes.

// errAmbiguousMember reports an ambiguous member: given twice (other ==
// name), differing only in case from an earlier one (other), or naming the
// field other only in another case (variant); or a member of a closed
// object that names none of its fields (known lists them).
type errAmbiguousMember struct {
	path, name, other string
	variant           bool
	known             []string
}

// Error returns "<path of the member>: <what is wrong with it>".
func (e *errAmbiguousMember) Error() string { return e.field() + ": " + e.problem() }

// field returns the JSON path of the duplicate member.
func (e *errAmbiguousMember) field() string {
	if e.path == "" {
		return e.name
	}
	return e.path + "." + e.name
}

// problem says what is wrong with the member.
func (e *errAmbiguousMember) problem() string {
	if e.known != nil {
		where := e.path
		if where == "" {
			where = "the body"
		}
		return fmt.Sprintf("unknown member: %s takes only %s", where, quoteList(e.known))
	}
	if e.variant {
		return fmt.Sprintf("member names are case-sensitive: the field is %q", e.other)
	}
	if e.name == e.other {
		return "is given twice"
	}
	return fmt.Sprintf("differs only in case from %q: members are matched case-insensitively", e.other)
}

// quoteList joins names as "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// closedObject marks a struct type whose JSON object takes only its own
// fields: checkMembers refuses any other member of it, where encoding/json
// would ignore it. It is for objects where a misplaced member would
// silently change an answer (a decision's context, whose method a
// permission reads), not for every body: the service ignores unknown
// members in general.
type closedObject interface{ closedJSONObject() }

var closedObjectType = reflect.TypeFor[closedObject]()

// smallObject is the number of member names an object frame keeps in a
// list before it switches to a map.
const smallObject = 8

// maxCheckDepth bounds the nesting the checker follows; encoding/json
// refuses deeper documents anyway.
const maxCheckDepth = 10000

// memberFrame is an object or array being scanned.
type memberFrame struct {
	object bool
	shape  *structShape // the object's struct type; nil: none
	elem   reflect.Type // value type of a map, slice or array; nil: none
	next   reflect.Type // the type of the value after the name just read
	from   []byte       // the member name (or nil for an array element) this frame is the value of
	last   []byte       // the name just read
	small  [smallObject][]byte
	n      int               // names in small, while there are at most smallObject
	big    map[string][]byte // names seen past smallObject: folded for structs, exact otherwise
}

// checkMembers scans data, a JSON value to be decoded into a value of type
// t, and returns an *errAmbiguousMember for the first ambiguous member: a
// name given twice in any object, or, in an object decoded into a struct,
// two names equal under Unicode case folding (bytes.EqualFold, as
// encoding/json matches fields) or a name that matches a field only so;
// and, in an object of a closedObject type, a name of none of its fields.
// Objects decoded into maps keep case-distinct keys
// ("Region" and "region" are two attributes). Parts of the body that decode
// into no struct field, into an interface or into a type with its own
// UnmarshalJSON are checked for exact duplicates only. Malformed JSON is
// left to the decoder: the checker then returns nil. data must be valid
// UTF-8 (decodeBody refuses anything else first): the checker compares
// unescaped names as bytes, where encoding/json reads each bad byte as
// U+FFFD.
func checkMembers(data []byte, t reflect.Type) error {
	var store [8]memberFrame
	stack := store[:0]
	valueType := func() reflect.Type {
		if len(stack) == 0 {
			return t
		}
		top := &stack[len(stack)-1]
		if top.object {
			return top.next
		}
		return top.elem
	}
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		case '{', '[':
			if len(stack) >= maxCheckDepth {
				return nil
			}
			f := memberFrame{object: c == '{'}
			if n := len(stack); n > 0 && stack[n-1].object {
				f.from = stack[n-1].last
			}
			vt := valueType()
			switch {
			case vt == nil:
			case c == '{' && vt.Kind() == reflect.Struct:
				f.shape = shapeOf(vt)
			case c == '{' && vt.Kind() == reflect.Map:
				f.elem = decodable(vt.Elem())
			case c == '[' && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array):
				f.elem = decodable(vt.Elem())
			}
			stack = append(stack, f)
			i++
			if c == '{' {
				// The names of this object are read as they come (below).
				i = skipSpace(data, i)
				if i < len(data) && data[i] == '}' {
					stack = stack[:len(stack)-1]
					i++
				} else if err, ok := readName(data, &i, stack); !ok || err != nil {
					return err
				}
			}
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case '"':
			end, _, ok := scanString(data, i)
			if !ok {
				return nil
			}
			i = end
		default: // a number or literal
			for i < len(data) && !isDelimiter(data[i]) {
				i++
			}
		}
		// After a value inside an object, the next name follows its comma.
		if n := len(stack); n > 0 && stack[n-1].object {
			j := skipSpace(data, i)
			if j < len(data) && data[j] == ',' {
				i = j + 1
				if err, ok := readName(data, &i, stack); !ok || err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readName reads the member name at data[*i] (after optional space) and the
// colon after it into the top frame, checking it against the names seen. ok
// is false when the data is malformed.
func readName(data []byte, i *int, stack []memberFrame) (err error, ok bool) {
	j := skipSpace(data, *i)
	if j >= len(data) || data[j] != '"' {
		return nil, false
	}
	end, name, ok := scanString(data, j)
	if !ok {
		return nil, false
	}
	j = skipSpace(data, end)
	if j >= len(data) || data[j] != ':' {
		return nil, false
	}
	*i = j + 1
	top := &stack[len(stack)-1]
	if other, dup := top.seen(name); dup {
		return &errAmbiguousMember{path: framePath(stack), name: string(name), other: string(other)}, true
	}
	if top.shape != nil {
		t, variantOf := top.shape.field(name)
		if variantOf != "" {
			return &errAmbiguousMember{path: framePath(stack), name: string(name), other: variantOf, variant: true}, true
		}
		if _, known := top.shape.exact[string(name)]; top.shape.closed && !known {
			return &errAmbiguousMember{path: framePath(stack), name: string(name), known: top.shape.names}, true
		}
		top.next = t
	} else {
		top.next = top.elem
	}
	return nil, true
}

// seen records name in the frame and reports the earlier name it clashes
// with, if any.
func (f *memberFrame) seen(name []byte) (other []byte, dup bool) {
	f.last = name
	if f.big == nil {
		same := bytes.Equal
		if f.shape != nil {
			same = bytes.EqualFold
		}
		for _, n := range f.small[:f.n] {
			if same(n, name) {
				return n, true
			}
		}
		if f.n < smallObject {
			f.small[f.n] = name
			f.n++
			return nil, false
		}
		f.big = make(map[string][]byte, 2*smallObject)
		for _, n := range f.small {
			f.big[f.key(n)] = n
		}
	}
	k := f.key(name)
	if n, ok := f.big[k]; ok {
		return n, true
	}
	f.big[k] = name
	return nil, false
}

// key is the map key of name in a frame past smallObject names.
func (f *memberFrame) key(name []byte) string {
	if f.shape != nil {
		return foldName(name)
	}
	return string(name)
}

// framePath names the object at the top of the stack, for messages:
// "context.attributes", "resources[]".
func framePath(stack []memberFrame) string {
	var b strings.Builder
	for k := 1; k < len(stack); k++ {
		if stack[k].from == nil {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(stack[k].from)
	}
	return b.String()
}

// scanString reads the JSON string starting at data[i] == '"' and returns
// the index after it and its value; the value aliases data unless the
// string holds escapes. ok is false for an unterminated or malformed string.
func scanString(data []byte, i int) (end int, value []byte, ok bool) {
	escaped := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return j + 1, data[i+1 : j], true
			}
			var s string
			if err := json.Unmarshal(data[i:j+1], &s); err != nil {
				return 0, nil, false
			}
			return j + 1, []byte(s), true
		}
	}
	return 0, nil, false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

func isDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// structShape maps the JSON names of a struct's fields to the types of
// their values (nil for a field checked for exact duplicates only), and
// their folded names to the names. A closed shape (closedObject) takes no
// other member; names are its fields' names, in order, for messages.
type structShape struct {
	exact  map[string]reflect.Type
	folded map[string]string
	closed bool
	names  []string
}

// field returns the type of the field a member name matches as
// encoding/json matches it: the exact name first, else case-insensitively,
// and then the field's own name as variantOf. A member of no field has a
// nil type and no variantOf.
func (s *structShape) field(name []byte) (t reflect.Type, variantOf string) {
	if t, ok := s.exact[string(name)]; ok {
		return t, ""
	}
	canonical := s.folded[foldName(name)]
	return s.exact[canonical], canonical
}

var shapes sync.Map // reflect.Type -> *structShape

func shapeOf(t reflect.Type) *structShape {
	if s, ok := shapes.Load(t); ok {
		return s.(*structShape)
	}
	s := &structShape{exact: map[string]reflect.Type{}, folded: map[string]string{},
		closed: t.Implements(closedObjectType) || reflect.PointerTo(t).Implements(closedObjectType)}
	addFields(s, t)
	v, _ := shapes.LoadOrStore(t, s)
	return v.(*structShape)
}

// addFields adds the JSON fields of struct type t, those of embedded structs
// included, as encoding/json names them.
func addFields(s *structShape, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.exact[name] = decodable(f.Type)
		s.folded[foldName([]byte(name))] = name
		s.names = append(s.names, name)
	}
}

var unmarshalerTypes = []reflect.Type{
	reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// decodable returns the type whose JSON shape a value of type t follows for
// the checker: pointers dereferenced, and nil for interfaces and types that
// decode themselves.
func decodable(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return nil
	}
	for _, u := range unmarshalerTypes {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return nil
		}
	}
	return t
}

// foldName folds name as encoding/json does when it matches member names to
// struct fields: two names fold alike exactly when bytes.EqualFold holds.
func foldName(name []byte) string {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); {
		if c := name[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return string(out)
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
