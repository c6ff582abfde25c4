// Package strictjson reads the answers of decision servers strictly, so
// that no two JSON readers can take one answer for two different things: a member the client reads
// named twice in one object, a member whose name differs from one the
// client reads only in case (encoding/json would read "Status" as "status",
// and folds "ſ" to "s"), a value of the wrong type, invalid UTF-8 or
// anything after the answer are all errors. Members the client does not
// read are skipped, repeated or not (they cannot change what it reads);
// memory is spent only on the values it keeps.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Reader reads one JSON answer. Its zero value is not usable: make one with
// New, and Reset it for each answer (a client keeps Readers in a
// sync.Pool, with their decoders' buffers).
type Reader struct {
	dec  *jsontext.Decoder
	body bytes.Reader
	name []byte // scratch space for unescaping member names
}

// New returns a Reader; Reset it before use.
func New() *Reader {
	r := &Reader{}
	r.dec = jsontext.NewDecoder(&r.body)
	return r
}

// Reset makes r read body. jsontext's own duplicate-name check is off (it
// keeps a map per object): Object refuses a name it reads given twice, and
// the others do not matter.
func (r *Reader) Reset(body []byte) {
	r.body.Reset(body)
	r.dec.Reset(&r.body, jsontext.AllowDuplicateNames(true))
}

// Release drops r's reference to the last body, before r goes back to a
// pool.
func (r *Reader) Release() {
	r.body.Reset(nil)
	r.dec.Reset(&r.body)
}

// The Reader's own errors. Their texts are fixed: nothing the server wrote
// reaches them (jsontext's errors quote member names, so they are never
// shown either; see Problem).
var (
	ErrAmbiguousMember = errors.New("a member's name differs from an expected one only in case")
	ErrDuplicateMember = errors.New("a member is named twice in one object")
	ErrMissingMember   = errors.New("an object lacks a member the client needs")
	ErrWrongType       = errors.New("a value has the wrong type")
	ErrTrailingData    = errors.New("data follows the answer")
)

// Problem describes why an answer could not be read, in words that hold
// nothing of the answer itself: the text of the first of the Reader's
// errors or of own (the caller's fixed-text errors) that err matches.
func Problem(err error, own ...error) string {
	for _, e := range append([]error{ErrAmbiguousMember, ErrDuplicateMember, ErrMissingMember, ErrWrongType, ErrTrailingData}, own...) {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "a member is named twice in one object"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the body ends before the answer does"
	}
	return "the body is not well-formed JSON"
}

// Object reads an object whose members the client may read are names. It
// calls member with the index of each such member, which must read its
// value. Other members are skipped, unless their name folds to one of names.
func (r *Reader) Object(names []string, member func(i int) error) error {
	if err := r.delim('{'); err != nil {
		return err
	}
	var seen uint64 // the names read so far; objects read at most 64
	for r.dec.PeekKind() != '}' {
		raw, err := r.dec.ReadValue()
		if err != nil {
			return err
		}
		name, err := r.unquote(raw)
		if err != nil {
			return err
		}
		i := index(names, name)
		switch {
		case i >= 0:
			if seen&(1<<i) != 0 {
				return ErrDuplicateMember
			}
			seen |= 1 << i
			if err := member(i); err != nil {
				return err
			}
		case foldsToOne(names, name):
			return ErrAmbiguousMember
		default:
			if err := r.dec.SkipValue(); err != nil {
				return err
			}
		}
	}
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

// Bytes reads a string value and returns its contents in *scratch, valid
// until the next read into the same scratch space (the decoder's own
// buffer may change at the next read of any value).
func (r *Reader) Bytes(scratch *[]byte) ([]byte, error) {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if raw.Kind() != '"' {
		return nil, fmt.Errorf("%w: found %v where a string was expected", ErrWrongType, raw.Kind())
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*scratch = append((*scratch)[:0], raw[1:len(raw)-1]...)
		return *scratch, nil
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

// Value reads the next value whole, checked for well-formedness (member
// names given twice are left to the caller, which should decode the value
// with a reader that refuses them). The value is valid until the next read.
func (r *Reader) Value() (jsontext.Value, error) { return r.dec.ReadValue() }

// Kind returns the kind of the next value without reading it.
func (r *Reader) Kind() jsontext.Kind { return r.dec.PeekKind() }
