//go:build linux

package itest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/testenv"
)

// Wine runs the Windows build of narrows (narrows.exe) under Debian's
// wine64, in a Wine prefix of the test process's own. Wine 8 lacks
// bcryptprimitives.dll!ProcessPrng, which Go's runtime needs at start, so
// the prefix gets the shim built from scripts/wine/processprng.c.
type Wine struct {
	Exe    string // narrows.exe
	Prefix string // WINEPREFIX
	dir    string // the prefix, the shim and the set-up's logs
	loader string // wine64
	env    []string
	// wrap runs the prefix's server and programs inside something (a
	// network namespace: Wine's sockets are made by its server, so a
	// program is on the network its prefix's server is on).
	wrap []string
}

var (
	wineOnce sync.Once
	wine     *Wine
	wineErr  error
)

// wine64 is where Debian's wine64 package puts its loader.
var wineLoaders = []string{"/usr/lib/wine/wine64", "/usr/bin/wine64"}

// NewWine returns the process's Wine, setting it up on first use: it
// takes narrows.exe from NARROWS_TEST_EXE (make test builds it) or builds
// it, builds the shim and makes the prefix (about 15 s). It skips t where
// wine64 or mingw-w64 is missing, and fails it where Wine is required
// (CI=true or NARROWS_REQUIRE_WINE=1). CloseWine ends it.
func NewWine(t testing.TB) *Wine {
	t.Helper()
	wineOnce.Do(func() { wine, wineErr = setUpWine(nil) })
	if wineErr != nil {
		testenv.Need(t, testenv.Wine, "%v", wineErr)
	}
	return wine
}

// CloseWine stops the prefix's wineserver and removes the prefix; a
// TestMain calls it after m.Run.
func CloseWine() {
	if wine == nil {
		return
	}
	wine.close()
}

// NewWineIn is a Wine of t's own whose server and programs run under
// wrap (["ip", "netns", "exec", NS]: narrows.exe on that namespace's
// network, which it cannot reach from the process's Wine, whose server
// made its sockets outside). It has a prefix of its own (about 15 s to
// make), removed with its server at t's end.
func NewWineIn(t testing.TB, wrap []string) *Wine {
	t.Helper()
	w, err := setUpWine(wrap)
	if err != nil {
		testenv.Need(t, testenv.Wine, "%v", err)
	}
	t.Cleanup(func() { w.close() })
	return w
}

func (w *Wine) close() {
	k := exec.Command(w.server(), "-k")
	k.Env = append(os.Environ(), w.env...)
	k.Run() //nolint:errcheck // none may run
	os.RemoveAll(w.dir)
}

func setUpWine(wrap []string) (*Wine, error) {
	w := &Wine{wrap: wrap}
	for _, l := range wineLoaders {
		if _, err := os.Stat(l); err == nil {
			w.loader = l
			break
		}
	}
	if w.loader == "" {
		return nil, fmt.Errorf("wine64 is not installed (Debian: apt-get install wine64; make test-deps does it)")
	}
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		return nil, fmt.Errorf("mingw-w64 is not installed (Debian: apt-get install gcc-mingw-w64-x86-64; make test-deps does it)")
	}
	dir, err := os.MkdirTemp("", "narrows-wine-")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	w.dir = dir
	w.Prefix = filepath.Join(dir, "prefix")
	if err := os.MkdirAll(w.Prefix, 0o755); err != nil {
		return nil, err
	}
	// WINEDEBUG=-all: Wine's own "fixme" chatter would mix with what
	// narrows writes on stderr. mscoree and mshtml off: the prefix would
	// ask to download Mono and Gecko, which this machine cannot.
	w.env = []string{"WINEPREFIX=" + w.Prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=bcryptprimitives=n;mscoree=;mshtml=", "WINEARCH=win64"}
	if w.Exe, err = windowsExe(root, dir); err != nil {
		return nil, err
	}
	// The deadline is Wine's: a prefix takes about 15 s to make. No
	// compile runs under it (a cold one took over 3 minutes beside the
	// other checks on a 2-core machine, and was killed).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inPrefix := func(name string, args ...string) *exec.Cmd {
		full := append(append(append([]string{}, wrap...), name), args...)
		c := exec.CommandContext(ctx, full[0], full[1:]...)
		c.Env = append(os.Environ(), w.env...)
		return c
	}
	shim := filepath.Join(dir, "bcryptprimitives.dll")
	steps := []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"build the ProcessPrng shim", inPrefix(cc, "-shared", "-O2", "-o", shim, filepath.Join(root, "scripts", "wine", "processprng.c"))},
		// A server that stays up a minute after its last process (until
		// CloseWine, or a minute after a test process that died): one that
		// exits 3 s after can drop a process starting just then ("wine
		// client error: recvmsg: Connection reset by peer"), and the tests
		// start many, some in parallel.
		{"start the Wine server", inPrefix(w.server(), "-p60")},
		{"make the Wine prefix", inPrefix(w.loader, "wineboot", "--init")},
		// Wine 8 says it is Windows 7 unless told; narrows targets 10.
		{"make the prefix Windows 10", inPrefix(w.loader, "reg", "add", `HKCU\Software\Wine`, "/v", "Version", "/t", "REG_SZ", "/d", "win10", "/f")},
	}
	for _, s := range steps {
		// Output to a file, not a pipe: wineboot leaves the prefix's
		// services running under the server, holding what it was given.
		out, err := os.CreateTemp(dir, "step-*.log")
		if err != nil {
			return nil, err
		}
		s.cmd.Stdout, s.cmd.Stderr = out, out
		err = s.cmd.Run()
		out.Close()
		if err != nil {
			b, _ := os.ReadFile(out.Name())
			return nil, fmt.Errorf("%s: %v\n%s", s.name, err, b)
		}
	}
	// Go's runtime loads bcryptprimitives.dll from System32 only.
	b, err := os.ReadFile(shim)
	if err == nil {
		err = os.WriteFile(filepath.Join(w.Prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), b, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("install the ProcessPrng shim: %v", err)
	}
	ok = true
	return w, nil
}

