package strictjson

import (
	"encoding"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A node is what the rule knows of the Go type a JSON value decodes into.
// A nil *node is a value it knows nothing of (a string, a number, an
// interface, a type that decodes itself, a container of nothing else, a
// member no field takes): in it the walk checks only that no object names
// a member twice.
type node struct {
	shape *shape // a struct: its fields
	elem  *node  // a map or a slice: its elements; nil when not entered
	list  bool   // a slice or an array (else an object: a struct or a map)
}

// shape is what the rule knows of a struct type: the JSON names of its
// fields, as json v2 names them, with the nodes of their values.
type shape struct {
	fields map[string]field
	folded map[string]string // folded JSON name → JSON name
	names  []string          // the JSON names in field order, for messages
	closed bool              // takes no other member (Closed)
}

// field is one field of a struct: the type its value decodes into and the
// value's node.
type field struct {
	typ  reflect.Type
	node *node
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
	valueType     = reflect.TypeFor[jsontext.Value]()
	decodingTypes = []reflect.Type{
		reflect.TypeFor[json.UnmarshalerFrom](),
		reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	}
	closedType = reflect.TypeFor[Closed]()
)

// node builds the node of t.
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
	if t == valueType {
		return nil
	}
	for _, u := range decodingTypes {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &node{shape: &shape{fields: map[string]field{}, folded: map[string]string{},
			closed: t.Implements(closedType) || reflect.PointerTo(t).Implements(closedType)}}
		b.built[t] = n
		b.addFields(n.shape, t)
		return n
	case reflect.Map, reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		n := &node{list: t.Kind() != reflect.Map}
		b.built[t] = n // a type that holds itself
		if n.elem = b.node(t.Elem()); n.elem == nil {
			delete(b.built, t)
			return nil // nothing inside to enter
		}
		return n
	}
	return nil
}

// addFields adds the fields of struct type t to s, with those of embedded
// structs (inlined, as json v2 does).
func (b *builder) addFields(s *shape, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _ := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",") // single-quoted names are not supported
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		inline := hasOption(opts, "inline") || f.Anonymous && name == "" && ft.Kind() == reflect.Struct
		switch {
		case hasOption(opts, "unknown"):
			continue // it keeps the members no field names
		case inline:
			b.addFields(s, ft)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		if _, dup := s.fields[name]; !dup {
			s.names = append(s.names, name)
		}
		s.fields[name] = field{typ: f.Type, node: b.node(f.Type)}
		s.folded[string(appendFolded(nil, []byte(name)))] = name
	}
}

// hasOption reports whether the options of a json tag include opt.
func hasOption(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
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
