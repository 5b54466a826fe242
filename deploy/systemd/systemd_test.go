//go:build linux

package systemd

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testenv"
)

// The units the tests check: the unit alone, and with each drop-in
// beside it, as installed under /etc/systemd/system/narrows.service.d/.
var variants = []struct {
	name    string
	dropIns []string
	// The most exposure systemd-analyze security may give the unit, in
	// tenths (its --threshold): on systemd 252 the unit reads 1.2, with
	// allow-try.conf 2.5. A sandboxing line dropped raises it past these.
	threshold int
}{
	{"unit", nil, 15},
	{"allow-try", []string{"allow-try.conf"}, 30},
}

const unitName = "narrows.service"

// TestVerify holds the unit, with and without each drop-in, to
// systemd-analyze verify (unknown sections and keys, bad values, a
// command that is not there, missing dependencies) and to its security
// review. Both work offline, on a root of the test's own: the unit and
// its drop-ins where systemd reads them, narrows where ExecStart names
// it, and this machine's targets (sysinit.target and the others the unit
// is ordered against).
func TestVerify(t *testing.T) {
	analyze := need(t, "systemd-analyze")
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			root := unitRoot(t, v.dropIns)
			out, err := exec.Command(analyze, "verify", "--man=no", "--generators=no", "--recursive-errors=yes",
				"--root="+root, unitName).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
			out, err = exec.Command(analyze, "security", "--offline=yes", "--no-pager",
				"--threshold="+strconv.Itoa(v.threshold), "--root="+root, unitName).CombinedOutput()
			overall := regexp.MustCompile(`Overall exposure level for \S+: .*`).Find(out)
			if err != nil || overall == nil {
				t.Errorf("systemd-analyze security, held to %d.%d: %v\n%s", v.threshold/10, v.threshold%10, err, out)
			}
			t.Logf("%s", overall)
		})
	}
}

