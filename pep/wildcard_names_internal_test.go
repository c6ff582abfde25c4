package pep

import (
	"fmt"
	"strings"
	"testing"
)

// TestWildcardDropNamesAreOneToOne: the name of a wildcard's drop is what
// the cache remembers it by, and a second drop of a name it remembers
// keeps the first one's coverage (the same keys, fenced for more writers).
// Two different sets of wildcards under one context must therefore never
// share a name. A name written with two-byte lengths (a cache key's form,
// whose names are bounded; a wildcard's are not) let one wildcard of a
// resource 65,538 bytes long spell four others, ASCII all through: the
// second call's drop was taken for the first's, and the keys only it
// covers were left unfenced against older answers.
func TestWildcardDropNamesAreOneToOne(t *testing.T) {
	// Four wildcards whose encoded lengths sum to 65,536 after "ab"'s.
	ts := []string{strings.Repeat("t", 0x7F7F), strings.Repeat("u", 0x7F7F), strings.Repeat("v", 0x7F), strings.Repeat("w", 0x73)}
	spelled := []pair{{resource: "ab"}}
	var long strings.Builder
	long.WriteString("ab")
	for _, s := range ts {
		spelled = append(spelled, pair{resource: s})
		long.WriteString(string([]byte{byte(len(s) >> 8), byte(len(s)), 0, 0}))
		long.WriteString(s)
	}
	one := []pair{{resource: long.String()}}

	cases := []struct {
		name string
		a, b []pair
	}{
		{"a long resource spelling four", one, spelled},
		{"resource and scope split elsewhere", []pair{{resource: "*", scope: "ab"}}, []pair{{resource: "*a", scope: "b"}}},
		{"one wildcard or two", []pair{{resource: "ab"}}, []pair{{resource: "a"}, {resource: "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, ctx := range []string{"", `{"a":1}`} {
				if wildcardsCover(tc.a, ctx).Name == wildcardsCover(tc.b, ctx).Name {
					t.Fatalf("two different sets of wildcards under context %q share a drop's name", ctx)
				}
			}
		})
	}
	again := []pair{{resource: strings.Clone(long.String())}}
	if wildcardsCover(one, "").Name != wildcardsCover(again, "").Name {
		t.Fatal("the same wildcards under the same context must share a name, to be remembered once")
	}
}

// TestADropIsRememberedInBoundedBytes: what the cache keeps of a wildcard
// ListGranted's drop while an older request is open (its name and the
// wildcards its coverage reads) is bounded whatever the call asked, and
// still covers every cached pair the call's wildcards cover (a-drop17b:
// 1,024 drops, each holding wildcards of any length).
func TestADropIsRememberedInBoundedBytes(t *testing.T) {
	ctx := `{"a":1}`
	key := func(resource, scope, ctx string) string {
		return string(appendKey(nil, pair{resource: resource, scope: scope}, ctx))
	}
	// Many wildcards of cacheable length: the name passes the bound.
	var many []pair
	for i := range 100 {
		many = append(many, pair{resource: strings.Repeat(string(rune('a'+i%26)), 400) + string(rune('0'+i%10))})
	}
	w := wildcardsCover(many, ctx)
	if len(w.Name) > maxDropName {
		t.Fatalf("a drop's name is %d bytes, past %d", len(w.Name), maxDropName)
	}
	for _, q := range many[:3] {
		if !w.Covers(key(q.resource, "read", ctx)) {
			t.Errorf("the bounded drop does not cover %.8s.../read, which a wildcard asked covers", q.resource)
		}
	}
	if w.Covers(key(many[0].resource, "read", "")) {
		t.Error("the bounded drop covers a pair under another context")
	}
	// Many short wildcards: what their coverage holds is bounded too, by
	// their number (a-fix17b F2: a thousand two-byte resources passed the
	// name's bound and held 37 KB a drop).
	var short []pair
	for i := range 1000 {
		short = append(short, pair{resource: fmt.Sprintf("%03x", i)})
	}
	everything := wildcardsCover([]pair{{resource: "*"}}, ctx)
	if w := wildcardsCover(short, ctx); w.Name != everything.Name || !w.Covers(key("zzz", "read", ctx)) {
		t.Errorf("a drop of %d wildcards is not remembered as the wildcard of every pair of its context", len(short))
	}
	if w := wildcardsCover(short[:maxDropWildcards], ctx); w.Name == everything.Name || w.Covers(key("zzz", "read", ctx)) {
		t.Errorf("a drop of %d wildcards covers more than they do", maxDropWildcards)
	}
	// A wildcard too long to cover any cacheable pair costs nothing.
	long := wildcardsCover([]pair{{resource: strings.Repeat("x", 1<<20)}, {resource: "*", scope: strings.Repeat("y", 1<<20)}, {resource: "orders"}}, ctx)
	if len(long.Name) > 64 {
		t.Errorf("wildcards covering nothing cacheable made a name of %d bytes", len(long.Name))
	}
	if !long.Covers(key("orders", "read", ctx)) {
		t.Error("the drop lost the short wildcard beside the long ones")
	}
}
