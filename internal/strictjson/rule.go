package strictjson

import (
	"bytes"
	"hash/maphash"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// walker checks a JSON text against the rule while its scanner reads it,
// following the Go type the text decodes into. In every object it refuses
// a name given twice; in each object decoded into a struct it also refuses
// a name holding a letter some reader takes for ASCII letters (ı, ſ, ß),
// two names that differ only in (ASCII) case, a
// name that names a field in another case and, in a closed object, a name
// of no field; and, once it has read
// the whole text, the first value of a JSON kind its Go type cannot take,
// or a number out of its range.
// The objects and arrays open are the scanner's stack, not the call stack.
type walker struct {
	scanner
	sets    []*nameSet // the member names of each object open, by depth among objects
	objects int        // the objects open
	nameBuf []byte     // scratch space for unescaped names
	fold    []byte     // scratch space for folded names
	closed  bool       // every struct is closed (RejectUnknownMembers)
	plain   bool       // the objects opened keep no names: the syntax alone is checked (Reader.Value)
	wrong   *TypeError // the first value of a kind or range its type does not take
}

// walkers keeps Unmarshal's walkers between calls.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// start makes w read data.
func (w *walker) start(data []byte) {
	w.scanner.reset(data)
	if len(w.sets) > maxPooledLevels {
		w.sets = w.sets[:maxPooledLevels:maxPooledLevels]
	}
	w.objects, w.closed, w.plain, w.wrong = 0, false, false, nil
}

// stop drops w's reference to its input.
func (w *walker) stop() { w.start(nil) }

// openNames returns an empty name set for an object opened now, which
// close drops.
func (w *walker) openNames() *nameSet {
	if w.objects == len(w.sets) {
		w.sets = append(w.sets, new(nameSet))
	}
	s := w.sets[w.objects]
	s.reset()
	w.objects++
	return s
}

// close reads the '}' or ']' peek found, dropping the object's name set.
func (w *walker) close() {
	if w.top().names != nil {
		w.objects--
	}
	w.scanner.close()
}

// check reads one JSON value of node root and then the end of the text.
// A value its type does not take is reported only when the whole text is
// well-formed and keeps the rule, as encoding/json reports a syntax error
// anywhere before a type error.
func (w *walker) check(root *node) error {
	if err := w.value(root); err != nil {
		return err
	}
	if off, ok := w.end(); !ok {
		return &SyntacticError{ByteOffset: int64(off), Err: ErrTrailingData}
	}
	if w.wrong != nil {
		return w.wrong
	}
	return nil
}

// mistyped records a value of kind k that n's type does not take, at off
// (Err says why, if more is known), unless one was recorded already.
func (w *walker) mistyped(n *node, k Kind, off int64, err error) {
	if w.wrong == nil {
		w.wrong = &TypeError{Offset: off, Path: w.path(len(w.levels)), Found: k, Want: n.typ, Err: err}
	}
}

// value reads the next value, of node n, whole.
func (w *walker) value(n *node) error {
	base := len(w.levels)
	for {
		if err := w.enter(n); err != nil {
			return err
		}
		var err error
		if n, err = w.next(base); err != nil {
			return err
		}
		if len(w.levels) == base {
			return nil
		}
	}
}

// enter reads the next value, of node n: it opens an object or an array,
// and reads anything else whole.
func (w *walker) enter(n *node) error {
	k, err := w.peek()
	if err != nil {
		return err
	}
	if n != nil && k != 'n' && !n.takes(k) {
		w.mistyped(n, k, int64(w.pos), nil)
		n = nil // read on, for the syntax and the rule
	}
	if k != '{' && k != '[' {
		off := int64(w.pos)
		raw, _, err := w.scalar()
		if err == nil && n != nil && k == '0' && n.number != 0 {
			if err := n.inRange(raw); err != nil {
				w.mistyped(n, k, off, err)
			}
		}
		return err
	}
	l, err := w.open()
	if err != nil {
		return err
	}
	l.node = n
	if k == '{' && !w.plain {
		l.names = w.openNames()
	}
	return nil
}

// next closes the objects and arrays that end here, down to base, and
// returns the node of the value that follows, after reading its member
// name if it is in an object.
func (w *walker) next(base int) (*node, error) {
	for len(w.levels) > base {
		k, err := w.peek()
		if err != nil {
			return nil, err
		}
		t := w.top()
		if k == '}' || k == ']' {
			w.close()
			continue
		}
		if !t.object {
			if t.node == nil {
				return nil, nil
			}
			return t.node.elem, nil
		}
		name, start, err := w.memberName()
		if err != nil || t.names == nil { // no names: a Value, checked for its syntax only
			return nil, err
		}
		return w.member(t, name, start)
	}
	return nil, nil
}

// memberName reads the member name peek found and returns it unescaped
// (in nameBuf, if it holds escapes) and where it starts.
func (w *walker) memberName() ([]byte, int, error) {
	start := w.pos
	end, escaped, err := w.str(start)
	if err != nil {
		return nil, 0, err
	}
	t := w.top()
	t.name, t.n = start, t.n+1
	w.pos, w.state = end, wantColon
	return unescape(w.in[start+1:end-1], escaped, &w.nameBuf), start, nil
}

// clash applies the checks of a member's name alone to name, which starts
// at off in the object l: a name given twice and, where names are matched
// to known ones (fold), a name with a letter some reader takes for ASCII
// letters or one that differs only in case from an earlier one. It returns
// what is wrong and the earlier name it clashes with.
func (w *walker) clash(l *level, name []byte, off int, fold bool) (memberProblem, []byte, bool) {
	if fold && foldsToASCII(name) {
		return notASCII, nil, true
	}
	other, clash := l.names.add(name, off, w.in, fold)
	if clash && !bytes.Equal(other, name) {
		return folded, other, true
	}
	return twice, other, clash
}

// member applies the rule to the member name just read into the object f,
// where it starts at off, and returns the node of its value.
func (w *walker) member(f *level, name []byte, off int) (*node, error) {
	var s *shape
	if f.node != nil {
		s = f.node.shape
	}
	fail := func(p memberProblem, other string, known []string) error {
		return &MemberError{Offset: int64(off), Path: w.path(len(w.levels) - 1),
			Name: string(name), Other: other, Known: known, problem: p}
	}
	if p, other, bad := w.clash(f, name, off, s != nil); bad {
		return nil, fail(p, string(other), nil)
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

// path writes where the value the first levels open are in is, as
// "context.attributes" or "resources[]": a member's name for an object,
// "[]" for an array.
func (w *walker) path(levels int) string {
	var b []byte
	var scratch []byte
	for i := range levels {
		l := &w.levels[i]
		switch {
		case !l.object:
			b = append(b, "[]"...)
		case l.n > 0:
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, nameAt(w.in, l.name, &scratch)...)
		}
	}
	return string(b)
}

// inRange checks that raw, a JSON number, fits n's Go type as
// encoding/json reads it: an integer type takes an integer in its range,
// a float type a number whose magnitude it can hold.
func (n *node) inRange(raw []byte) error {
	s := unsafe.String(unsafe.SliceData(raw), len(raw)) // strconv keeps no reference, but copies into its errors
	var err error
	switch n.number {
	case intNumber:
		_, err = strconv.ParseInt(s, 10, n.bits)
	case uintNumber:
		_, err = strconv.ParseUint(s, 10, n.bits)
	default:
		_, err = strconv.ParseFloat(s, n.bits)
	}
	return err
}

// nameSet holds the member names of one object read so far and finds the
// earlier name that a new one repeats: exactly, or, when folding, in
// another ASCII case (equalFold; a folding set only ever holds ASCII
// names, the others being refused before they reach it). One set holds
// names of one mode.
//
// The first linearNames names are copied and compared one by one, which
// allocates nothing once the set has been used. Past them, an index maps
// the hash of each (folded) name to where the name starts in the input,
// and a name is read again from there when its hash comes up: a hostile
// object of a hundred thousand names costs one index entry per name, no
// copy and no string.
type nameSet struct {
	buf     []byte         // the first names, back to back
	ends    []int          // where each of them ends in buf
	offs    []int          // where each of them starts in the input
	n       int            // the names added
	index   map[uint64]int // past linearNames: hash → where that name starts in the input
	others  []int          // names whose hash was taken by another name (in practice never)
	scratch []byte         // for folding and re-reading names
}

// linearNames is the most names a set compares one by one.
const linearNames = 16

// seed keys the hashes of names; it is random per process, so no input
// can be made of names whose hashes collide.
var seed = maphash.MakeSeed()

// reset empties the set, dropping buffers a large object grew.
func (s *nameSet) reset() {
	if cap(s.buf) > 4<<10 {
		s.buf = nil
	}
	s.buf, s.ends, s.offs, s.n, s.index, s.others = s.buf[:0], s.ends[:0], s.offs[:0], 0, nil, nil
}

// at returns the i-th name, i < linearNames.
func (s *nameSet) at(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.buf[start:s.ends[i]]
}

// add records name, which starts (quoted, as read) at off in input, and
// returns the earlier name it repeats, exactly or, when fold is set,
// under case folding, if there is one (valid until the set changes).
func (s *nameSet) add(name []byte, off int, input []byte, fold bool) (other []byte, clash bool) {
	same := bytes.Equal
	if fold {
		same = equalFold
	}
	if s.n < linearNames {
		for i := range s.n {
			if n := s.at(i); same(n, name) {
				return n, true
			}
		}
		s.buf = append(s.buf, name...)
		s.ends = append(s.ends, len(s.buf))
		s.offs = append(s.offs, off)
		s.n++
		return nil, false
	}
	if s.index == nil {
		s.index = make(map[uint64]int, 4*linearNames)
		for i := linearNames - 1; i >= 0; i-- { // the first of equal hashes wins
			s.index[s.hash(s.at(i), fold)] = s.offs[i]
		}
	}
	s.n++
	h := s.hash(name, fold)
	o, taken := s.index[h]
	if !taken {
		s.index[h] = off
		return nil, false
	}
	for _, o := range append([]int{o}, s.others...) {
		if n := nameAt(input, o, &s.scratch); same(n, name) {
			return n, true
		}
	}
	s.others = append(s.others, off) // two names, one hash
	return nil, false
}

func (s *nameSet) hash(name []byte, fold bool) uint64 {
	if !fold {
		return maphash.Bytes(seed, name)
	}
	s.scratch = appendFolded(s.scratch[:0], name)
	return maphash.Bytes(seed, s.scratch)
}

// The names the clients and the structs read are ASCII, so the rule folds
// ASCII letters only, with one function everywhere (appendFolded, and
// equalFold built on it). Readers disagree on the case of a few other
// letters: Go's strings.ToUpper and JavaScript's toUpperCase take "ı" for
// "I", Unicode simple folding (bytes.EqualFold, encoding/json) takes "ſ"
// for "s" and the Kelvin sign for "k", and full folding (Python's
// casefold) takes "ß" for "ss" and "ﬆ" for "st". A name holding one of
// those letters may be a known name to some reader, so where names are
// matched to known ones it is refused (foldsToASCII). Any other name that
// is not ASCII is a name no reader can take for a known one: an unknown
// member, which the rules for unknown members govern (RFC 7515 and 7519
// have a DPoP proof's unknown header parameters and claims ignored).

// foldsToASCII reports whether name holds a letter that is not ASCII but
// which some reader's case mapping takes to ASCII letters (caseConfusable).
func foldsToASCII(name []byte) bool {
	for i, c := range name {
		if c < utf8.RuneSelf {
			continue
		}
		for _, r := range string(name[i:]) { // past the ASCII prefix, rune by rune (no copy)
			if caseConfusable(r) {
				return true
			}
		}
		return false
	}
	return false
}

// caseConfusable reports whether a reader could take r, which is not
// ASCII, for ASCII letters: under Unicode's simple upper, lower or title
// case or its simple folding (ı U+0131, İ U+0130, ſ U+017F, the Kelvin
// sign U+212A; TestCaseConfusableIsComplete checks every rune), under full
// case folding (ß U+00DF, ẞ U+1E9E, the ligatures ﬀ to ﬆ U+FB00-FB06), or
// under compatibility normalization of the fullwidth forms (U+FF01-FF5E).
func caseConfusable(r rune) bool {
	switch {
	case r == 0x130, r == 0x131, r == 0x17F, r == 0x212A, r == 0xDF, r == 0x1E9E:
		return true
	case 0xFB00 <= r && r <= 0xFB06, 0xFF01 <= r && r <= 0xFF5E:
		return true
	}
	return false
}

// foldByte returns c upper-cased if it is an ASCII letter, else c.
func foldByte(c byte) byte {
	if 'a' <= c && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c
}

// appendFolded appends name with its ASCII letters upper-cased: two
// names fold alike exactly when equalFold holds.
func appendFolded(out, name []byte) []byte {
	for _, c := range name {
		out = append(out, foldByte(c))
	}
	return out
}

// equalFold reports whether a and b are equal with their ASCII letters
// upper-cased (appendFolded's folding).
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if foldByte(a[i]) != foldByte(b[i]) {
			return false
		}
	}
	return true
}
