package strictjson

import (
	"bytes"
	"hash/maphash"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// nameSet holds the member names of one object read so far and finds the
// earlier name that a new one repeats: exactly, or, when folding, under
// Unicode case folding (as bytes.EqualFold compares, "ſtatus" to "status"
// and the Kelvin sign to "k"). One set holds names of one mode.
//
// The first linearNames names are copied and compared one by one, which
// allocates nothing once the set has been used. Past them, an index maps
// the hash of each (folded) name to where the name starts in the input,
// and a name is read again from there when its hash comes up: a hostile
// object of a hundred thousand names costs one index entry per name, no
// copy and no string.
type nameSet struct {
	buf     []byte           // the first names, back to back
	ends    []int            // where each of them ends in buf
	offs    []int64          // where each of them starts in the input
	n       int              // the names added
	index   map[uint64]int64 // past linearNames: hash → where that name starts in the input
	others  []int64          // names whose hash was taken by another name (in practice never)
	scratch []byte           // for folding and re-reading names
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
func (s *nameSet) add(name []byte, off int64, input []byte, fold bool) (other []byte, clash bool) {
	same := bytes.Equal
	if fold {
		same = bytes.EqualFold
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
		s.index = make(map[uint64]int64, 4*linearNames)
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
	for _, o := range append([]int64{o}, s.others...) {
		if n := s.nameAt(input, o); same(n, name) {
			return n, true
		}
	}
	s.others = append(s.others, off) // two names, one hash
	return nil, false
}

// nameAt reads again the name that starts at off in input, valid until
// the next call.
func (s *nameSet) nameAt(input []byte, off int64) []byte {
	raw := input[off:]
	for i := 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			raw = raw[:i+1]
			if bytes.IndexByte(raw, '\\') < 0 {
				return raw[1:i]
			}
			s.scratch, _ = jsontext.AppendUnquote(s.scratch[:0], raw) // read once already
			return s.scratch
		}
	}
	return nil // not a name: off is wrong
}

func (s *nameSet) hash(name []byte, fold bool) uint64 {
	if !fold {
		return maphash.Bytes(seed, name)
	}
	s.scratch = appendFolded(s.scratch[:0], name)
	return maphash.Bytes(seed, s.scratch)
}

// appendFolded appends name folded so that two names fold alike exactly
// when bytes.EqualFold holds: each rune becomes the smallest of its case
// folding orbit.
func appendFolded(out, name []byte) []byte {
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
	return out
}

// foldRune returns the smallest rune of r's case folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
