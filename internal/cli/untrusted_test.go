package cli_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/history"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// planted is what a hostile far side puts in every string it sends: OSC 52
// (writes the operator's clipboard), a window title, a screen clear, a
// carriage return that overwrites the line, a C1 CSI (as UTF-8), a
// right-to-left override and DEL.
const planted = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\rPWNED \u009b31m \u202eevil\x7f"

// listen serves every connection to a fresh 127.0.0.1 port with serve,
// until the test ends.
func listen(t *testing.T, serve func(c net.Conn, n int)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				serve(c, n)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRefusalBeforeAuthIsQuoted (issue 24, item 3): anything listening on
// the agent's address, with no secret, can refuse the Hello in a TError
// frame whose message holds control sequences. The real binary shows none
// of them raw, and shows the words quoted as the agent's, unverified;
// the exit code is the one each refusal had.
func TestRefusalBeforeAuthIsQuoted(t *testing.T) {
	cases := []struct {
		name     string
		afterCh  bool // refuse the Auth (after a Challenge) rather than the Hello
		refusal  wire.RemoteError
		code     int
		quoted   bool // the agent's words are shown (auth and version say what narrows knows instead)
		contains string
	}{
		{"busy", false, wire.RemoteError{Code: wire.CodeBusy, Message: "busy" + planted, RetryAfter: time.Second}, cli.ExitFailed, true, "agent busy at ADDR: it says (unverified): \"busy"},
		{"busy, absurd retry", false, wire.RemoteError{Code: wire.CodeBusy, Message: planted, RetryAfter: -1}, cli.ExitFailed, true, "(retry in 1s)"},
		{"busy after the challenge", true, wire.RemoteError{Code: wire.CodeBusy, Message: planted, RetryAfter: 1 << 62}, cli.ExitFailed, true, "(retry in 1h0m0s)"},
		{"auth", false, wire.RemoteError{Code: wire.CodeAuth, Message: planted}, cli.ExitUsage, false, "the secret does not match the agent's at ADDR"},
		{"auth after the challenge", true, wire.RemoteError{Code: wire.CodeAuth, Message: planted}, cli.ExitUsage, false, "the secret does not match"},
		{"version", false, wire.RemoteError{Code: wire.CodeVersion, Message: planted, MinVersion: 7, MaxVersion: 9}, cli.ExitUsage, false, "the agent at ADDR speaks 7-9"},
		{"auth_limit", false, wire.RemoteError{Code: wire.CodeAuthLimit, Message: planted, RetryAfter: time.Minute}, cli.ExitUsage, true, "refuses this address for now: it says (unverified): \""},
		// Over the agent's limits: the person changes what they asked
		// for (exit 2), as net commit and disk always said; net rr said 1
		// until the one error shape (issue 26).
		{"limit", false, wire.RemoteError{Code: wire.CodeLimit, Message: planted}, cli.ExitUsage, true, "agent at ADDR refused: it says (unverified): \""},
		{"unknown code", false, wire.RemoteError{Code: "\x1b[2Jweird", Message: strings.Repeat(planted, 100)}, cli.ExitFailed, true, "agent at ADDR refused: it says (unverified): \""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := listen(t, func(conn net.Conn, _ int) {
				var h wire.Hello
				if wire.ReadMagic(conn) != nil || wire.Expect(conn, wire.THello, &h) != nil {
					return
				}
				if c.afterCh {
					wire.WriteFrame(conn, wire.TChalleng, wire.Challenge{Version: wire.Version, Session: "s", Nonce: wire.NewNonce(), AuthRequired: true, Software: planted})
					var a wire.Auth
					if wire.Expect(conn, wire.TAuth, &a) != nil {
						return
					}
				}
				wire.WriteFrame(conn, wire.TError, c.refusal)
			})
			r := itest.Run(t, time.Minute, nil, "net", "rr", "--to", addr, "--duration", "1s", "--timeout", "5s")
			itest.NoControls(t, c.name, r)
			want := strings.ReplaceAll(c.contains, "ADDR", addr)
			if r.Code != c.code || !strings.Contains(r.Stderr, want) || strings.Count(r.Stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line containing %q", r.Code, r.Stderr, c.code, want)
			}
			if escaped := `\x1b]52;c;cHduZWQ=\a`; c.quoted != strings.Contains(r.Stderr, escaped) {
				t.Fatalf("the agent's words shown: %v, want %v (escaped, %s): %q", !c.quoted, c.quoted, escaped, r.Stderr)
			}
			if c.quoted && len(r.Stderr) > 2000 {
				t.Fatalf("the agent's words are not cut short: %d bytes", len(r.Stderr))
			}
		})
	}
}

