package pep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The gateway's answers are read strictly, so that no two JSON readers can
// take one answer for two different things: a member the client reads
// named twice in one object, a member whose name differs from one the
// client reads only in case (encoding/json would read "Status" as "status",
// and folds "ſ" to "s"), a value of the wrong type, invalid UTF-8 or
// anything after the answer are all errors. Members the client does not
// read are skipped, repeated or not (they cannot change what it reads);
// memory is spent only on the values it keeps.

// reader reads one JSON answer.
type reader struct {
	dec  *jsontext.Decoder
	body bytes.Reader
	name []byte // scratch space for unescaping member names
	// scratch space for unescaping a permission's resource and scope, which
	// must both stay valid until the permission is read
	resScratch, scopeScratch []byte
	// budget is how many more items (tenants, departments) the answer
	// may make the client keep; see spend.
	budget int
}

// spend counts one more item kept against the budget.
func (r *reader) spend() error {
	if r.budget--; r.budget < 0 {
		return errTooManyTenants
	}
	return nil
}

// readers keeps readers between answers, with their decoders' buffers.
var readers = sync.Pool{New: func() any {
	r := &reader{}
	r.dec = jsontext.NewDecoder(&r.body)
	return r
}}

// newReader returns a reader of body; release it with free when done.
// jsontext's own duplicate-name check is off (it keeps a map per object):
// object refuses a name it reads given twice, and the others do not matter.
func newReader(body []byte) *reader {
	r := readers.Get().(*reader)
	r.body.Reset(body)
	r.dec.Reset(&r.body, jsontext.AllowDuplicateNames(true))
	r.budget = 0
	return r
}

// free returns r to the pool; it must not be used again.
func (r *reader) free() {
	r.body.Reset(nil)
	r.dec.Reset(&r.body)
	readers.Put(r)
}

// The reader's own errors. Their texts are fixed: nothing the gateway wrote
// reaches them (jsontext's errors quote member names, so they are never
// shown either; see jsonProblem).
var (
	errAmbiguousMember = errors.New("a member's name differs from an expected one only in case")
	errDuplicateMember = errors.New("a member is named twice in one object")
	errMissingMember   = errors.New("an object lacks a member the client needs")
	errUnknownStatus   = errors.New("a status is not GRANT, DENY or ERROR")
	errWrongType       = errors.New("a value has the wrong type")
	errTrailingData    = errors.New("data follows the answer")
	errTooManyPairs    = fmt.Errorf("the answer lists more than %d pairs", maxListed)
	errTooManyTenants  = fmt.Errorf("the answer lists more than %d tenants and departments", maxOrganizationItems)
)

// jsonProblem describes why an answer could not be read, in words that hold
// nothing of the answer itself.
func jsonProblem(err error) string {
	for _, own := range []error{errAmbiguousMember, errDuplicateMember, errMissingMember, errUnknownStatus, errWrongType, errTrailingData, errTooManyPairs, errTooManyTenants} {
		if errors.Is(err, own) {
			return own.Error()
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

// object reads an object whose members the client may read are names. It
// calls member with the index of each such member, which must read its
// value. Other members are skipped, unless their name folds to one of names.
func (r *reader) object(names []string, member func(i int) error) error {
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
				return errDuplicateMember
			}
			seen |= 1 << i
			if err := member(i); err != nil {
				return err
			}
		case foldsToOne(names, name):
			return errAmbiguousMember
		default:
			if err := r.dec.SkipValue(); err != nil {
				return err
			}
		}
	}
	return r.delim('}')
}

// array reads an array, calling elem to read each element.
func (r *reader) array(elem func() error) error {
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
func (r *reader) delim(d jsontext.Kind) error {
	tok, err := r.dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != d {
		return fmt.Errorf("%w: found %v where %v was expected", errWrongType, tok.Kind(), d)
	}
	return nil
}

// str reads a string value.
func (r *reader) str() (string, error) {
	b, err := r.bytes(&r.name)
	return string(b), err
}

// bytes reads a string value and returns its contents in *scratch, valid
// until the next read into the same scratch space (the decoder's own
// buffer may change at the next read of any value).
func (r *reader) bytes(scratch *[]byte) ([]byte, error) {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if raw.Kind() != '"' {
		return nil, fmt.Errorf("%w: found %v where a string was expected", errWrongType, raw.Kind())
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*scratch = append((*scratch)[:0], raw[1:len(raw)-1]...)
		return *scratch, nil
	}
	*scratch, err = jsontext.AppendUnquote((*scratch)[:0], raw)
	return *scratch, err
}

// boolean reads a true or false value.
func (r *reader) boolean() (bool, error) {
	tok, err := r.dec.ReadToken()
	if err != nil {
		return false, err
	}
	if k := tok.Kind(); k != 't' && k != 'f' {
		return false, fmt.Errorf("%w: found %v where a boolean was expected", errWrongType, k)
	}
	return tok.Bool(), nil
}

// end checks that nothing but white space follows the answer.
func (r *reader) end() error {
	if _, err := r.dec.ReadToken(); err != io.EOF {
		return errTrailingData
	}
	return nil
}

// unquote returns the contents of a JSON string, valid until the next read.
func (r *reader) unquote(raw jsontext.Value) ([]byte, error) {
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