// TestSysusers makes the unit's user with its sysusers.d file, in a root
// of the test's own, and checks it is the user and group the unit runs as.
func TestSysusers(t *testing.T) {
	sysusers := need(t, "systemd-sysusers")
	itest.RequireRoot(t, "systemd-sysusers (it writes passwd and group as root)")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sysusers, "--root="+root, abs(t, "narrows.sysusers")).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	u := effective(t, nil)
	for file, name := range map[string]string{"passwd": u.last("User"), "group": u.last("Group")} {
		b, err := os.ReadFile(filepath.Join(root, "etc", file))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:x:[1-9][0-9]*:`).Match(b) {
			t.Errorf("narrows.sysusers makes no %s %q, the unit's, with an id other than 0:\n%s", file, name, b)
		}
	}
}

// TestExecStart runs each variant's command line as its ExecStart= says,
// word for word, with what systemd would give it given by the test: the
// credentials directory (%d, holding the secret LoadCredential= names),
// the StateDirectory= under /var/lib, the program where ExecStart names
// it, and the unit's user, NoNewPrivileges= and capability bounding set
// (setpriv; a user of the unit's other than root runs as nobody, as the
// narrows user does not exist here). It runs in a network namespace of
// its own, so the unit's port is its own to listen on, and a client
// there measures a synchronous commit through it, which writes the
// agent's --disk-path as the unit's user. A stop (SIGTERM) must end it
// with a status the unit counts as success. The rest of the sandboxing
// needs systemd as PID 1, which this machine does not run.
func TestExecStart(t *testing.T) {
	itest.RequireRoot(t, "running the unit's command line in a network namespace, as its user")
	for _, tool := range []string{"unshare", "nsenter", "setpriv", "ip"} {
		need(t, tool)
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			u := effective(t, v.dropIns)
			run := standIn(t, u)
			a := start(t, run)
			run.checkCredentials(t, a.pid)

			_, port, err := net.SplitHostPort(a.addr)
			if err != nil {
				t.Fatalf("the agent's address %q: %v", a.addr, err)
			}
			r := itest.RunWrapped(t, time.Minute, nil, []string{"nsenter", "--net=/proc/" + strconv.Itoa(a.pid) + "/ns/net", "--"},
				"net", "commit", "--to", net.JoinHostPort("127.0.0.1", port), "--secret-file", run.clientSecret,
				"--duration", "1s", "--size", "1M", "--json")
			if r.Code != 0 || !strings.Contains(r.Stdout, run.diskPath) {
				t.Errorf("net commit through the agent: exit %d, its log file not in %s:\n%s\n%s\nthe agent:\n%s",
					r.Code, run.diskPath, r.Stdout, r.Stderr, a.log.String())
			}

			ps, log := a.stop(t)
			// systemd counts exit status 0, a death by SIGTERM, and what
			// SuccessExitStatus= lists as a clean stop.
			ws := ps.Sys().(syscall.WaitStatus)
			code := ws.ExitStatus()
			clean := ws.Signaled() && ws.Signal() == syscall.SIGTERM || ws.Exited() && (code == 0 ||
				strings.Contains(" "+u.joined("SuccessExitStatus")+" ", " "+strconv.Itoa(code)+" "))
			if !clean {
				t.Errorf("stopped by SIGTERM (systemctl stop), the agent ended with %v, which the unit counts as a failure (SuccessExitStatus=%s)",
					ps, u.joined("SuccessExitStatus"))
			}
			if strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") || strings.Contains(log, "warning") {
				t.Errorf("the agent warned:\n%s", log)
			}
		})
	}
}

// agent is the unit's command line running.
type agent struct {
	pid    int
	addr   string // where it says it listens
	log    itest.Buffer
	exited chan *os.ProcessState
	logged chan struct{} // its standard error read to the end
}

var listening = regexp.MustCompile(`msg="agent listening" addr=(\S+)`)

// start runs r's command line in a network namespace of its own (its
// loopback up), through setpriv, and waits until it listens. It is
// killed at the end of the test unless stopped.
func start(t *testing.T, r *run) *agent {
	t.Helper()
	a := &agent{exited: make(chan *os.ProcessState, 1), logged: make(chan struct{})}
	args := append([]string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, "setpriv"}, r.setpriv...)
	cmd := exec.Command("unshare", append(append(args, "--", r.program), r.args...)...)
	cmd.Env = withoutSecret(os.Environ())
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.pid = cmd.Process.Pid // unshare, sh and setpriv each exec the next: the agent's
	go func() {
		cmd.Wait() //nolint:errcheck // its status is in ProcessState
		pw.Close()
		a.exited <- cmd.ProcessState
	}()
	addr := make(chan string, 1)
	go func() {
		defer close(a.logged)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			a.log.WriteString(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if a.exited != nil {
			cmd.Process.Kill() //nolint:errcheck // it may be ending
			<-a.exited
		}
	})
	select {
	case a.addr = <-addr:
	case ps := <-a.exited:
		a.exited = nil
		<-a.logged
		t.Fatalf("%s ended before it listened (%v):\n%s", strings.Join(r.args, " "), ps, a.log.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not listen within 15 s:\n%s", strings.Join(r.args, " "), a.log.String())
	}
	return a
}

// stop sends the agent SIGTERM, as systemctl stop does, and returns how
// it ended and all it logged.
func (a *agent) stop(t *testing.T) (*os.ProcessState, string) {
	t.Helper()
	if err := syscall.Kill(a.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case ps := <-a.exited:
		a.exited = nil
		<-a.logged
		return ps, a.log.String()
	case <-time.After(15 * time.Second):
		t.Fatalf("the agent did not end within 15 s of SIGTERM:\n%s", a.log.String())
		return nil, ""
	}
}

// need finds tool on PATH, or skips (fails under CI=true) saying what
// installs it.
func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		testenv.Need(t, testenv.Host, "%s is not installed (make test-deps installs it)", tool)
	}
	return p
}

func abs(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unitRoot lays out a root for systemd-analyze: the unit and dropIns as
// installed, the program its ExecStart= names (narrows, as built), and
// this machine's targets.
func unitRoot(t *testing.T, dropIns []string) string {
	t.Helper()
	root := t.TempDir()
	etc := filepath.Join(root, "etc/systemd/system")
	copyFile(t, unitName, filepath.Join(etc, unitName), 0o644)
	for _, d := range dropIns {
		copyFile(t, d, filepath.Join(etc, unitName+".d", d), 0o644)
	}
	placeNarrows(t, filepath.Join(root, effective(t, dropIns).execStart(t)[0]))
	var targets []string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.target"))
		targets = append(targets, m...)
	}
	if len(targets) == 0 {
		testenv.Need(t, testenv.Host, "no systemd targets in /usr/lib/systemd/system (make test-deps installs systemd)")
	}
	for _, f := range targets {
		dst := filepath.Join(root, "usr/lib/systemd/system", filepath.Base(f))
		if _, err := os.Stat(dst); err != nil {
			copyFile(t, f, dst, 0o644)
		}
	}
	return root
}

// placeNarrows puts narrows, as built, at to: a hard link where it can
// (the binary is 38 MB), else a copy; either one anybody may run.
func placeNarrows(t *testing.T, to string) {
	t.Helper()
	bin := itest.Binary(t)
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err == nil && fi.Mode().Perm()&0o005 == 0o005 && os.Link(bin, to) == nil {
		return
	}
	copyFile(t, bin, to, 0o755)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// settings are a unit's [Service] assignments once its drop-ins are
// read: each key's values in order, an empty assignment emptying the
// list, as systemd reads the keys the tests use (ExecStart=,
// LoadCredential=, StateDirectory=, ReadWritePaths=, SuccessExitStatus=,
// CapabilityBoundingSet=; for the others the last value counts).
type settings map[string][]string

func (s settings) last(key string) string {
	if v := s[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (s settings) joined(key string) string { return strings.Join(s[key], " ") }

// effective reads the unit, then dropIns, as systemd does.
func effective(t *testing.T, dropIns []string) settings {
	t.Helper()
	s := settings{}
	for _, f := range append([]string{unitName}, dropIns...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		section := ""
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || line[0] == '#' || line[0] == ';':
				continue
			case strings.HasSuffix(line, `\`):
				t.Fatalf("%s:%d: a continued line; this test's reader takes none", f, i+1)
			case line[0] == '[':
				section = strings.Trim(line, "[]")
				continue
			}
			key, value, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s:%d: %q is not KEY=VALUE", f, i+1, line)
			}
			if section != "Service" {
				continue
			}
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if value == "" {
				s[key] = nil
				continue
			}
			s[key] = append(s[key], value)
		}
	}
	return s
}

// execStart is the unit's one ExecStart= in words. The unit's command
// line is kept to what this reader splits as systemd does: no quotes,
// escapes, variables or prefixes, and only the %d specifier.
func (s settings) execStart(t *testing.T) []string {
	t.Helper()
	if len(s["ExecStart"]) != 1 {
		t.Fatalf("%d ExecStart= lines; a Type=exec service has one: %q", len(s["ExecStart"]), s["ExecStart"])
	}
	line := s["ExecStart"][0]
	if strings.ContainsAny(line, `"'\$`) || strings.ContainsAny(line[:1], "-@+!:|") {
		t.Fatalf("ExecStart=%s: quotes, escapes, variables or prefixes; this test's reader takes none", line)
	}
	if m := regexp.MustCompile(`%[^d]`).FindString(line); m != "" {
		t.Fatalf("ExecStart=%s: the specifier %s; this test gives only %%d", line, m)
	}
	words := strings.Fields(line)
	if !filepath.IsAbs(words[0]) {
		t.Fatalf("ExecStart=%s: the program is not an absolute path", line)
	}
	return words
}

