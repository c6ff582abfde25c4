package strictjson

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// walker checks a JSON text against the rule by reading its tokens with a
// jsontext.Decoder, which itself refuses malformed JSON, invalid UTF-8 and
// nesting deeper than 10,000. The walker follows the Go type the text
// decodes into. In every object it refuses a name given twice; in each
// object decoded into a struct it also refuses two names that differ only
// in case, a name that names a field in another case and, in a closed
// object, a name of no field. The decoder's own duplicate check is off:
// it keeps a string per name, where the walker keeps a hash. The stack of
// open objects and arrays is a slice, not the call stack.
type walker struct {
	dec     *jsontext.Decoder
	input   []byte // what dec reads
	stack   []frame
	sets    []*nameSet // the member names of each object open, by depth among objects
	objects int        // the objects open
	name    []byte     // scratch space for unescaped names
	fold    []byte     // scratch space for folded names
	closed  bool       // every struct is closed (RejectUnknownMembers)
}

// frame is an object or array the walker is in.
type frame struct {
	node  *node    // what it decodes into; nil: nothing the rule knows
	names *nameSet // an object's member names; nil for an array
}

// unmarshaler is what Unmarshal keeps between calls: a walker with its
// decoder reading the text.
type unmarshaler struct {
	walker
	buf bytes.Buffer // reads the input without copying it
}

var unmarshalers = sync.Pool{New: func() any {
	u := new(unmarshaler)
	u.dec = jsontext.NewDecoder(&u.buf)
	return u
}}

// maxPooledFrames is the deepest stack a walker keeps when it goes back to
// the pool.
const maxPooledFrames = 64

// options of every decoder here: the walker checks names itself.
var decoderOptions = jsontext.AllowDuplicateNames(true)

func getUnmarshaler(data []byte) *unmarshaler {
	u := unmarshalers.Get().(*unmarshaler)
	u.start(data)
	return u
}

func (u *unmarshaler) release() {
	u.stop()
	unmarshalers.Put(u)
}

// start makes u read data.
func (u *unmarshaler) start(data []byte) {
	u.input = data
	u.buf = *bytes.NewBuffer(data)
	u.dec.Reset(&u.buf, decoderOptions)
}

// stop drops u's reference to its input.
func (u *unmarshaler) stop() {
	u.input, u.buf = nil, bytes.Buffer{}
	u.dec.Reset(&u.buf)
	u.reset()
}

// reset readies w for another text.
func (w *walker) reset() {
	if cap(w.stack) > maxPooledFrames {
		w.stack = nil
	}
	if len(w.sets) > maxPooledFrames {
		w.sets = w.sets[:maxPooledFrames:maxPooledFrames]
	}
	w.stack, w.objects, w.closed = w.stack[:0], 0, false
}

// openNames returns an empty name set for an object opened now; close it
// with closeNames.
func (w *walker) openNames() *nameSet {
	if w.objects == len(w.sets) {
		w.sets = append(w.sets, new(nameSet))
	}
	s := w.sets[w.objects]
	s.reset()
	w.objects++
	return s
}

func (w *walker) closeNames() { w.objects-- }

// check reads one JSON value of node root and then the end of the text.
func (u *unmarshaler) check(root *node) error {
	u.stack = u.stack[:0]
	if err := u.value(root); err == io.EOF { // nothing but white space
		return &jsontext.SyntacticError{ByteOffset: int64(len(u.input)), Err: io.ErrUnexpectedEOF}
	} else if err != nil {
		return err
	}
	end := u.dec.InputOffset()
	if _, err := u.dec.ReadToken(); err != io.EOF {
		rest := u.input[end:]
		end += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		return &jsontext.SyntacticError{ByteOffset: end, Err: ErrTrailingData}
	}
	return nil
}

