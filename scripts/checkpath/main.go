// Command checkpath measures the path of one uncached pep.Client.Check:
// the files it passes through and its climbs back up the import order (a
// call from a package into one that imports it, which only a callback or
// an interface can make). It is a development tool; nothing imports it.
//
//	go run ./scripts/checkpath [-rev REV] [-v]
//
// It copies the working tree's files (or the tree at rev) to a temporary
// directory, makes
// every function of the module outside the reference server, the examples
// and the nested modules record its stack when entered, adds a test to pep
// that makes one Check against the reference server (startReference, after
// a first Check on another pair has opened the connection) while recording,
// runs that test, and prints:
//
//   - the files entered, in the order first entered;
//   - passes: the function entries whose caller (the nearest recorded
//     frame below) is in another file, or that start a goroutine;
//   - climbs: the entries whose caller's package is imported, directly or
//     not, by the entered function's package;
//   - the summary as issue 25 quotes it ("22 files, 74 passes into another
//     file, 11 climbs") and the passes by the package entered.
//
// With -v it prints every pass and climb. It exits 1 when the run fails.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const module = "github.com/orgauthz/orgauthz"

// skipped are the directories whose functions are not recorded: the
// reference server, programs, test helpers, nested modules.
var skipped = []string{"mockserver", "examples", "integration", "redisstore", "scripts", "internal/cptrace",
	"internal/gatewaytest", "internal/adaptertest", "internal/frozentest", "internal/deps", "internal/hangguard",
	"internal/testkit", "internal/servertest", "internal/corpfixture", "internal/replaytest"}

func main() {
	rev := flag.String("rev", "", "the revision to measure (default: the working tree)")
	verbose := flag.Bool("v", false, "print every pass and climb")
	flag.Parse()
	log.SetFlags(0)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	check(err)
	dir, err := os.MkdirTemp("", "checkpath-")
	check(err)
	defer os.RemoveAll(dir)
	copyTree := `git -C "$0" archive "$1" | tar -x -C "$2"`
	if *rev == "" {
		copyTree = `cd "$0" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -c --ignore-failed-read | tar -x -C "$2"`
	}
	archive := exec.Command("sh", "-c", copyTree, strings.TrimSpace(string(top)), *rev, dir)
	archive.Stderr = os.Stderr
	check(archive.Run())
	check(instrument(dir))
	check(os.WriteFile(filepath.Join(dir, "pep", "zz_checkpath_test.go"), []byte(pathTest), 0o644))
	out := filepath.Join(dir, "stacks.json")
	test := exec.Command("go", "test", "-count=1", "-run", "^TestCheckPath$", "./pep")
	test.Dir, test.Stdout, test.Stderr = dir, os.Stderr, os.Stderr
	test.Env = append(os.Environ(), "CHECKPATH_OUT="+out)
	check(test.Run())
	check(analyse(dir, out, *verbose))
}

func check(err error) {
	if err != nil {
		log.Fatal("checkpath: ", err)
	}
}

func isSkipped(rel string) bool {
	for _, p := range skipped {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// instrument adds cptrace.Here() at the top of every function body of the
// recorded packages under root.
func instrument(root string) error {
	if err := os.MkdirAll(filepath.Join(root, "internal", "cptrace"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "internal", "cptrace", "cptrace.go"), []byte(recorder), 0o644); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || isSkipped(rel) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return instrumentFile(path)
	})
}

func instrumentFile(path string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil || f.Name.Name == "main" {
		return err
	}
	changed := false
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body = fn.Body
		case *ast.FuncLit:
			body = fn.Body
		}
		if body != nil {
			here := &ast.ExprStmt{X: &ast.CallExpr{Fun: &ast.SelectorExpr{X: ast.NewIdent("cptrace"), Sel: ast.NewIdent("Here")}}}
			body.List = append([]ast.Stmt{here}, body.List...)
			changed = true
		}
		return true
	})
	if !changed {
		return nil
	}
	spec := &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: `"` + module + `/internal/cptrace"`}}
	f.Decls = append([]ast.Decl{&ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{spec}}}, f.Decls...)
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, f); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// frame is a frame of a recorded stack.
type frame struct{ Func, File string }

// pkgOf returns the package path of a function name as runtime.Frame has
// it ("path/pkg.(*T).M.func1").
func pkgOf(fn string) string {
	i := strings.LastIndex(fn, "/")
	return fn[:i+1+strings.Index(fn[i+1:], ".")]
}