// run is a variant's command line with what systemd would give it
// given by the test.
type run struct {
	program, diskPath, clientSecret string
	args, setpriv                   []string
	uid                             int
	caps                            uint64 // the capabilities it must hold, and no others
}

// nobody stands in for the unit's user: the narrows user does not exist
// here.
const nobody = 65534

// capNames are the capabilities the unit's files name.
var capNames = map[string]int{"CAP_NET_ADMIN": unix.CAP_NET_ADMIN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE}

func standIn(t *testing.T, u settings) *run {
	t.Helper()
	r := &run{uid: nobody}
	if user := u.last("User"); user == "root" || user == "" {
		r.uid = 0
	}
	// A directory the unit's user can reach: t.TempDir and its parent are
	// root's, mode 0700.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	words := u.execStart(t)
	r.program = filepath.Join(base, "root", words[0])
	placeNarrows(t, r.program)

	// The credentials directory: the service's user's alone, as systemd
	// makes it, with each LoadCredential=ID:PATH as the file ID.
	creds := filepath.Join(base, "credentials")
	secret := make([]byte, 32)
	rand.Read(secret) //nolint:errcheck // never fails (crypto/rand)
	text := hex.EncodeToString(secret) + "\n"
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range u["LoadCredential"] {
		id, _, _ := strings.Cut(c, ":")
		f := filepath.Join(creds, id)
		if err := os.WriteFile(f, []byte(text), 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, r.uid, r.uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(creds, r.uid, r.uid); err != nil {
		t.Fatal(err)
	}
	r.clientSecret = filepath.Join(base, "client.secret")
	if err := os.WriteFile(r.clientSecret, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	// StateDirectory=, made and owned for the service as systemd does;
	// with ReadWritePaths=, all the unit may write under ProtectSystem=strict.
	mapped := map[string]string{}
	var writable []string
	for _, d := range strings.Fields(u.joined("StateDirectory")) {
		p := filepath.Join("/var/lib", d)
		mapped[p] = filepath.Join(base, "state", d)
		if err := os.MkdirAll(filepath.Dir(mapped[p]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(mapped[p], 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(mapped[p], r.uid, r.uid); err != nil {
			t.Fatal(err)
		}
		writable = append(writable, p)
	}
	writable = append(writable, strings.Fields(u.joined("ReadWritePaths"))...)

	var diskPaths []string // as the unit names them
	for i, w := range words[1:] {
		w = strings.ReplaceAll(w, "%d", creds)
		flag, value, hasEq := strings.Cut(w, "=")
		if !hasEq {
			flag, value = "", w
		}
		if flag == "--disk-path" || !hasEq && i > 0 && words[i] == "--disk-path" {
			diskPaths = append(diskPaths, value)
		}
		if filepath.IsAbs(value) && !under(value, []string{creds}) {
			p, ok := mapped[value]
			if !ok {
				t.Fatalf("ExecStart names %s, which this test does not stand in for", value)
			}
			value = p
		}
		if hasEq {
			value = flag + "=" + value
		}
		r.args = append(r.args, value)
	}
	for _, d := range diskPaths {
		if !under(d, writable) {
			t.Errorf("--disk-path %s: the unit (ProtectSystem=strict) may write only in %q", d, writable)
		}
	}
	if len(diskPaths) == 0 {
		t.Fatal("ExecStart gives no --disk-path: clients could run no disk test, nor net commit's flush")
	}
	r.diskPath = mapped[diskPaths[0]]

	if r.uid != 0 {
		r.setpriv = append(r.setpriv, "--reuid="+strconv.Itoa(r.uid), "--regid="+strconv.Itoa(r.uid), "--clear-groups")
	}
	if u.last("NoNewPrivileges") == "yes" {
		r.setpriv = append(r.setpriv, "--no-new-privs")
	}
	if _, set := u["CapabilityBoundingSet"]; set {
		bound := "-all"
		for _, c := range strings.Fields(u.joined("CapabilityBoundingSet")) {
			n, ok := capNames[c]
			if !ok {
				t.Fatalf("CapabilityBoundingSet names %s: add it to capNames", c)
			}
			bound += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
			if r.uid == 0 {
				r.caps |= 1 << n
			}
		}
		r.setpriv = append(r.setpriv, "--bounding-set="+bound, "--inh-caps=-all")
	}
	return r
}

func under(p string, dirs []string) bool {
	p = filepath.Clean(p)
	for _, d := range dirs {
		if p == filepath.Clean(d) || strings.HasPrefix(p, filepath.Clean(d)+"/") {
			return true
		}
	}
	return false
}

// checkCredentials holds the running agent to the user and capabilities
// the test meant to give it, so that what it proves is proven as the unit.
func (r *run) checkCredentials(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	status := string(b)
	uid := regexp.MustCompile(`(?m)^Uid:\s+(\d+)\s+(\d+)`).FindStringSubmatch(status)
	capEff := regexp.MustCompile(`(?m)^CapEff:\s+([0-9a-f]+)`).FindStringSubmatch(status)
	if uid == nil || capEff == nil {
		t.Fatalf("/proc/%d/status has no Uid or CapEff:\n%s", pid, status)
	}
	caps, _ := strconv.ParseUint(capEff[1], 16, 64)
	if uid[1] != strconv.Itoa(r.uid) || uid[2] != strconv.Itoa(r.uid) || caps != r.caps {
		t.Fatalf("the agent runs as uid %s/%s with capabilities %#x; the unit's stand-in is uid %d with %#x", uid[1], uid[2], caps, r.uid, r.caps)
	}
}

// withoutSecret is env without NARROWS_SECRET: the agent must take its
// secret from the file the unit names.
func withoutSecret(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "NARROWS_SECRET=") {
			out = append(out, e)
		}
	}
	return out
}