// windowsExe is narrows.exe: the one NARROWS_TEST_EXE names, or one built
// into dir from the tree at root, bounded only by go test's -timeout.
func windowsExe(root, dir string) (string, error) {
	if p, ok := os.LookupEnv(ExeEnv); ok {
		return prebuilt(ExeEnv, p)
	}
	exe := filepath.Join(dir, "narrows.exe")
	build := exec.Command("go", "build", "-o", exe, "./cmd/narrows")
	build.Dir, build.Env = root, append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build narrows.exe: %v\n%s", err, out)
	}
	return exe, nil
}

// server is the prefix's wineserver, beside the loader.
func (w *Wine) server() string { return filepath.Join(filepath.Dir(w.loader), "wineserver") }

// Path is the Windows name of a Linux path: Wine maps / to drive Z:.
func (w *Wine) Path(p string) string {
	return `Z:` + strings.ReplaceAll(p, "/", `\`)
}

// Env is what a command needs in its environment to run in this prefix.
func (w *Wine) Env() []string { return append([]string{}, w.env...) }

// Run runs narrows.exe with args under Wine, as Run runs narrows.
func (w *Wine) Run(t testing.TB, timeout time.Duration, env []string, args ...string) Result {
	t.Helper()
	return run(t, timeout, append(w.Env(), env...), append(append(append([]string{}, w.wrap...), w.loader, w.Exe), args...))
}

// Command is narrows.exe with args under Wine, not yet started: for a
// test that ends it itself. Killing its process kills narrows.exe (the
// loader becomes the Windows process).
func (w *Wine) Command(args ...string) *exec.Cmd {
	return w.Program(context.Background(), w.Exe, args...)
}

// Program is another Windows program (a test binary) under Wine, not yet
// started; ctx ends it.
func (w *Wine) Program(ctx context.Context, exe string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, w.loader, append([]string{exe}, args...)...)
	c.Env = append(os.Environ(), w.env...)
	return c
}

// StartAgent starts `narrows.exe serve` with args under Wine, as
// StartAgent does on Linux.
func (w *Wine) StartAgent(t testing.TB, args []string) *Agent {
	t.Helper()
	return startAgent(t, append([]string{w.loader, w.Exe, "serve"}, args...), w.Env())
}

// Restart ends every Windows process of the prefix (services.exe too)
// and its server, and starts a new server, so that the next process
// begins a new Wine session. The new server stays up a minute past its
// last process, as the first did.
func (w *Wine) Restart(t testing.TB) {
	t.Helper()
	for _, args := range [][]string{{"-k"}, {"-w"}, {"-p60"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c := exec.CommandContext(ctx, w.server(), args...)
		c.Env = append(os.Environ(), w.env...)
		// No pipes: the server it starts would hold them open.
		err := c.Run()
		cancel()
		// -k and -w fail when no server runs: nothing to end.
		if err != nil && args[0] == "-p60" {
			t.Fatalf("wineserver %s: %v", args[0], err)
		}
	}
}