// plantingAgent is a stand-in agent on a real socket that holds the
// secret, so that it passes the client's check, and plants control
// sequences in all it says after that: its software, its facts (hostname,
// kernel, the NIC and its driver), the directories it allows, a disk
// test's target and notes, and the reason the test ended. The n-th
// connection's host name differs, so that two runs differ in their facts.
func plantingAgent(t *testing.T, dir string) string {
	return listen(t, func(c net.Conn, n int) {
		var h wire.Hello
		if wire.ReadMagic(c) != nil || wire.Expect(c, wire.THello, &h) != nil {
			return
		}
		nonce := wire.NewNonce()
		wire.WriteFrame(c, wire.TChalleng, wire.Challenge{Version: wire.Version, Session: "s", Nonce: nonce, AuthRequired: true,
			Software: "9.9" + planted, Capabilities: []string{wire.KindCapability(wire.KindDisk)}})
		var a wire.Auth
		if wire.Expect(c, wire.TAuth, &a) != nil {
			return
		}
		wire.WriteFrame(c, wire.TWelcome, wire.Welcome{MAC: wire.Proof([]byte(itest.Secret), "agent", "s", h.Nonce, nonce),
			Limits: wire.Limits{MaxTests: 1, MaxDuration: time.Hour, MaxStreams: 1, MaxBlock: 1 << 20, DiskPaths: []string{dir + planted}, MaxDiskSize: 1 << 30},
			Facts: &result.Facts{Hostname: fmt.Sprintf("db%d%s", n, planted), OS: "linux", Kernel: "6.1" + planted, CPU: planted,
				Interfaces: []result.NIC{{Name: "eth0" + planted, Driver: "virtio" + planted, MTU: 1500, Offloads: map[string]bool{"tso" + planted: true}}}}})
		var spec wire.TestSpec
		if wire.Expect(c, wire.TTest, &spec) != nil {
			return
		}
		target := &result.Disk{Path: dir + planted, Filesystem: "ext4" + planted, Engine: "portable" + planted, FileBytes: 8 << 20,
			EngineNote: planted, Patterns: []result.DiskPattern{}}
		wire.WriteFrame(c, wire.TAccepted, wire.Accepted{TestID: "t", Slots: []wire.Slot{},
			Disk: &wire.DiskAccepted{Target: target, File: "f" + planted, Notes: []string{"note" + planted}}})
		if wire.Expect(c, wire.TStart, &wire.Start{}) != nil {
			return
		}
		wire.WriteFrame(c, wire.TDone, wire.Done{Reason: "stopped" + planted, Disk: target})
		io.Copy(io.Discard, c)
	})
}

