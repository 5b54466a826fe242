//go:build linux

package wintest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

// packageTests are a package's tests to run built for Windows, each of
// which must pass: only these, or with all, every test of the package.
type packageTests struct {
	pkg   string
	tests []string
	all   bool
}

// packageTestsOnWindows builds each package's tests for Windows (one go
// test -c for all) and runs the named ones under Wine, each of which must
// pass.
func packageTestsOnWindows(t *testing.T, pkgs ...packageTests) {
	t.Helper()
	w := itest.NewWine(t)
	dir := t.TempDir()
	args := []string{"test", "-c", "-o", dir + string(filepath.Separator)}
	for _, p := range pkgs {
		args = append(args, p.pkg)
	}
	build := exec.Command("go", args...)
	build.Dir = filepath.Join("..", "..", "..")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c for Windows: %v\n%s", err, out)
	}
	for _, p := range pkgs {
		exe := filepath.Base(p.pkg) + ".test.exe"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		run := []string{"-test.count=1", "-test.v"}
		if !p.all {
			run = append(run, "-test.run", "^("+strings.Join(p.tests, "|")+")$")
		}
		out, err := w.Program(ctx, filepath.Join(dir, exe), run...).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s under Wine: %v\n%s", exe, err, out)
			continue
		}
		t.Logf("%s under Wine:\n%s", exe, out)
		for _, name := range p.tests {
			if !strings.Contains(string(out), "--- PASS: "+name+" ") {
				t.Errorf("%s did not pass %s:\n%s", exe, name, out)
			}
		}
	}
}
