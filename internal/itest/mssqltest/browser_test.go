// Package mssqltest holds the process-level tests of narrows' SQL Server
// connection paths that need no SQL Server: SQL Server cannot run on this
// machine, so a named instance is tested against a SQL Browser that plays
// back a fixed reply and a TCP listener that stands where the instance
// would be. Tests only.
package mssqltest

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testenv"
)

// The password of every DSN here: no piece of it may be printed.
const secret = "Kq7w;Pw=9{x}"

// secretPieces are the parts of secret a careless redaction would leave.
var secretPieces = []string{"Kq7w", "Pw=9", "{x}"}

// browser is a SQL Server Browser on 127.0.0.1:1434 (UDP) that plays back
// a recorded reply, as narrows' SQL Server rows are recorded ones: an
// SVR_RESP ([MC-SQLR] 2.2.5: 0x05, a little-endian length, then the
// instance's ServerName;...;tcp;PORT;; record, here with the port of the
// test's listener) to a CLNT_UCAST_INST request (0x04, the instance name,
// NUL) for its instance. With answer false it reads requests and says
// nothing, as a Browser behind a firewall that drops the reply.
type browser struct {
	conn *net.UDPConn
	mu   sync.Mutex
	reqs [][]byte
}

func startBrowser(t *testing.T, instance string, port int, answer bool) *browser {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Need(t, testenv.Host, "the SQL Browser's UDP port 1434 needs root")
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1434})
	if err != nil {
		t.Fatalf("listen on UDP 127.0.0.1:1434 (a SQL Browser of this machine's own?): %v", err)
	}
	b := &browser{conn: c}
	t.Cleanup(func() { c.Close() })
	record := fmt.Sprintf("ServerName;SQL1;InstanceName;%s;IsClustered;No;Version;16.0.1000.6;tcp;%d;;", instance, port)
	reply := binary.LittleEndian.AppendUint16([]byte{0x05}, uint16(len(record)))
	reply = append(reply, record...)
	go func() {
		buf := make([]byte, 1024)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			req := append([]byte(nil), buf[:n]...)
			b.mu.Lock()
			b.reqs = append(b.reqs, req)
			b.mu.Unlock()
			name := strings.TrimRight(string(req[1:]), "\x00")
			if answer && req[0] == 0x04 && strings.EqualFold(name, instance) {
				c.WriteToUDP(reply, from)
			}
		}
	}()
	return b
}

// requests are the datagrams the Browser was sent.
func (b *browser) requests() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.reqs...)
}

// instanceListener stands where the named instance listens: it accepts,
// keeps the first byte each connection sends (a TDS pre-login packet is
// type 0x12), and closes, for no SQL Server is behind it.
type instanceListener struct {
	ln    net.Listener
	mu    sync.Mutex
	first []byte // per connection that sent anything
	conns int
}

func startListener(t *testing.T) *instanceListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &instanceListener{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				b := make([]byte, 1)
				n, _ := c.Read(b)
				l.mu.Lock()
				defer l.mu.Unlock()
				l.conns++
				if n == 1 {
					l.first = append(l.first, b[0])
				}
			}()
		}
	}()
	return l
}

func (l *instanceListener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// prelogins counts the connections that began with a TDS pre-login.
func (l *instanceListener) prelogins() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, b := range l.first {
		if b == 0x12 {
			n++
		}
	}
	return n
}

// checkLine asserts a run failed in one line that holds every want and no
// piece of the secret, with exit code code.
func checkLine(t *testing.T, r itest.Result, code int, want ...string) {
	t.Helper()
	for _, p := range secretPieces {
		if strings.Contains(r.Stdout+r.Stderr, p) {
			t.Fatalf("%q of the password appears: stdout %q stderr %q", p, r.Stdout, r.Stderr)
		}
	}
	line := strings.TrimSuffix(r.Stderr, "\n")
	t.Logf("exit %d: %s", r.Code, line)
	if r.Code != code || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q: want exit %d and one line", r.Code, r.Stderr, code)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Fatalf("stderr %q: want it to say %q", line, w)
		}
	}
}