// TestAgentWordsEscaped (issue 24, item 5): an agent that proved it holds
// the secret can still say anything; what it says reaches the terminal
// escaped, in the table and as JSON, where it is kept escaped (it was
// received so), and the run kept in the history (its target is the
// agent's path, its facts the agent's) replays escaped in history and
// compare, --json or not.
func TestAgentWordsEscaped(t *testing.T) {
	dir := t.TempDir()
	store := []string{"NARROWS_HISTORY=" + filepath.Join(dir, "history")}
	addr := plantingAgent(t, "/srv/pg")
	disk := []string{"disk", "--on", addr, "--path", "/srv/pg", "--rw", "randread", "--duration", "300ms", "--interval", "100ms", "--size", "8M"}

	r := itest.Run(t, time.Minute, store, disk...)
	itest.NoControls(t, "disk --on, table", r)
	if r.Code != cli.ExitFailed || !strings.Contains(r.Stderr, `ended the test early: stopped\x1b]52;c;cHduZWQ=\a`) ||
		!strings.Contains(r.Stderr, `notice: note\x1b]52`) || !strings.Contains(r.Stdout, `/srv/pg\x1b]52`) {
		t.Errorf("exit %d, want %d, the reason, the note and the path escaped:\nstdout %s\nstderr %s", r.Code, cli.ExitFailed, r.Stdout, r.Stderr)
	}

	r = itest.Run(t, time.Minute, store, append(disk, "--json")...)
	itest.NoControls(t, "disk --on, JSON", r)
	_, sum := itest.Records(t, r.Stdout)
	// Escaped where it was received: the run kept holds it so.
	if sw, _ := sum["agent_software"].(string); !strings.HasPrefix(sw, `9.9\x1b]52;c;cHduZWQ=\a`) {
		t.Errorf("the agent's software as kept: %q", sw)
	}

	for _, args := range [][]string{{"history"}, {"history", "--json"}, {"compare", "1", "2"}, {"compare", "--json", "1", "2"}} {
		r := itest.Run(t, time.Minute, store, args...)
		itest.NoControls(t, strings.Join(args, " "), r)
		if r.Code != 0 {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stdout, `/srv/pg\x1b]52`) && !strings.Contains(r.Stdout, `/srv/pg\\x1b]52`) {
			t.Errorf("%s does not show the run's target:\n%s", strings.Join(args, " "), r.Stdout)
		}
	}
}

// fakePostgres answers like a PostgreSQL server that refuses the login:
// 'N' to a request for TLS, then a FATAL ErrorResponse (28P01) whose
// message holds control sequences.
func fakePostgres(t *testing.T) string {
	return listen(t, func(c net.Conn, _ int) {
		for {
			var n uint32
			if binary.Read(c, binary.BigEndian, &n) != nil || n < 8 || n > 10000 {
				return
			}
			body := make([]byte, n-4)
			if _, err := io.ReadFull(c, body); err != nil {
				return
			}
			switch binary.BigEndian.Uint32(body) {
			case 80877103, 80877104: // SSLRequest, GSSENCRequest
				c.Write([]byte{'N'})
				continue
			}
			var f bytes.Buffer
			for _, kv := range [][2]string{{"S", "FATAL"}, {"V", "FATAL"}, {"C", "28P01"},
				{"M", `password authentication failed for user "u"` + planted}} {
				f.WriteString(kv[0] + kv[1] + "\x00")
			}
			f.WriteByte(0)
			msg := binary.BigEndian.AppendUint32([]byte{'E'}, uint32(f.Len()+4))
			c.Write(append(msg, f.Bytes()...))
			return
		}
	})
}

// fakeMySQL greets as a MySQL server does, reads the login, and refuses it
// with an ERR packet (1045, access denied) whose message holds control
// sequences.
func fakeMySQL(t *testing.T) string {
	packet := func(seq byte, p []byte) []byte {
		return append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...)
	}
	return listen(t, func(c net.Conn, _ int) {
		const caps = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x80000 // long password, 4.1 protocol, transactions, secure connection, plugin auth
		g := []byte{10}
		g = append(g, "8.0.0-fake\x00"...)
		g = binary.LittleEndian.AppendUint32(g, 7)
		g = append(g, "abcdefgh\x00"...)
		g = binary.LittleEndian.AppendUint16(g, caps&0xffff)
		g = append(g, 0x21, 2, 0)
		g = binary.LittleEndian.AppendUint16(g, caps>>16)
		g = append(g, 21)
		g = append(g, make([]byte, 10)...)
		g = append(g, "ijklmnopqrst\x00"...)
		g = append(g, "mysql_native_password\x00"...)
		c.Write(packet(0, g))
		head := make([]byte, 4)
		if _, err := io.ReadFull(c, head); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(head[0])|int64(head[1])<<8|int64(head[2])<<16); err != nil {
			return
		}
		e := []byte{0xff}
		e = binary.LittleEndian.AppendUint16(e, 1045)
		e = append(e, "#28000Access denied for user 'u'"+planted...)
		c.Write(packet(head[3]+1, e))
	})
}

