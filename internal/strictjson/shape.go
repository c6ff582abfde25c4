package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
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
	fields map[string]*node  // JSON name → the node of its value
	folded map[string]string // folded JSON name → JSON name
	names  []string          // the JSON names in field order, for messages
	closed bool              // takes no other member (Closed)
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
	b := builder{}
	n := b.node(t)
	for t, n := range b {
		nodes.LoadOrStore(t, n)
	}
	nodes.LoadOrStore(t, n)
	return n
}

// builder holds the types entered while building nodes, finished or not.
type builder map[reflect.Type]*node

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
func (b builder) node(t reflect.Type) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n, ok := b[t]; ok {
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
		n.want, n.shape = '{', &shape{fields: map[string]*node{}, folded: map[string]string{},
			closed: reflect.PointerTo(t).Implements(closedType)}
		b[t] = n // a type that holds itself
		b.addFields(n.shape, t)
	case reflect.Map:
		n.want = '{'
		b[t] = n
		n.elem = b.node(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string, or an array of numbers
		}
		n.want = '['
		b[t] = n
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

// addFields adds the fields of struct type t to s, with those of embedded
// structs, as encoding/json's typeFields finds them: by the json tag's name
// if it is valid, else by the Go name, level by level through embedded
// structs, entering each struct type once (a struct that embeds itself, or
// two that embed each other, are read as encoding/json reads them, not
// followed forever). Where fields take one name the shallowest counts,
// then the one tagged one (dominantField): a name that two fields of one
// depth take with no tag between them deciding is no field at all, as
// encoding/json drops it, so a Closed object refuses it.
func (b builder) addFields(s *shape, t reflect.Type) {
	type found struct {
		name   string
		index  []int // the path of field indexes from t, for field order
		depth  int
		tagged bool
		typ    reflect.Type
	}
	type embedded struct {
		typ   reflect.Type
		index []int
	}
	var (
		all       []found
		current   []embedded
		next      = []embedded{{typ: t}}
		count     map[reflect.Type]int
		nextCount = map[reflect.Type]int{t: 1}
		visited   = map[reflect.Type]bool{} // struct types entered at an earlier level, or this one
	)
	for depth := 0; len(next) > 0; depth++ {
		current, next = next, nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				f := e.typ.Field(i)
				if f.Anonymous {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !f.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(append([]int(nil), e.index...), i)
				ft := f.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && f.Anonymous && ft.Kind() == reflect.Struct {
					nextCount[ft]++
					if nextCount[ft] == 1 {
						next = append(next, embedded{typ: ft, index: index})
					}
					continue
				}
				tagged := name != ""
				if !tagged {
					name = f.Name
				}
				fd := found{name: name, index: index, depth: depth, tagged: tagged, typ: f.Type}
				all = append(all, fd)
				if count[e.typ] > 1 {
					all = append(all, fd) // one struct embedded twice at one level: its fields are ambiguous
				}
			}
		}
	}
	// dominantField: per name, the shallowest fields, a tagged one first.
	best := map[string]int{} // name → index in all of its dominant field
	ambiguous := map[string]bool{}
	for i, f := range all {
		j, seen := best[f.name]
		switch {
		case !seen:
			best[f.name] = i
		case f.depth < all[j].depth:
			best[f.name], ambiguous[f.name] = i, false
		case f.depth > all[j].depth:
		case f.tagged && !all[j].tagged:
			best[f.name], ambiguous[f.name] = i, false
		case f.tagged == all[j].tagged:
			ambiguous[f.name] = true
		}
	}
	var keep []found
	for name, i := range best {
		if !ambiguous[name] {
			keep = append(keep, all[i])
		}
	}
	slices.SortFunc(keep, func(a, b found) int { return slices.Compare(a.index, b.index) })
	for _, f := range keep {
		s.names = append(s.names, f.name)
		s.folded[string(appendFolded(nil, []byte(f.name)))] = f.name
		s.fields[f.name] = b.node(f.typ)
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
	if n, ok := s.fields[string(name)]; ok {
		return n, true, ""
	}
	*fold = appendFolded((*fold)[:0], name)
	return nil, false, s.folded[string(*fold)]
}
