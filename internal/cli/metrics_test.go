package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// silentServer accepts connections and never answers: a database that
// hangs at its handshake, which db repl waits on for its --timeout with
// its metrics server already up.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// scrapeOn sends one GET /metrics on c, as a keep-alive client does, and
// reads the whole answer, which must keep the connection open.
func scrapeOn(c net.Conn, br *bufio.Reader) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: narrows\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		return fmt.Errorf("status %d, close %v", resp.StatusCode, resp.Close)
	}
	return nil
}

// closedWithin reads what is left on c until the server closes it, at most
// d, and says how long that took; ok is false if c was still open after d.
func closedWithin(c net.Conn, d time.Duration) (took time.Duration, ok bool) {
	t0 := time.Now()
	c.SetReadDeadline(t0.Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return time.Since(t0), false
	}
	return time.Since(t0), true // EOF, or a reset: closed
}

// TestMetricsListenersLetGo: both --prometheus-listen servers (watch's and
// db repl's) keep a scraper's connection between scrapes, close it once
// it has idled past the idle timeout, and cut a client that trickles a
// request body at the read timeout. db repl's kept both for ever; watch's
// for 30 s. The timeouts are shortened for the test: what is tested is
// that every listener has them.
func TestMetricsListenersLetGo(t *testing.T) {
	const read, idle, margin = time.Second, 1500 * time.Millisecond, 3 * time.Second
	defer cli.SetMetricsTimeoutsForTest(read, idle)()
	agentAddr, _ := serveAgent(t, "127.0.0.1:0", agent.Config{Secret: []byte(itest.Secret)})
	database := silentServer(t)
	cases := []struct {
		name string
		args []string
	}{
		{"watch", []string{"watch", "--to", agentAddr, "--stream-every", "0", "--mtu-every", "0", "--prometheus-listen", "127.0.0.1:0"}},
		{"db repl", []string{"db", "repl", "--dsn", "postgres://narrows:pw@" + database + "/postgres", "--timeout", "1m", "--prometheus-listen", "127.0.0.1:0"}},
	}
	serving := regexp.MustCompile(`serving Prometheus metrics at http://(\S+)/metrics`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout := &itest.Buffer{}
			var stderr bytes.Buffer
			env := cli.Env{Stdout: stdout, Stderr: &stderr, ReadFile: cli.OSEnv().ReadFile, Now: time.Now,
				Getenv: func(k string) string {
					return map[string]string{"NARROWS_SECRET": itest.Secret, "NARROWS_NO_HISTORY": "1"}[k]
				}}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() { done <- cli.Main(ctx, env, c.args) }()
			defer func() { cancel(); <-done }()
			var addr string
			eventually(t, 5*time.Second, "the metrics' address on stdout", func() bool {
				if m := serving.FindStringSubmatch(stdout.String()); m != nil {
					addr = m[1]
				}
				return addr != ""
			})

			// A scraper: two scrapes on one connection, then silence.
			kept, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer kept.Close()
			br := bufio.NewReader(kept)
			for i := range 2 {
				if err := scrapeOn(kept, br); err != nil {
					t.Fatalf("scrape %d on one connection: %v", i+1, err)
				}
				time.Sleep(idle / 3)
			}
			if took, ok := closedWithin(kept, idle+margin); !ok {
				t.Errorf("an idle keep-alive connection still open %s after its last scrape (idle timeout %s)", took+idle/3, idle)
			} else {
				t.Logf("idle connection closed %s after its last scrape", took+idle/3)
			}

			// A client that announces a body and sends a byte of it now
			// and then.
			slow, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			t0 := time.Now()
			io.WriteString(slow, "GET /metrics HTTP/1.1\r\nHost: narrows\r\nContent-Length: 100000\r\n\r\n")
			stopTrickle := make(chan struct{})
			defer close(stopTrickle)
			go func() {
				for {
					select {
					case <-stopTrickle:
						return
					case <-time.After(100 * time.Millisecond):
						if _, err := slow.Write([]byte{'x'}); err != nil {
							return
						}
					}
				}
			}()
			if _, ok := closedWithin(slow, read+margin); !ok {
				t.Errorf("a client trickling its request body still connected %s on (read timeout %s)", time.Since(t0).Round(time.Millisecond), read)
			} else {
				t.Logf("slow body cut %s after its headers", time.Since(t0).Round(time.Millisecond))
			}
		})
	}
}
