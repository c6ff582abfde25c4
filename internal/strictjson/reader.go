package strictjson

import (
	"bytes"
	"fmt"
)

// Reader reads one JSON answer as a stream, under the package's rule, for
// a client that keeps only part of it: the caller names the members it
// reads in each object (Next) and the Reader skips the others, so memory
// follows what the caller keeps, not the size of the answer. Its errors
// match this package's sentinels or are a *SyntacticError; Problem
// describes either without quoting the answer. Its zero value is not
// usable: make one with New, and Reset it for each answer (a client keeps
// Readers in a sync.Pool, with their buffers). A Reader is not safe for
// concurrent use.
type Reader struct {
	walker // reads the answer and skips the members the caller does not read, checking them
}

// New returns a Reader; Reset it before use.
func New() *Reader { return &Reader{} }

// Reset makes r read body, which must not change until r is reset again
// or released.
func (r *Reader) Reset(body []byte) { r.start(body) }

// Release drops r's reference to the last body, before r goes back to a
// pool.
func (r *Reader) Release() { r.stop() }

// Object reads the opening brace of an object; then Next reads its
// members, one call each, until it reports that none is left. The caller
// reads each value itself, between the calls, and no callback of its runs
// inside the Reader: the object is read by a loop of the caller's.
//
//	err := r.Object()
//	for i, ok := r.Next(names, &err); ok; i, ok = r.Next(names, &err) {
//		err = ... // read the value of names[i]
//	}
func (r *Reader) Object() error {
	if err := r.openKind('{'); err != nil {
		return err
	}
	r.top().names = r.openNames()
	return nil
}

// Next reads up to the next member of the open object whose name is one of
// names, and returns its index and true; the caller must read its value
// next. Other members are skipped, checked. After the last member it reads
// the closing brace and returns false. It returns false at once when *err
// is set, and sets *err and returns false when the object is not valid: a
// member named twice, two members whose names differ only in case and a
// member that names one of names in another case are errors.
func (r *Reader) Next(names []string, err *error) (int, bool) {
	if *err != nil {
		return 0, false
	}
	i, e := r.member(names)
	if e != nil || i < 0 {
		*err = e
		return 0, false
	}
	return i, true
}

// member reads up to the next member to read, or returns -1 after the
// closing brace.
func (r *Reader) member(names []string) (int, error) {
	for {
		k, err := r.peek()
		if err != nil {
			return -1, err
		}
		if k == '}' {
			r.closeNames()
			r.close()
			return -1, nil
		}
		start := r.pos
		name, escaped, err := r.name()
		if err != nil {
			return -1, err
		}
		if escaped {
			r.nameBuf = appendUnescaped(r.nameBuf[:0], name)
			name = r.nameBuf
		}
		if other, clash := r.top().names.add(name, start, r.in, true); clash {
			if bytes.Equal(other, name) {
				return -1, ErrDuplicateMember
			}
			return -1, ErrAmbiguousMember
		}
		switch i := index(names, name); {
		case i >= 0:
			return i, nil
		case foldsToOne(names, name):
			return -1, ErrAmbiguousMember
		default:
			if err := r.value(nil); err != nil {
				return -1, err
			}
		}
	}
}

// Array reads the opening bracket of an array; then each call of More
// reports whether an element follows, which the caller must read:
//
//	err := r.Array()
//	for r.More(&err) {
//		err = ... // read an element
//	}
func (r *Reader) Array() error { return r.openKind('[') }

// More reports whether another element of the open array follows. When
// none does it reads the closing bracket, setting *err if that fails, and
// returns false; it returns false at once when *err is set.
func (r *Reader) More(err *error) bool {
	if *err != nil {
		return false
	}
	k, e := r.peek()
	switch {
	case e != nil:
		*err = e
		return false
	case k == ']':
		r.close()
		return false
	}
	return true
}

// openKind reads the opening delimiter d.
func (r *Reader) openKind(d Kind) error {
	k, err := r.peek()
	if err != nil {
		return err
	}
	if k != d {
		return fmt.Errorf("%w: found %v where %v was expected", ErrWrongType, k, d)
	}
	_, err = r.open()
	return err
}

// Str reads a string value.
func (r *Reader) Str() (string, error) {
	b, err := r.Bytes(&r.nameBuf)
	return string(b), err
}

// Bytes reads a string value and returns its contents: the answer's own
// bytes, or, for a string with escapes, *scratch, valid until the next
// read into the same scratch space.
func (r *Reader) Bytes(scratch *[]byte) ([]byte, error) {
	k, err := r.peek()
	if err != nil {
		return nil, err
	}
	if k != '"' {
		return nil, fmt.Errorf("%w: found %v where a string was expected", ErrWrongType, k)
	}
	raw, escaped, err := r.scalar()
	if err != nil {
		return nil, err
	}
	raw = raw[1 : len(raw)-1]
	if !escaped {
		return raw, nil // the body's bytes
	}
	*scratch = appendUnescaped((*scratch)[:0], raw)
	return *scratch, nil
}

// Boolean reads a true or false value.
func (r *Reader) Boolean() (bool, error) {
	k, err := r.peek()
	if err != nil {
		return false, err
	}
	if k != 't' && k != 'f' {
		return false, fmt.Errorf("%w: found %v where a boolean was expected", ErrWrongType, k)
	}
	_, _, err = r.scalar()
	return k == 't', err
}

// End checks that nothing but white space follows the answer.
func (r *Reader) End() error {
	if _, ok := r.end(); !ok || r.state != done {
		return ErrTrailingData
	}
	return nil
}

func index(names []string, name []byte) int {
	for i, n := range names {
		if n == string(name) {
			return i
		}
	}
	return -1
}

// foldsToOne reports whether name equals one of names under Unicode case
// folding, as a case-insensitive reader would match it.
func foldsToOne(names []string, name []byte) bool {
	for _, n := range names {
		if bytes.EqualFold([]byte(n), name) {
			return true
		}
	}
	return false
}

// Value reads the next value whole, checked for well-formedness only:
// decode it with Unmarshal, which applies the rule. The value is valid
// until the Reader is reset.
func (r *Reader) Value() (Value, error) {
	if _, err := r.peek(); err != nil {
		return nil, err
	}
	return r.skip()
}

// Checked reads the next value whole under the rule (a member given twice
// in any object inside it is refused; names are otherwise not compared, as
// in an object read as a map) and returns its text, without leading white
// space, valid until the Reader is reset. A caller reads the value again
// with another Reader or with Unmarshal, which add the case rule of the Go
// type they read into.
func (r *Reader) Checked() (Value, error) {
	if _, err := r.peek(); err != nil {
		return nil, err
	}
	start := r.pos
	if err := r.value(nil); err != nil {
		return nil, err
	}
	return r.in[start:r.pos], nil
}

// Kind returns the kind of the next value without reading it ('}' or ']'
// at the end of the object or array open): 0 at the end of the text or
// where the text is not valid JSON, which the next read returns as its
// error.
func (r *Reader) Kind() Kind {
	k, _ := r.peek()
	return k
}
