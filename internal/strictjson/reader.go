package strictjson

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
	if err := r.openKind("{"); err != nil {
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
// member named twice, a member whose name holds a letter some reader takes
// for ASCII letters (ErrNonASCIIMember: ı, ſ, ß, ...), two members whose names differ only in case and a
// member that names one of names in another case are errors.
func (r *Reader) Next(names []string, err *error) (int, bool) {
	if *err != nil {
		return 0, false
	}
	i, e := r.member(names) // i >= 0 only without an error
	*err = e
	return max(i, 0), i >= 0
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
			r.close()
			return -1, nil
		}
		name, start, err := r.memberName()
		if err != nil {
			return -1, err
		}
		if p, _, bad := r.clash(r.top(), name, start, true); bad {
			return -1, sentinels[p]
		}
		if i, err := match(names, name); i >= 0 || err != nil {
			return i, err
		}
		if err := r.value(nil); err != nil {
			return -1, err
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
func (r *Reader) Array() error { return r.openKind("[") }

// More reports whether another element of the open array follows. When
// none does it reads the closing bracket, setting *err if that fails, and
// returns false; it returns false at once when *err is set.
func (r *Reader) More(err *error) bool {
	if *err != nil {
		return false
	}
	k, e := r.peek()
	if e == nil && k == ']' {
		r.close()
		return false
	}
	*err = e
	return e == nil
}

// openKind reads the opening delimiter d.
func (r *Reader) openKind(d string) error {
	_, err := r.expect(Kind(d[0]), Kind(d[0]), d)
	if err == nil {
		_, err = r.open()
	}
	return err
}

// expect returns the kind of the next value, refused (ErrWrongType) unless
// it is a or b; what names them in the error.
func (r *Reader) expect(a, b Kind, what string) (Kind, error) {
	k, err := r.peek()
	if err == nil && k != a && k != b {
		err = fmt.Errorf("%w: found %v where %s was expected", ErrWrongType, k, what)
	}
	return k, err
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
	if _, err := r.expect('"', '"', "a string"); err != nil {
		return nil, err
	}
	raw, escaped, err := r.scalar()
	if err != nil {
		return nil, err
	}
	return unescape(raw[1:len(raw)-1], escaped, scratch), nil
}

// Boolean reads a true or false value.
func (r *Reader) Boolean() (bool, error) {
	k, err := r.expect('t', 'f', "a boolean")
	if err != nil {
		return false, err
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

// match returns the index of name in names, or -1; and ErrAmbiguousMember
// when name equals none of names but one in another ASCII case, as a
// case-insensitive reader would match it (name is ASCII).
func match(names []string, name []byte) (int, error) {
	for i, n := range names {
		if n == string(name) {
			return i, nil
		}
	}
	for _, n := range names {
		if equalFold([]byte(n), name) {
			return -1, ErrAmbiguousMember
		}
	}
	return -1, nil
}

// Value reads the next value whole, checked for well-formedness only:
// decode it with Unmarshal, which applies the rule. The value is valid
// until the Reader is reset.
func (r *Reader) Value() (Value, error) {
	r.plain = true
	v, err := r.Checked()
	r.plain = false
	return v, err
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

// The tokenizer: a strict RFC 8259 scanner over a []byte. It refuses
// malformed JSON, invalid UTF-8 (in strings and anywhere else), an escaped
// lone surrogate ("\ud800") and nesting deeper than maxDepth; it keeps a
// stack of the objects and arrays open, on which the walker and the Reader
// keep what they know of each.

// Kind is the kind of a JSON value, named by its first byte: '"' a string,
// '0' a number, 't' true, 'f' false, 'n' null, '{' an object, '[' an array;
// '}' and ']' end an object or an array, and 0 is no value (the end of the
// text, an error, an empty Value).
type Kind byte

// String returns "string", "number", "true", "false", "null", or the
// delimiter itself ("{"); "invalid" for anything else.
func (k Kind) String() string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	case '{', '}', '[', ']':
		return string(rune(k))
	}
	return "invalid"
}

// kindOf returns the kind of the value that starts with c, 0 when no value
// starts with c.
func kindOf(c byte) Kind {
	switch c {
	case '"', 't', 'f', 'n', '{', '[':
		return Kind(c)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

// Value is the text of one JSON value, as the input has it.
type Value []byte

// Kind returns the kind of v, ignoring leading white space; 0 for an
// empty v.
func (v Value) Kind() Kind {
	for _, c := range v {
		if !isSpace(c) {
			return kindOf(c)
		}
	}
	return 0
}

// maxDepth is the most objects and arrays open at once, as in
// encoding/json and json v2.
const maxDepth = 10_000

// SyntacticError reports JSON that is not well-formed: malformed, not
// UTF-8, nested deeper than 10,000, ended early (Err is
// io.ErrUnexpectedEOF) or followed by more than white space (Err is
// ErrTrailingData).
type SyntacticError struct {
	ByteOffset  int64  // where in the input the error is: the offending byte, or the length at an early end
	JSONPointer string // the value it is in (RFC 6901): "/resources/0/name"; "" at the top
	Err         error  // what is wrong
}

// Error returns "<what is wrong>[ within <pointer>][ after offset <n>]",
// the words of json v2's errors.
func (e *SyntacticError) Error() string {
	b := []byte("syntactic error")
	if e.Err != nil {
		b = []byte(e.Err.Error())
	}
	if e.JSONPointer != "" {
		b = strconv.AppendQuote(append(b, " within "...), truncate(e.JSONPointer, 100))
	}
	if e.ByteOffset > 0 {
		b = strconv.AppendInt(append(b, " after offset "...), e.ByteOffset, 10)
	}
	return string(b)
}

// Unwrap returns Err.
func (e *SyntacticError) Unwrap() error { return e.Err }

// truncate shortens s to about n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// errMaxDepth refuses an object or array opened inside maxDepth others.
var errMaxDepth = errors.New("exceeded max depth")

// invalid is the error for the rune at s.in[at], which does not belong
// where it is; where says what the grammar takes there.
func (s *scanner) invalid(at int, where string) error {
	r, n := utf8.DecodeRune(s.in[at:])
	what := strconv.QuoteRune(r)
	if r == utf8.RuneError && n <= 1 {
		what = strconv.Quote(string(s.in[at : at+max(n, 1)]))
	}
	return s.fail(at, errors.New("invalid character "+what+" "+where))
}

// state is what the grammar takes next.
type state uint8

const (
	wantValue      state = iota // a value: at the start, after ':' or after ',' in an array
	wantValueOrEnd              // after '[': a value or ']'
	wantNameOrEnd               // after '{': a name or '}'
	wantName                    // after ',' in an object
	wantColon                   // after a name
	wantComma                   // after a value in an object or an array: ',' or its end
	done                        // after the value at the top
)

// level is an object or array open: what the scanner needs of it, and what
// the walker and the Reader keep on it.
type level struct {
	object bool
	n      int      // the members or elements begun
	name   int      // an object's: where its last member's name starts (its '"')
	node   *node    // the walker's: what it decodes into; nil: nothing the rule knows
	names  *nameSet // the walker's and the Reader's: an object's member names so far
}

// scanner reads one JSON text.
type scanner struct {
	in     []byte
	pos    int // the next byte to read
	state  state
	comma  int // where the last ',' is
	levels []level
}

// maxPooledLevels is the deepest stack a scanner keeps when it goes back
// to a pool.
const maxPooledLevels = 64

// reset makes s read in.
func (s *scanner) reset(in []byte) {
	if cap(s.levels) > maxPooledLevels {
		s.levels = nil
	}
	s.in, s.pos, s.state, s.comma, s.levels = in, 0, wantValue, 0, s.levels[:0]
}

// top returns the innermost object or array open.
func (s *scanner) top() *level { return &s.levels[len(s.levels)-1] }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace() {
	for s.pos < len(s.in) && isSpace(s.in[s.pos]) {
		s.pos++
	}
}

// fail returns a *SyntacticError at offset off.
func (s *scanner) fail(off int, err error) error {
	return &SyntacticError{ByteOffset: int64(off), JSONPointer: s.pointer(), Err: err}
}

// eof is the error for an early end of the input.
func (s *scanner) eof() error { return s.fail(len(s.in), io.ErrUnexpectedEOF) }

// peek moves past white space and the separator the grammar takes here,
// and returns the kind of the next token: a value, a name ('"'), or the
// end of the object or array open ('}', ']'). At the end of the text (the
// done state) it returns 0. It reads nothing more when called again.
func (s *scanner) peek() (Kind, error) {
	s.skipSpace()
	if s.state == done {
		return 0, nil
	}
	if s.pos == len(s.in) {
		return 0, s.eof()
	}
	switch c := s.in[s.pos]; s.state {
	case wantColon:
		if c != ':' {
			return 0, s.invalid(s.pos, "after object name (expecting ':')")
		}
		s.pos, s.state = s.pos+1, wantValue
		return s.peek()
	case wantComma:
		t := s.top()
		switch {
		case t.object && c == '}', !t.object && c == ']':
			return Kind(c), nil
		case c != ',' && t.object:
			return 0, s.invalid(s.pos, "after object value (expecting ',' or '}')")
		case c != ',':
			return 0, s.invalid(s.pos, "after array element (expecting ',' or ']')")
		}
		s.comma, s.pos, s.state = s.pos, s.pos+1, wantValue
		if t.object {
			s.state = wantName
		}
		return s.peek()
	case wantNameOrEnd, wantName:
		if c == '"' || c == '}' && s.state == wantNameOrEnd {
			return Kind(c), nil
		}
		if c == '}' { // a trailing comma
			return 0, s.invalid(s.comma, "at start of value")
		}
		return 0, s.invalid(s.pos, `at start of string (expecting '"')`)
	case wantValueOrEnd:
		if c == ']' {
			return ']', nil
		}
	}
	if k := kindOf(s.in[s.pos]); k != 0 {
		return k, nil
	}
	if s.in[s.pos] == ']' && s.state == wantValue && len(s.levels) > 0 && !s.top().object { // a trailing comma
		return 0, s.invalid(s.comma, "at start of value")
	}
	return 0, s.invalid(s.pos, "at start of value")
}

// begin counts a value begun in the array open.
func (s *scanner) begin() {
	if len(s.levels) > 0 && !s.top().object {
		s.top().n++
	}
}

// ended sets the state after a value.
func (s *scanner) ended() {
	s.state = wantComma
	if len(s.levels) == 0 {
		s.state = done
	}
}

// open reads the '{' or '[' peek found and returns the new level.
func (s *scanner) open() (*level, error) {
	if len(s.levels) == maxDepth {
		return nil, s.fail(s.pos, errMaxDepth)
	}
	s.begin()
	object := s.in[s.pos] == '{'
	s.pos++
	s.levels = append(s.levels, level{object: object})
	s.state = wantValueOrEnd
	if object {
		s.state = wantNameOrEnd
	}
	return s.top(), nil
}

// close reads the '}' or ']' peek found.
func (s *scanner) close() {
	s.pos++
	s.levels = s.levels[:len(s.levels)-1]
	s.ended()
}

// scalar reads the string, number or literal peek found, and returns its
// text; for a string, escaped reports whether it holds a '\'.
func (s *scanner) scalar() (raw []byte, escaped bool, err error) {
	start := s.pos
	var end int
	switch k := Kind(s.in[start]); k {
	case '"':
		end, escaped, err = s.str(start)
	case 't', 'f', 'n':
		end, err = s.literal(start, k.String())
	default:
		end, err = s.number(start)
	}
	if err != nil {
		return nil, false, err
	}
	s.begin()
	s.pos = end
	s.ended()
	return s.in[start:end], escaped, nil
}

// end reports whether nothing but white space follows the value at the
// top, which must have been read; if something does it returns where.
func (s *scanner) end() (int, bool) {
	s.skipSpace()
	return s.pos, s.pos == len(s.in)
}

// plain marks the bytes a string holds as they are: neither '"', '\\', a
// control character nor the start of a multi-byte rune.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans the string that starts at s.in[i] ('"') and returns where it
// ends (after its closing quote) and whether it holds an escape.
func (s *scanner) str(i int) (end int, escaped bool, err error) {
	in := s.in
	for i++; ; {
		for i < len(in) && plain[in[i]] {
			i++
		}
		if i == len(in) {
			return 0, false, s.eof()
		}
		switch c := in[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := escape(in[i:])
			if err == io.ErrUnexpectedEOF {
				return 0, false, s.eof()
			} else if err != nil {
				return 0, false, s.fail(i, err)
			}
			i += n
		case c < 0x20:
			return 0, false, s.invalid(i, "in string (expecting non-control character)")
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				if !utf8.FullRune(in[i:]) {
					return 0, false, s.eof()
				}
				return 0, false, s.fail(i, errInvalidUTF8)
			}
			i += n
		}
	}
}

var errInvalidUTF8 = errors.New("invalid UTF-8 within string")

// escape checks the escape sequence at the start of b ('\') and returns its
// length: a surrogate pair is one sequence of twelve bytes, and a lone
// surrogate is refused.
func escape(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, io.ErrUnexpectedEOF
	}
	if unescaped[b[1]] != 0 {
		return 2, nil
	}
	if b[1] != 'u' {
		return 0, invalidEscape(b[:2])
	}
	r, err := hex4(b)
	if err != nil {
		return 0, err
	}
	switch {
	case !utf16.IsSurrogate(r):
		return 6, nil
	case r >= 0xdc00: // a low surrogate first
		return 0, invalidEscape(b[:6])
	case len(b) == 6, len(b) == 7 && b[6] == '\\':
		return 0, io.ErrUnexpectedEOF
	case len(b) < 8 || b[6] != '\\' || b[7] != 'u':
		return 0, invalidEscape(b[:6])
	}
	r2, err := hex4(b[6:])
	if err != nil {
		return 0, err
	}
	if utf16.DecodeRune(r, r2) == utf8.RuneError {
		return 0, invalidEscape(b[:12])
	}
	return 12, nil
}

// hex4 reads the four hex digits of the \u sequence at the start of b.
func hex4(b []byte) (rune, error) {
	var r rune
	for i := 2; i < 6; i++ {
		if i == len(b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, invalidEscape(b[:i+1])
		}
		r = r<<4 | rune(c)
	}
	return r, nil
}

func invalidEscape(what []byte) error {
	label := "escape sequence"
	if len(what) > 6 {
		label = "surrogate pair"
	}
	return errors.New("invalid " + label + " " + strconv.Quote(string(what)) + " in string")
}

// literal scans the literal lit that starts at s.in[i].
func (s *scanner) literal(i int, lit string) (int, error) {
	for j := range len(lit) {
		switch {
		case i+j == len(s.in):
			return 0, s.eof()
		case s.in[i+j] != lit[j]:
			return 0, s.invalid(i+j, "in literal "+lit+" (expecting "+strconv.QuoteRune(rune(lit[j]))+")")
		}
	}
	return i + len(lit), nil
}

// number scans the number that starts at s.in[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number(i int) (int, error) {
	in := s.in
	digits := func(i int) (int, error) {
		if i == len(in) {
			return 0, s.eof()
		}
		if in[i] < '0' || in[i] > '9' {
			return 0, s.invalid(i, "in number (expecting digit)")
		}
		for i++; i < len(in) && '0' <= in[i] && in[i] <= '9'; i++ {
		}
		return i, nil
	}
	if in[i] == '-' {
		i++
	}
	var err error
	if i < len(in) && in[i] == '0' {
		i++
	} else if i, err = digits(i); err != nil {
		return 0, err
	}
	if i < len(in) && in[i] == '.' {
		if i, err = digits(i + 1); err != nil {
			return 0, err
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i, err = digits(i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// pointer returns the JSON pointer of where the scanner is, for an error.
func (s *scanner) pointer() string {
	var b []byte
	var scratch []byte
	for i := range s.levels {
		l := &s.levels[i]
		switch {
		case l.object && l.n == 0:
			return string(b)
		case l.object:
			if i == len(s.levels)-1 && s.state != wantColon && s.state != wantValue {
				return string(b)
			}
			b = append(append(b, '/'), pointerToken.Replace(string(nameAt(s.in, l.name, &scratch)))...)
		case i < len(s.levels)-1:
			b = strconv.AppendInt(append(b, '/'), int64(l.n-1), 10)
		case s.state == wantValue || s.state == wantValueOrEnd: // in the element begun, or at its start
			b = strconv.AppendInt(append(b, '/'), int64(l.n), 10)
		}
	}
	return string(b)
}

// pointerToken escapes a name as a JSON pointer token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// nameAt returns the contents of the string that starts at in[off] ('"'),
// one the scanner has read: the input's own bytes, or, for a string with
// escapes, *scratch, valid until the next use of it.
func nameAt(in []byte, off int, scratch *[]byte) []byte {
	s := scanner{in: in}
	end, escaped, _ := s.str(off)
	return unescape(in[off+1:end-1], escaped, scratch)
}

// unescape returns the contents of a valid JSON string, raw: raw itself,
// or, if escaped (it holds a '\'), *scratch, valid until the next use of it.
func unescape(raw []byte, escaped bool, scratch *[]byte) []byte {
	if !escaped {
		return raw
	}
	*scratch = appendUnescaped((*scratch)[:0], raw)
	return *scratch
}

// AppendUnquote appends the contents of quoted, a JSON string with its
// quotes, to dst, unescaping it. It returns an error, and dst unchanged,
// when quoted is not a valid JSON string.
func AppendUnquote(dst []byte, quoted []byte) ([]byte, error) {
	s := scanner{in: quoted}
	switch {
	case len(quoted) == 0:
		return dst, s.eof()
	case quoted[0] != '"':
		return dst, s.invalid(0, `at start of string (expecting '"')`)
	}
	end, _, err := s.str(0)
	if err != nil {
		return dst, err
	}
	if end != len(quoted) {
		return dst, s.fail(end, ErrTrailingData)
	}
	return appendUnescaped(dst, quoted[1:end-1]), nil
}

// appendUnescaped appends b, the contents of a valid JSON string, to dst
// with its escapes decoded.
func appendUnescaped(dst, b []byte) []byte {
	for {
		i := 0
		for i < len(b) && b[i] != '\\' {
			i++
		}
		dst = append(dst, b[:i]...)
		if i == len(b) {
			return dst
		}
		b = b[i:]
		if b[1] != 'u' {
			dst, b = append(dst, unescaped[b[1]]), b[2:]
			continue
		}
		r, _ := hex4(b)
		n := 6
		if utf16.IsSurrogate(r) {
			r2, _ := hex4(b[6:])
			r, n = utf16.DecodeRune(r, r2), 12
		}
		dst, b = utf8.AppendRune(dst, r), b[n:]
	}
}

// unescaped maps the byte after the '\\' of a two-byte escape to the byte
// it stands for, and every other byte to 0.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