// TestDatabaseServerWordsEscaped (issue 24, item 4): a database server
// that refuses the login with control sequences in its error has them
// shown escaped by db ping and db repl, exit 2 as for any wrong password.
func TestDatabaseServerWordsEscaped(t *testing.T) {
	pg, my := fakePostgres(t), fakeMySQL(t)
	cases := [][]string{
		{"db", "ping", "--dsn", "postgres://u:secretpw@" + pg + "/db"},
		{"db", "repl", "--dsn", "postgres://u:secretpw@" + pg + "/db", "--duration", "1s"},
		{"db", "ping", "--dsn", "mysql://u:secretpw@" + my + "/db"},
	}
	for _, args := range cases {
		name := strings.Join(args[:2], " ") + " " + strings.SplitN(args[3], ":", 2)[0]
		t.Run(name, func(t *testing.T) {
			r := itest.Run(t, time.Minute, nil, append(args, "--timeout", "5s")...)
			itest.NoControls(t, name, r)
			if r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, `\x1b]52;c;cHduZWQ=\a\x1b]0;pwned\a\x1b[2J\rPWNED \u009b31m \u202eevil\u007f`) ||
				strings.Contains(r.Stderr, "secretpw") {
				t.Fatalf("exit %d, want %d and the server's words escaped, without the password:\n%s", r.Code, cli.ExitUsage, r.Stderr)
			}
		})
	}
}

// forgedRun is a run's JSON lines as someone could hand them over: control
// sequences in every string (C0 escaped as JSON requires, the rest raw),
// figures of ±1e308, and host on its facts.
func forgedRun(host string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	for i, v := range []string{"26214400", "1e308", "-1e308", "26214400", "1e308", "26214400", "26214400", "26214400"} {
		fmt.Fprintf(&b, `{"schema":"narrows/v1","type":"interval","probe":"stream","start_seconds":%d,"end_seconds":%d,"phase":"single","direction":"forward","streams":1,"bytes":3276800,"throughput_bits_per_second":%s}`+"\n", i, i+1, v)
	}
	facts := fmt.Sprintf(`{"hostname":%s,"os":"linux","kernel":%s,"interfaces":[{"name":%s,"driver":%s,"speed_mbps":1000}]}`,
		q(host+planted), q("6.1"+planted), q("eth0"+planted), q("virtio"+planted))
	fmt.Fprintf(&b, `{"schema":"narrows/v1","type":"summary","command":%s,"narrows":{"version":%s,"commit":"x","protocol":1},"target":%s,"agent_software":%s,`+
		`"started_at":"2026-11-22T10:00:00Z","partial":false,"stream":{"config":{"direction":"forward","streams":1,"duration_seconds":8,"interval_seconds":1,"block_bytes":131072},`+
		`"throughput_bits_per_second":1e308,"runs":[{"phase":"single","direction":"forward","streams":1,"duration_seconds":1e308,"throughput_bits_per_second":-1e308,"per_stream_bits_per_second":[1e308]}]},`+
		`"facts":%s,"agent_facts":%s,"findings":[{"code":%s,"severity":"warning","summary":%s,"detail":%s,"values":{"x":1e308}}]}`+"\n",
		q("net stream"), q("0.1.0"+planted), q("db2"+planted+":7447"), q("0.1.0"+planted), facts, facts, q("x"+planted), q("said"+planted), q(planted))
	// DEL, C1 and the override are valid JSON as they are: keep them raw.
	return strings.NewReplacer(`\u007f`, "\x7f", `\u009b`, "\u009b", `\u202e`, "\u202e").Replace(b.String())
}