// value reads the next value, of node n, whole.
func (w *walker) value(n *node) error {
	base := len(w.stack)
	for {
		if err := w.enter(n); err != nil {
			return err
		}
		var err error
		if n, err = w.next(base); err != nil {
			return err
		}
		if len(w.stack) == base {
			return nil
		}
	}
}

// enter reads the next value: it opens an object or an array, and reads
// anything else whole.
func (w *walker) enter(n *node) error {
	k := w.dec.PeekKind()
	if k != '{' && k != '[' {
		return w.dec.SkipValue()
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return err
	}
	if n != nil && n.list != (k == '[') {
		n = nil // a mismatch json v2 will report; nothing to follow inside
	}
	if len(w.stack) < cap(w.stack) {
		w.stack = w.stack[:len(w.stack)+1]
	} else {
		w.stack = append(w.stack, frame{})
	}
	f := &w.stack[len(w.stack)-1]
	f.node, f.names = n, nil
	if k == '{' {
		f.names = w.openNames()
	}
	return nil
}

// next closes the objects and arrays that end here, down to base, and
// returns the node of the value that follows, after reading its member
// name if it is in an object.
func (w *walker) next(base int) (*node, error) {
	for len(w.stack) > base {
		top := &w.stack[len(w.stack)-1]
		if k := w.dec.PeekKind(); k == '}' || k == ']' {
			if _, err := w.dec.ReadToken(); err != nil {
				return nil, err
			}
			if top.names != nil {
				w.closeNames()
			}
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		if top.names == nil { // an array
			if top.node == nil {
				return nil, nil
			}
			return top.node.elem, nil
		}
		raw, err := w.dec.ReadValue() // a member name
		if err != nil {
			return nil, err
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if w.name, err = jsontext.AppendUnquote(w.name[:0], raw); err != nil {
				return nil, err
			}
			name = w.name
		}
		return w.member(top, name, int64(len(raw)))
	}
	return nil, nil
}

// member applies the rule to the member name just read into the object f
// and returns the node of its value. size is the length of the name as
// read, to find where it started.
func (w *walker) member(f *frame, name []byte, size int64) (*node, error) {
	var s *shape
	if f.node != nil {
		s = f.node.shape
	}
	off := w.dec.InputOffset() - size
	fail := func(p memberProblem, other string, known []string) error {
		return &MemberError{Offset: off, Path: w.path(w.dec.StackPointer().Parent()),
			Name: string(name), Other: other, Known: known, problem: p}
	}
	if other, clash := f.names.add(name, off, w.input, s != nil); clash {
		if bytes.Equal(other, name) {
			return nil, fail(twice, string(other), nil)
		}
		return nil, fail(folded, string(other), nil)
	}
	if s == nil {
		if f.node != nil {
			return f.node.elem, nil // a map: names are data, and "a" is not "A"
		}
		return nil, nil
	}
	n, known, variantOf := s.field(name, &w.fold)
	switch {
	case known:
		return n, nil
	case variantOf != "":
		return nil, fail(variant, variantOf, nil)
	case s.closed || w.closed:
		return nil, fail(unknown, "", s.names)
	}
	return nil, nil // a member nobody reads
}

// path writes p, a pointer into the values the decoder is in, as
// "context.attributes" or "resources[]".
func (w *walker) path(p jsontext.Pointer) string {
	var b strings.Builder
	level := 1
	for tok := range p.Tokens() {
		if level <= w.dec.StackDepth() {
			if k, _ := w.dec.StackIndex(level); k == '[' {
				b.WriteString("[]")
				level++
				continue
			}
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		level++
	}
	return b.String()
}

// typedPath writes p, a pointer into a value of type t, as path does,
// following t to tell array indices from member names.
func typedPath(t reflect.Type, p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			b.WriteString("[]")
			t = t.Elem()
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		switch {
		case t == nil:
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			if n := nodeOf(t); n != nil && n.shape != nil {
				t = n.shape.fields[tok].typ
			} else {
				t = nil
			}
		default:
			t = nil
		}
	}
	return b.String()
}