func analyse(root, stacksFile string, verbose bool) error {
	b, err := os.ReadFile(stacksFile)
	if err != nil {
		return err
	}
	var stacks [][]frame // leaf first
	if err := json.Unmarshal(b, &stacks); err != nil {
		return err
	}
	list := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	imports := map[string]map[string]bool{} // a package's module dependencies, direct or not
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		deps := map[string]bool{}
		for _, d := range fields[1:] {
			deps[d] = true
		}
		imports[fields[0]] = deps
	}
	recorded := func(f frame) bool {
		if !strings.HasPrefix(f.Func, module+"/") || strings.HasSuffix(f.File, "_test.go") {
			return false
		}
		return !isSkipped(strings.TrimPrefix(pkgOf(f.Func), module+"/"))
	}
	rel := func(file string) string {
		if r, err := filepath.Rel(root, file); err == nil {
			return r
		}
		return file
	}
	name := func(f frame) string { return strings.TrimPrefix(f.Func, module+"/") + " (" + rel(f.File) + ")" }
	var files []string
	seen := map[string]bool{}
	funcs := map[string]bool{}
	entries, passes, climbs := 0, 0, 0
	byPkg := map[string]int{} // passes by the package of the function entered
	for _, st := range stacks {
		var path []frame
		server := false
		for _, f := range st {
			server = server || strings.HasPrefix(f.Func, "net/http.(*conn).serve") || strings.HasPrefix(f.Func, module+"/mockserver")
			if recorded(f) {
				path = append(path, f)
			}
		}
		if server || len(path) == 0 { // the reference server's side of the exchange
			continue
		}
		callee := path[0]
		entries++
		funcs[callee.Func] = true
		if !seen[callee.File] {
			seen[callee.File] = true
			files = append(files, rel(callee.File))
		}
		if len(path) == 1 {
			passes++
			byPkg[pkgOf(callee.Func)]++
			if verbose {
				fmt.Println("start  " + name(callee))
			}
			continue
		}
		caller := path[1]
		if caller.File != callee.File {
			passes++
			byPkg[pkgOf(callee.Func)]++
			if verbose {
				fmt.Println("pass   " + name(caller) + " -> " + name(callee))
			}
		}
		if cp, lp := pkgOf(caller.Func), pkgOf(callee.Func); cp != lp && imports[lp][cp] {
			climbs++
			fmt.Println("CLIMB  " + name(caller) + " -> " + name(callee))
		}
	}
	fmt.Printf("files in the order first entered (%d):\n", len(files))
	for _, f := range files {
		fmt.Println("  " + f)
	}
	fmt.Printf("function entries %d (%d functions), passes into another file %d, files %d, climbs %d\n",
		entries, len(funcs), passes, len(files), climbs)
	// The summary in the form issue 25 quotes ("22 files, 74 passes into
	// another file, 11 climbs"), and the passes per package entered.
	fmt.Printf("%d files, %d passes into another file, %d climbs\n", len(files), passes, climbs)
	for _, p := range slices.Sorted(maps.Keys(byPkg)) {
		fmt.Printf("  passes into %s: %d\n", p, byPkg[p])
	}
	return nil
}

// recorder is the package the instrumented functions call.
const recorder = `// Package cptrace records the stack of every instrumented function entry.
package cptrace

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Frame is one frame of a recorded stack.
type Frame struct{ Func, File string }

var (
	on     atomic.Bool
	mu     sync.Mutex
	stacks [][]Frame
)

// Start starts recording.
func Start() { on.Store(true) }

// Stop stops recording and returns the stacks, leaf first.
func Stop() [][]Frame {
	on.Store(false)
	mu.Lock()
	defer mu.Unlock()
	s := stacks
	stacks = nil
	return s
}

// Here records the caller's stack while recording.
func Here() {
	if !on.Load() {
		return
	}
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	var st []Frame
	for {
		f, more := frames.Next()
		st = append(st, Frame{f.Function, f.File})
		if !more {
			break
		}
	}
	mu.Lock()
	stacks = append(stacks, st)
	mu.Unlock()
}
`

// pathTest is the test added to pep: one uncached Check, recorded.
const pathTest = `package pep_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/orgauthz/orgauthz/internal/cptrace"
)

func TestCheckPath(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "alice"))
	if _, err := c.Check(t.Context(), "orders", "write"); err != nil { // opens the connection
		t.Fatal(err)
	}
	cptrace.Start()
	d, err := c.Check(t.Context(), "orders", "read")
	stacks := cptrace.Stop()
	if err != nil || !d.Allowed() || d.Cached {
		t.Fatalf("the recorded Check was not an uncached grant: %+v, %v", d, err)
	}
	b, err := json.Marshal(stacks)
	if err == nil {
		err = os.WriteFile(os.Getenv("CHECKPATH_OUT"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
`