// TestSavedRunsEscaped (issue 24, items 5 and 6): runs someone hands over
// (files, or a history directory) print escaped in compare and history,
// with --json too (still valid JSON); report's page holds no control
// character, and its charts no NaN, infinite or 300-digit coordinate from
// figures of ±1e308; a file with NaN in it (not JSON) is refused in one
// line.
func TestSavedRunsEscaped(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	for path, host := range map[string]string{a: "db1", b: "db2"} {
		if err := os.WriteFile(path, []byte(forgedRun(host)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A history directory with both in it.
	store := filepath.Join(dir, "history")
	st, err := history.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{a, b} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rep, ivs, err := jsonl.Last(f, path)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Add(context.Background(), rep, ivs); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	env := []string{"NARROWS_HISTORY=" + store}

	for _, args := range [][]string{{"compare", a, b}, {"compare", "1", "2"}, {"compare", "--json", a, b}, {"history"}, {"history", "--json"}} {
		r := itest.Run(t, time.Minute, env, args...)
		itest.NoControls(t, strings.Join(args, " "), r)
		if r.Code != 0 || !strings.Contains(r.Stdout, `db2\x1b]52`) && !strings.Contains(r.Stdout, `db2\\x1b]52`) && !strings.Contains(r.Stdout, `db2\u001b]52`) {
			t.Errorf("%s: exit %d, want 0 and the target shown escaped:\nstdout %s\nstderr %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
		if strings.Contains(strings.Join(args, " "), "--json") {
			for line := range strings.Lines(r.Stdout) {
				if !json.Valid([]byte(line)) {
					t.Errorf("%s: not JSON: %s", strings.Join(args, " "), line)
				}
			}
		}
	}
	if r := itest.Run(t, time.Minute, env, "compare", a, b); !strings.Contains(r.Stdout, `hostname`) || !strings.Contains(r.Stdout, `db1\x1b]52`) {
		t.Errorf("compare does not warn that the hosts differ, escaped:\n%s", r.Stdout)
	}

	page := filepath.Join(dir, "a.html")
	r := itest.Run(t, time.Minute, env, "report", a, "--html", page)
	itest.NoControls(t, "report", r)
	if r.Code != 0 {
		t.Fatalf("report: exit %d: %s", r.Code, r.Stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// The page escapes for HTML; what the run's strings hold is escaped as
	// they are read, so the page holds no control character either (cat).
	t.Logf("report page: %d control bytes", itest.ControlBytes(string(html)))
	if n := itest.ControlBytes(string(html)); n > 0 {
		t.Errorf("the page holds %d control bytes", n)
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(string(html), -1)
	if len(svgs) == 0 {
		t.Fatal("the report has no chart")
	}
	absurd := regexp.MustCompile(`NaN|Inf|e\+|\d{12}`)
	for i, svg := range svgs {
		m := absurd.FindAllString(svg, -1)
		t.Logf("chart %d: %d absurd coordinates", i+1, len(m))
		if m != nil {
			t.Errorf("a chart holds %q:\n%.3000s", m[:min(len(m), 5)], svg)
		}
	}

	nan := filepath.Join(dir, "nan.jsonl")
	os.WriteFile(nan, []byte(strings.Replace(forgedRun("db3"), "26214400", "NaN", 1)), 0o600)
	r = itest.Run(t, time.Minute, env, "report", nan, "--html", filepath.Join(dir, "nan.html"))
	itest.NoControls(t, "report of a file with NaN", r)
	if r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "line 1") || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("report of a file with NaN: exit %d, stderr %q; want 2 and one line naming line 1", r.Code, r.Stderr)
	}
}