// The named instance's DSN in each form narrows takes.
func instanceDSNs(instance string) map[string]string {
	return map[string]string{
		"url": "sqlserver://u:" + strings.NewReplacer(";", "%3B", "=", "%3D", "{", "%7B", "}", "%7D").Replace(secret) + "@127.0.0.1/" + instance + "?database=app",
		"ado": `Server=127.0.0.1\` + instance + `;Database=app;User Id=u;Password="` + secret + `";Encrypt=false`,
	}
}

// TestNamedInstanceThroughBrowser: for HOST/INSTANCE (URL) and
// Server=HOST\INSTANCE (ADO), narrows asks the SQL Browser on UDP 1434 for
// the instance's port with a CLNT_UCAST_INST request, then connects to
// the port the Browser gave (the TCP probes and the driver's TDS
// pre-login both arrive there). No SQL Server answers the pre-login, so
// the run fails: in one line that names the instance and its port, with
// no piece of the password.
func TestNamedInstanceThroughBrowser(t *testing.T) {
	const instance = "SQL2019"
	for form, dsn := range instanceDSNs("sql2019") { // the instance's name in another case, as people type it
		t.Run(form, func(t *testing.T) {
			l := startListener(t)
			b := startBrowser(t, instance, l.port(), true)
			r := itest.Run(t, 30*time.Second, nil, "db", "ping", "--dsn", dsn, "--count", "1", "--timeout", "3s", "--tcp-probes", "1")
			checkLine(t, r, 2, fmt.Sprintf(`127.0.0.1\sql2019 (127.0.0.1:%d) accepted the TCP connection, then closed it before the SQL Server login finished`, l.port()))
			reqs := b.requests()
			if len(reqs) == 0 || string(reqs[0]) != "\x04sql2019\x00" {
				t.Fatalf("the Browser got %q: want one CLNT_UCAST_INST request for sql2019", reqs)
			}
			if n := l.prelogins(); n != 1 {
				t.Fatalf("%d TDS pre-logins came to the instance's port (of %d connections): want 1", n, l.conns)
			}
		})
	}
}

// TestNamedInstanceNoBrowser: where no SQL Browser answers, whether
// nothing listens on UDP 1434 (the host says so at once) or a Browser
// never replies (a firewall drops it: narrows waits out --timeout),
// narrows says so in one line, names the instance and says what to do,
// exit 2; it never connects anywhere else.
func TestNamedInstanceNoBrowser(t *testing.T) {
	for _, silent := range []bool{false, true} {
		for form, dsn := range instanceDSNs("INST") {
			name := form + "/nothing on 1434"
			if silent {
				name = form + "/no reply"
			}
			t.Run(name, func(t *testing.T) {
				if silent {
					startBrowser(t, "INST", 1, false)
				} else if os.Geteuid() != 0 {
					testenv.Need(t, testenv.Host, "binding UDP 1434 to be sure it is free needs root")
				} else if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1434}); err != nil {
					t.Fatalf("UDP 127.0.0.1:1434 is taken (a SQL Browser of this machine's own?): %v", err)
				} else {
					c.Close()
				}
				itest.Binary(t)
				t0 := time.Now()
				r := itest.Run(t, 30*time.Second, nil, "db", "ping", "--dsn", dsn, "--count", "1", "--timeout", "2s")
				checkLine(t, r, 2, "the SQL Browser on 127.0.0.1:1434 did not answer for instance INST", "start the SQL Server Browser service", "127.0.0.1,PORT")
				if took := time.Since(t0); !silent && took > 1500*time.Millisecond {
					t.Fatalf("a closed UDP port took %s to report: the host's refusal should end the wait", took)
				}
			})
		}
	}
}
