package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// A node is what the walk knows of the Go type a JSON value decodes into:
// the JSON kinds it takes and, for an object or an array, what its members
// or elements decode into. A nil *node is a value it knows nothing of (an
// interface, a type that decodes itself, []byte, a member no field takes):
// in it the walk checks only that no object names a member twice, and
// encoding/json judges the value.
type node struct {
	typ    reflect.Type // the Go type, without pointers
	want   Kind         // the kind it takes besides null: '{', '[', '"', 't' (true or false) or '0'
	shape  *shape       // a struct: its fields
	elem   *node        // a map or a slice: its elements
	number numberKind   // a number: what it must fit
	bits   int          // a number: the size of its type
}

type numberKind uint8

const (
	intNumber numberKind = iota + 1
	uintNumber
	floatNumber
)

// takes reports whether a value of kind k (not null) decodes into n's type.
func (n *node) takes(k Kind) bool {
	if k == 'f' {
		k = 't'
	}
	return k == n.want
}

// shape is what the rule knows of a struct type: the JSON names of its
// fields, as encoding/json names them, with the nodes of their values.
type shape struct {
	fields map[string]field
	folded map[string]string // folded JSON name → JSON name
	names  []string          // the JSON names in field order, for messages
	closed bool              // takes no other member (Closed)
}

// field is one field of a struct: the node of its value, and how deep in
// embedded structs it is (the shallowest of one name wins, as in
// encoding/json).
type field struct {
	node   *node
	depth  int
	tagged bool
}

// Closed is implemented by a struct type whose JSON object takes only its
// own fields: Unmarshal refuses any other member of it, where members
// nobody reads are otherwise ignored. It is for objects where a misplaced
// member would silently change a decision, not for every body.
type Closed interface{ ClosedJSONObject() }

// nodes caches the node of each type; buildMutex lets one goroutine at a
// time build the nodes of new types.
var (
	nodes      sync.Map // reflect.Type → *node
	buildMutex sync.Mutex
)

// nodeOf returns the node of values of type t.
func nodeOf(t reflect.Type) *node {
	if n, ok := nodes.Load(t); ok {
		return n.(*node)
	}
	buildMutex.Lock()
	defer buildMutex.Unlock()
	b := builder{built: map[reflect.Type]*node{}}
	n := b.node(t)
	for t, n := range b.built {
		nodes.LoadOrStore(t, n)
	}
	nodes.LoadOrStore(t, n)
	return n
}

type builder struct {
	built map[reflect.Type]*node // entered types, finished or not
}

var (
	decodingTypes = []reflect.Type{
		reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	}
	numberType = reflect.TypeFor[json.Number]()
	closedType = reflect.TypeFor[Closed]()
)

// node builds the node of t, following encoding/json: what it decodes
// into a value of t is what the node takes.
func (b *builder) node(t reflect.Type) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n, ok := b.built[t]; ok {
		return n
	}
	if n, ok := nodes.Load(t); ok {
		return n.(*node)
	}
	for _, u := range decodingTypes {
		if reflect.PointerTo(t).Implements(u) {
			return nil // a JSON value of any kind may be its business
		}
	}
	n := &node{typ: t}
	switch t.Kind() {
	case reflect.Struct:
		n.want, n.shape = '{', &shape{fields: map[string]field{}, folded: map[string]string{},
			closed: reflect.PointerTo(t).Implements(closedType)}
		b.built[t] = n // a type that holds itself
		b.addFields(n.shape, t, 0)
	case reflect.Map:
		n.want = '{'
		b.built[t] = n
		n.elem = b.node(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string, or an array of numbers
		}
		n.want = '['
		b.built[t] = n
		n.elem = b.node(t.Elem())
	case reflect.String:
		if t == numberType {
			return nil // a number, or a string holding one
		}
		n.want = '"'
	case reflect.Bool:
		n.want = 't'
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.want, n.number, n.bits = '0', intNumber, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.want, n.number, n.bits = '0', uintNumber, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.want, n.number, n.bits = '0', floatNumber, t.Bits()
	default:
		return nil // an interface; a kind encoding/json refuses itself
	}
	return n
}

// addFields adds the fields of struct type t, depth embeddings down, to s,
// with those of embedded structs, as encoding/json names them: by the
// json tag's name if it is valid, else by the Go name. Where two fields
// take one name the shallowest counts, then a tagged one.
func (b *builder) addFields(s *shape, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if !validTag(name) {
			name = ""
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			b.addFields(s, ft, depth+1)
			continue
		case !f.IsExported():
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		old, dup := s.fields[name]
		if !dup {
			s.names = append(s.names, name)
			s.folded[string(appendFolded(nil, []byte(name)))] = name
		}
		if !dup || depth < old.depth || depth == old.depth && tagged && !old.tagged {
			s.fields[name] = field{node: b.node(f.Type), depth: depth, tagged: tagged}
		}
	}
}

// validTag reports whether encoding/json takes name as a field's JSON
// name (its isValidTag).
func validTag(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// field returns the node of the member name and whether it names a field;
// a name that names none but folds to one returns that field's name as
// variantOf. fold is scratch space.
func (s *shape) field(name []byte, fold *[]byte) (n *node, known bool, variantOf string) {
	if f, ok := s.fields[string(name)]; ok {
		return f.node, true, ""
	}
	*fold = appendFolded((*fold)[:0], name)
	return nil, false, s.folded[string(*fold)]
}
