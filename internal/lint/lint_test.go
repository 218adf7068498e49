package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/petrelmq/petrel/"

// pkgFiles maps each package directory (relative to the repo root) to its
// non-test Go files, parsed.
func pkgFiles(t *testing.T) map[string][]*ast.File {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		full, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], full)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("found only %d packages; is the test run from internal/lint?", len(out))
	}
	return out
}

func imports(f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, module) {
			out = append(out, strings.TrimPrefix(p, module))
		}
	}
	return out
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// TestImportsPointOneWay keeps fronts -> broker -> store -> vfs/clock.
func TestImportsPointOneWay(t *testing.T) {
	// forbidden[p] lists package prefixes p must not import.
	fronts := []string{"internal/remoting", "internal/grpcfront", "internal/console", "internal/metrics", "cmd"}
	upper := append([]string{"internal/broker", "internal/namesrv", "internal/ha", "internal/controller"}, fronts...)
	rules := []struct {
		pkg       string
		forbidden []string
		onlyStd   bool
	}{
		{pkg: "internal/message", onlyStd: true},
		{pkg: "internal/clock", onlyStd: true},
		{pkg: "internal/vfs", onlyStd: true},
		{pkg: "internal/netx", onlyStd: true},
		{pkg: "internal/store", forbidden: upper},
		{pkg: "internal/broker", forbidden: fronts},
		// The name server speaks remoting itself (it is transport plus a
		// route table); it knows nothing of brokers' internals.
		{pkg: "internal/namesrv", forbidden: []string{"internal/broker", "internal/store", "internal/grpcfront", "internal/console", "cmd"}},
	}
	checked := 0
	for pkg, files := range pkgFiles(t) {
		for _, r := range rules {
			if !under(pkg, r.pkg) {
				continue
			}
			for _, f := range files {
				for _, imp := range imports(f) {
					if r.onlyStd {
						if pkg != r.pkg && imp == r.pkg {
							continue // a helper subpackage (vfs/vfstest) may use the package it serves
						}
						t.Errorf("%s imports %s; it must import none of our packages", pkg, imp)
					}
					for _, bad := range r.forbidden {
						if under(imp, bad) {
							t.Errorf("%s imports %s; imports must point fronts -> broker -> store -> vfs/clock", pkg, imp)
						}
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import was checked")
	}
}

// TestTimeComesFromTheClock: packages whose timers decide behaviour must use
// internal/clock, so tests can drive them with a manual clock.
func TestTimeComesFromTheClock(t *testing.T) {
	banned := map[string]bool{"Now": true, "Sleep": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "Tick": true, "Since": true, "Until": true}
	scoped := []string{"internal/store", "internal/broker", "internal/namesrv", "internal/ha", "internal/controller", "internal/auth"}
	seen := 0
	for pkg, files := range pkgFiles(t) {
		in := false
		for _, s := range scoped {
			in = in || under(pkg, s)
		}
		if !in {
			continue
		}
		seen++
		for _, f := range files {
			timeName := ""
			for _, imp := range f.Imports {
				if imp.Path.Value == `"time"` {
					timeName = "time"
					if imp.Name != nil {
						timeName = imp.Name.Name
					}
				}
			}
			if timeName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && banned[sel.Sel.Name] {
					t.Errorf("%s calls time.%s; take time from internal/clock", pkg, sel.Sel.Name)
				}
				return true
			})
		}
	}
	if seen == 0 {
		t.Fatal("no package was checked")
	}
}

// TestMetricsReadsNoStoreInternals: the metrics collector reads what it
// reports through the broker (and the hooks the daemon installs), never
// through the store's packages, so the store can change behind the broker's
// API without the metrics noticing. Tests of metrics may use the store.
func TestMetricsReadsNoStoreInternals(t *testing.T) {
	checked := 0
	for pkg, files := range pkgFiles(t) {
		if !under(pkg, "internal/metrics") {
			continue
		}
		for _, f := range files {
			for _, imp := range imports(f) {
				if under(imp, "internal/store") {
					t.Errorf("%s imports %s; metrics reads the store through the broker", pkg, imp)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no file of internal/metrics was checked")
	}
}

// TestFrontsSpeakOnlyToTheBroker: a front translates a protocol and keeps
// its sessions; what it stores, decides or waits for is the broker's. So
// the fronts import neither the store (nor its meta tables) nor the
// broker's subpackages (txn, pop, timer, ...): only package broker's API.
func TestFrontsSpeakOnlyToTheBroker(t *testing.T) {
	fronts := []string{"internal/remoting/brokerfront", "internal/grpcfront"}
	checked := map[string]int{}
	for pkg, files := range pkgFiles(t) {
		for _, front := range fronts {
			if !under(pkg, front) {
				continue
			}
			for _, f := range files {
				for _, imp := range imports(f) {
					if under(imp, "internal/store") {
						t.Errorf("%s imports %s; a front reaches the store only through package broker", pkg, imp)
					}
					if under(imp, "internal/broker") && imp != "internal/broker" {
						t.Errorf("%s imports %s; a front uses package broker's API, not its subpackages", pkg, imp)
					}
				}
				checked[front]++
			}
		}
	}
	for _, front := range fronts {
		if checked[front] == 0 {
			t.Errorf("no file of %s was checked", front)
		}
	}
}

// TestAuthCoreIsPure: the auth core (users, policies, signatures, the
// decision) reads only its Directory and its clock, so it stays testable
// without a broker or a network; the glue to the remoting layer lives in
// internal/auth/authwire.
func TestAuthCoreIsPure(t *testing.T) {
	checked := 0
	for pkg, files := range pkgFiles(t) {
		if !under(pkg, "internal/auth") || under(pkg, "internal/auth/authwire") {
			continue
		}
		for _, f := range files {
			for _, imp := range imports(f) {
				if imp != "internal/clock" {
					t.Errorf("%s imports %s; the auth core may import only internal/clock of our packages", pkg, imp)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no file of internal/auth was checked")
	}
}
