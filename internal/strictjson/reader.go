package strictjson

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Reader reads one JSON answer as a stream, under the package's rule, for
// a client that keeps only part of it: the caller names the members it
// reads in each object (Object) and the Reader skips the others, so memory
// follows what the caller keeps, not the size of the answer. Its errors
// match this package's sentinels or are the decoder's; Problem describes
// either without quoting the answer. Its zero value is not usable: make one
// with New, and Reset it for each answer (a client keeps Readers in a
// sync.Pool, with their buffers). A Reader is not safe for concurrent use.
type Reader struct {
	walker              // skips the members the caller does not read, checking them
	body   bytes.Buffer // reads the answer without copying it
}

// New returns a Reader; Reset it before use.
func New() *Reader {
	r := &Reader{}
	r.dec = jsontext.NewDecoder(&r.body)
	return r
}

// Reset makes r read body, which must not change until r is reset again
// or released.
func (r *Reader) Reset(body []byte) {
	r.input, r.body = body, *bytes.NewBuffer(body)
	r.dec.Reset(&r.body, decoderOptions)
	r.reset()
}

// Release drops r's reference to the last body, before r goes back to a
// pool.
func (r *Reader) Release() {
	r.input, r.body = nil, bytes.Buffer{}
	r.dec.Reset(&r.body)
	r.reset()
}

// Object reads an object whose members the caller may read are names. It
// calls member with the index of each such member, which must read its
// value; other members are skipped. A member named twice, two members
// whose names differ only in case and a member that names one of names in
// another case are errors.
func (r *Reader) Object(names []string, member func(i int) error) error {
	if err := r.delim('{'); err != nil {
		return err
	}
	set := r.openNames()
	for r.dec.PeekKind() != '}' {
		raw, err := r.dec.ReadValue()
		if err != nil {
			return err
		}
		name, err := r.unquote(raw)
		if err != nil {
			return err
		}
		if other, clash := set.add(name, r.dec.InputOffset()-int64(len(raw)), r.input, true); clash {
			if bytes.Equal(other, name) {
				return ErrDuplicateMember
			}
			return ErrAmbiguousMember
		}
		switch i := index(names, name); {
		case i >= 0:
			if err := member(i); err != nil {
				return err
			}
		case foldsToOne(names, name):
			return ErrAmbiguousMember
		default:
			if err := r.value(nil); err != nil {
				return err
			}
		}
	}
	r.closeNames()
	return r.delim('}')
}

// Array reads an array, calling elem to read each element.
func (r *Reader) Array(elem func() error) error {
	if err := r.delim('['); err != nil {
		return err
	}
	for r.dec.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	return r.delim(']')
}

// delim reads the delimiter d.
func (r *Reader) delim(d jsontext.Kind) error {
	tok, err := r.dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != d {
		return fmt.Errorf("%w: found %v where %v was expected", ErrWrongType, tok.Kind(), d)
	}
	return nil
}

// Str reads a string value.
func (r *Reader) Str() (string, error) {
	b, err := r.Bytes(&r.name)
	return string(b), err
}

// Bytes reads a string value and returns its contents: the answer's own
// bytes, or, for a string with escapes, *scratch, valid until the next
// read into the same scratch space.
func (r *Reader) Bytes(scratch *[]byte) ([]byte, error) {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if raw.Kind() != '"' {
		return nil, fmt.Errorf("%w: found %v where a string was expected", ErrWrongType, raw.Kind())
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil // the body's bytes: the decoder does not copy a bytes.Buffer
	}
	*scratch, err = jsontext.AppendUnquote((*scratch)[:0], raw)
	return *scratch, err
}

// Boolean reads a true or false value.
func (r *Reader) Boolean() (bool, error) {
	tok, err := r.dec.ReadToken()
	if err != nil {
		return false, err
	}
	if k := tok.Kind(); k != 't' && k != 'f' {
		return false, fmt.Errorf("%w: found %v where a boolean was expected", ErrWrongType, k)
	}
	return tok.Bool(), nil
}

// End checks that nothing but white space follows the answer.
func (r *Reader) End() error {
	if _, err := r.dec.ReadToken(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

// unquote returns the contents of a JSON string, valid until the next read.
func (r *Reader) unquote(raw jsontext.Value) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	var err error
	r.name, err = jsontext.AppendUnquote(r.name[:0], raw)
	return r.name, err
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
func (r *Reader) Value() (jsontext.Value, error) { return r.dec.ReadValue() }

// Checked reads the next value whole under the rule (a member given twice
// in any object inside it is refused; names are otherwise not compared, as
// in an object read as a map) and returns its text, without leading white
// space, valid until the Reader is reset. A caller reads the value again
// with another Reader or with Unmarshal, which add the case rule of the Go
// type they read into.
func (r *Reader) Checked() (jsontext.Value, error) {
	start := r.dec.InputOffset()
	if err := r.value(nil); err != nil {
		return nil, err
	}
	raw := r.input[start:r.dec.InputOffset()]
	return jsontext.Value(bytes.TrimLeft(raw, " \t\r\n:,")), nil
}

// Kind returns the kind of the next value without reading it.
func (r *Reader) Kind() jsontext.Kind { return r.dec.PeekKind() }
