package mockserver

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebUIPageListsAreBounded walks the data of every page the UI
// renders (through structs, pointers, and the rows of bounded lists) and
// fails on any slice or map that is not a bounded list's rows: every list a
// page shows is cut at maxUIRows and says how many it left out, whatever
// the realm holds (issue 28).
func TestWebUIPageListsAreBounded(t *testing.T) {
	t.Parallel()
	pages := []any{uiFrame{}, uiErrorPage{}, uiHomePage{}, uiOrgPage{}, uiUserPage{}, uiClientPage{}, uiEvalPage{}}
	for _, pg := range pages {
		typ := reflect.TypeOf(pg)
		t.Run(typ.Name(), func(t *testing.T) {
			seen := map[reflect.Type]bool{}
			var walk func(t reflect.Type, path string) []string
			walk = func(typ reflect.Type, path string) []string {
				switch typ.Kind() {
				case reflect.Pointer:
					return walk(typ.Elem(), path)
				case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan, reflect.Interface, reflect.Func:
					return []string{path + " (" + typ.String() + ")"}
				case reflect.Struct:
					if seen[typ] {
						return nil
					}
					seen[typ] = true
					if typ.PkgPath() == reflect.TypeFor[uiFrame]().PkgPath() && strings.HasPrefix(typ.Name(), "bounded[") {
						return walk(typ.Field(0).Type.Elem(), path+".Rows[]")
					}
					var bad []string
					for i := range typ.NumField() {
						f := typ.Field(i)
						bad = append(bad, walk(f.Type, path+"."+f.Name)...)
					}
					return bad
				}
				return nil
			}
			require.Empty(t, walk(typ, typ.Name()), "lists a page shows that are not bounded")
		})
	}
}
