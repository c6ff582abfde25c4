package middleware

import (
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The readings of a form key by the stacks the middleware names, each
// written from its parser's source, apart from keyMatch: PHP
// (php_register_variable_ex), Rack 2 (normalize_params), Rack 3
// (normalize_params at depth 0) and Express (qs parseKeys, with
// method-override taking an array's first value). Each returns the name
// the stack files the key's value under, and whether that value reaches
// the override as a method (a string, or an array whose first value
// method-override takes).
var stackReadings = map[string]func(key string) (name string, method bool){
	"php": func(k string) (string, bool) {
		k, _, _ = strings.Cut(k, "\x00")
		k = strings.TrimLeft(k, " ")
		array := false
		if i := strings.IndexByte(k, '['); i >= 0 {
			if strings.Contains(k[i:], "]") {
				k, array = k[:i], true
			} else {
				k = k[:i] + "_" + k[i+1:]
			}
		}
		return strings.NewReplacer(" ", "_", ".", "_").Replace(k), !array
	},
	"rack2": func(k string) (string, bool) {
		m := regexp.MustCompile(`^[\[\]]*([^\[\]]+)\]*`).FindStringSubmatch(k)
		if m == nil {
			return "", false
		}
		return m[1], len(m[0]) == len(k)
	},
	"rack3": func(k string) (string, bool) {
		if i := strings.IndexByte(k[min(1, len(k)):], '['); i >= 0 {
			return k[:i+1], false
		}
		return k, true
	},
	"express": func(k string) (string, bool) {
		seg := regexp.MustCompile(`\[[^\[\]]*\]`).FindStringIndex(k)
		switch {
		case seg == nil:
			return k, true
		case seg[0] == 0:
			return k[1 : seg[1]-1], !strings.Contains(k[seg[1]:], "[")
		default:
			inner := k[seg[0]+1 : seg[1]-1]
			return k[:seg[0]], inner == "" || inner == "0"
		}
	},
}

// TestFormKeysCountEveryKeyAStackReadsAsMethod: whatever key a stack reads
// as _method (its name, as it files it, is _method), formKeys counts it,
// in a query or body and escaped or not; so keyGuard, which fails where
// formKeys counts (TestKeyGuardFailsWhereFormKeysCounts), refuses it. The
// keys are made of the pieces the stacks spell _method with, in a fixed
// pseudo-random order.
func TestFormKeysCountEveryKeyAStackReadsAsMethod(t *testing.T) {
	t.Parallel()
	pieces := []string{"_", "method", "METHOD", "_method", " ", ".", "[", "]", "[]", "[0]", "\x00", "x", "0"}
	rng := rand.New(rand.NewPCG(8, 8))
	for range 50000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		key := b.String()
		for stack, read := range stackReadings {
			if name, _ := read(key); name != formKey {
				continue
			}
			for _, sent := range []string{key, url.QueryEscape(key), strings.ReplaceAll(url.QueryEscape(key), "+", "%20")} {
				if exact, lookalike := formKeys("a=1&" + sent + "=DELETE"); exact+lookalike == 0 {
					t.Fatalf("%s reads the key %q (sent as %q) as %s, which formKeys does not count", stack, key, sent, formKey)
				}
				if !mayHoldFormKey(sent + "=DELETE") {
					t.Fatalf("%s reads the key %q (sent as %q) as %s, which mayHoldFormKey spares", stack, key, sent, formKey)
				}
			}
			if !readAsKey(key, formKey) {
				t.Fatalf("%s reads the part name %q as %s, which readAsKey does not", stack, key, formKey)
			}
		}
	}
}

// TestReadAsKeySparesKeysNoStackReads: keys of ordinary forms, which no
// stack reads as _method, are not taken for it.
func TestReadAsKeySparesKeysNoStackReads(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "method", " method", "payment_method", "_methods", "_method_", "_method.x", "order[_method]", "x_method", "__method", "_meth", "_method x"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			for stack, read := range stackReadings {
				if name, _ := read(key); name == formKey {
					t.Fatalf("%s reads %q as %s: not a key to spare", stack, key, formKey)
				}
			}
			if readAsKey(key, formKey) {
				t.Errorf("readAsKey takes %q for %s", key, formKey)
			}
			if exact, lookalike := formKeys(url.QueryEscape(key) + "=x"); exact+lookalike > 0 {
				t.Errorf("formKeys counts %q", key)
			}
		})
	}
}
