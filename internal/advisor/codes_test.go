package advisor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// dynamicCodes are the values a code built as "prefix"+x can take. A new
// prefix in the source fails the test until it is named here.
var dynamicCodes = map[string][]string{
	"repl.":         result.Verdicts,
	"plan.replica_": {result.VerdictKeepsUp, result.VerdictFallsBehindAtPeak, result.VerdictFallsBehind},
	// replicaPlan says the streams' sum only when it does not keep up.
	"plan.replica_link_": {result.VerdictFallsBehindAtPeak, result.VerdictFallsBehind},
}

// emittedCodes reads the non-test Go files of the given directories and
// returns every finding code they can emit, with where each is set.
func emittedCodes(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") || filepath.Base(n) == "codes.go" {
				continue
			}
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	// A code passed in a parameter (tail(code, …), caseFinding(code, …)) is
	// read at every call of the function.
	params := map[string]map[string]int{} // function → parameter → index
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			i := 0
			for _, fl := range fd.Type.Params.List {
				for _, n := range fl.Names {
					if params[fd.Name.Name] == nil {
						params[fd.Name.Name] = map[string]int{}
					}
					params[fd.Name.Name][n.Name] = i
					i++
				}
				if len(fl.Names) == 0 {
					i++
				}
			}
		}
	}
	out := map[string]string{}
	var read func(e ast.Expr, fn string)
	add := func(code string, e ast.Expr) { out[code] = fset.Position(e.Pos()).String() }
	read = func(e ast.Expr, fn string) {
		switch x := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(x.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(x.Pos()), err)
			}
			add(s, x)
			return
		case *ast.BinaryExpr:
			if l, ok := x.X.(*ast.BasicLit); ok && x.Op == token.ADD {
				prefix, _ := strconv.Unquote(l.Value)
				vals, ok := dynamicCodes[prefix]
				if !ok {
					t.Errorf("%s: a code built from %q and a value: name the values it takes in dynamicCodes", fset.Position(x.Pos()), prefix)
				}
				for _, v := range vals {
					add(prefix+v, x)
				}
				return
			}
		case *ast.Ident:
			if idx, ok := params[fn][x.Name]; ok {
				calls := 0
				for _, f := range files {
					ast.Inspect(f, func(n ast.Node) bool {
						if fd, ok := n.(*ast.FuncDecl); ok {
							// Calls are read inside their own function.
							ast.Inspect(fd, func(n ast.Node) bool {
								if c, ok := n.(*ast.CallExpr); ok {
									if id, ok := c.Fun.(*ast.Ident); ok && id.Name == fn && idx < len(c.Args) {
										calls++
										read(c.Args[idx], fd.Name.Name)
									}
								}
								return true
							})
							return false
						}
						return true
					})
				}
				if calls == 0 {
					t.Errorf("%s: code parameter %s of %s: no call found", fset.Position(x.Pos()), x.Name, fn)
				}
				return
			}
		}
		t.Errorf("%s: a finding code this test cannot read (%T): use a literal, \"prefix\"+value or a parameter", fset.Position(e.Pos()), e)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.KeyValueExpr:
					if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Code" && isFindingCode(x.Value) {
						read(x.Value, fd.Name.Name)
					}
				case *ast.AssignStmt:
					for i, l := range x.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "Code" && i < len(x.Rhs) && isFindingCode(x.Rhs[i]) {
							read(x.Rhs[i], fd.Name.Name)
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// isFindingCode tells a finding's code from another struct's Code field
// (the agent's wire.Code… constants): a finding code is a string.
func isFindingCode(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Kind == token.STRING
	case *ast.BinaryExpr:
		l, ok := x.X.(*ast.BasicLit)
		return ok && l.Kind == token.STRING
	case *ast.Ident:
		return x.Name == "code"
	}
	return false
}

// TestCodesAreEmitted holds Codes to the source: every code the advisor or
// the command line can emit is listed, and every listed code is emitted.
func TestCodesAreEmitted(t *testing.T) {
	emitted := emittedCodes(t, ".", "../cli", "../doctor")
	if len(emitted) < 10 {
		t.Fatalf("read only %d codes from the source: the reader is broken", len(emitted))
	}
	for code, where := range emitted {
		if !KnownCode(code) {
			t.Errorf("%s: code %q is emitted but not in Codes (codes.go)", where, code)
		}
	}
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Name] {
			t.Errorf("Codes lists %q twice", c.Name)
		}
		seen[c.Name] = true
		if _, ok := emitted[c.Name]; !ok {
			t.Errorf("Codes lists %q, which nothing emits", c.Name)
		}
		if strings.TrimSpace(c.Meaning) == "" {
			t.Errorf("Codes: %q has no meaning", c.Name)
		}
	}
}

// TestCodesReaderSeesEachForm proves the reader finds a code in each form
// the source uses, so a pass above is not the reader missing them.
func TestCodesReaderSeesEachForm(t *testing.T) {
	dir := t.TempDir()
	src := `package x
type F struct{ Code string }
func a() F { return F{Code: "a.literal"} }
func b(v string) F { f := F{}; f.Code = "b." + v; return f }
func c(code string) F { return F{Code: code} }
func d() F { return c("c.param") }
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dynamicCodes["b."] = []string{"one", "two"}
	defer delete(dynamicCodes, "b.")
	got := emittedCodes(t, dir)
	var names []string
	for k := range got {
		names = append(names, k)
	}
	slices.Sort(names)
	if want := []string{"a.literal", "b.one", "b.two", "c.param"}; !slices.Equal(names, want) {
		t.Fatalf("read %v, want %v", names, want)
	}
}
