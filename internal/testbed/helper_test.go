//go:build linux

package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-executes itself inside a namespace (via Host.Command)
// to act as a TCP sink or source. TestMain dispatches on helperEnv before
// any test runs, so the helper never touches the testing package's state.
const (
	helperEnv     = "NARROWS_TESTBED_HELPER"      // "sink", "source" or "delayline"
	helperAddr    = "NARROWS_TESTBED_ADDR"        // sink: listen ip; source: ip:port to dial
	helperSeconds = "NARROWS_TESTBED_SECONDS"     // source: how long to send
	helperLimit   = "NARROWS_TESTBED_DEADLINE_MS" // both: hard exit after this long
	helperCC      = "NARROWS_TESTBED_CC"          // source: TCP congestion control
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperReport is printed as one JSON line by a helper when it is done.
// The sink prints {"port":N} first, as soon as it listens.
type helperReport struct {
	Port    int     `json:"port,omitempty"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// Timed is the bytes received after the first read, over Seconds
	// (the span from the first read to EOF); the sink's rate estimate.
	Timed int64 `json:"timed,omitempty"`
	// CC is the source socket's congestion control.
	CC    string `json:"cc,omitempty"`
	Error string `json:"error,omitempty"`
}

func helperMain(mode string) int {
	limit, err := strconv.Atoi(os.Getenv(helperLimit))
	if err != nil || limit <= 0 {
		limit = 15000
	}
	// The helper must end by itself even if the parent vanished.
	time.AfterFunc(time.Duration(limit)*time.Millisecond, func() {
		fmt.Fprintf(os.Stderr, "helper %s: deadline of %dms exceeded\n", mode, limit)
		os.Exit(3)
	})
	enc := json.NewEncoder(os.Stdout)
	var rep helperReport
	switch mode {
	case "sink":
		rep, err = helperSink(os.Getenv(helperAddr), enc)
	case "source":
		secs, _ := strconv.ParseFloat(os.Getenv(helperSeconds), 64)
		rep, err = helperSource(os.Getenv(helperAddr), time.Duration(secs*float64(time.Second)), os.Getenv(helperCC))
	case "delayline":
		err = helperDelayLine(enc) // returns only on failure: it waits to be killed
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	enc.Encode(rep) //nolint:errcheck
	if err != nil {
		return 1
	}
	return 0
}

// helperSink listens on ip:0, announces the port, accepts one connection
// and counts bytes until EOF.
func helperSink(ip string, enc *json.Encoder) (helperReport, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return helperReport{}, err
	}
	defer ln.Close()
	if err := enc.Encode(helperReport{Port: ln.Addr().(*net.TCPAddr).Port}); err != nil {
		return helperReport{}, err
	}
	c, err := ln.Accept()
	if err != nil {
		return helperReport{}, err
	}
	defer c.Close()
	buf := make([]byte, 256<<10)
	var rep helperReport
	var first time.Time
	for {
		n, err := c.Read(buf)
		if n > 0 {
			now := time.Now()
			if first.IsZero() {
				first = now
			} else {
				rep.Timed += int64(n)
				rep.Seconds = now.Sub(first).Seconds()
			}
			rep.Bytes += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
	}
}

// helperSource dials addr and sends for d, then closes. A non-empty cc
// is set on the socket (per socket, since a non-initial namespace may only
// default to tcp_allowed_congestion_control; root may set any per socket).
func helperSource(addr string, d time.Duration, cc string) (helperReport, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return helperReport{}, err
	}
	defer c.Close()
	var rep helperReport
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return rep, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if cc != "" {
			if serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); serr != nil {
				return
			}
		}
		rep.CC, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return rep, err
	}
	if serr != nil {
		return rep, fmt.Errorf("TCP_CONGESTION %q: %w", cc, serr)
	}
	buf := make([]byte, 128<<10)
	start := time.Now()
	end := start.Add(d)
	c.SetWriteDeadline(end) //nolint:errcheck
	for time.Now().Before(end) {
		n, err := c.Write(buf)
		rep.Bytes += int64(n)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			return rep, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, c.Close()
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	out    *bufio.Scanner
	stderr *strings.Builder
}

// startHelper re-executes the test binary inside h's namespace.
func startHelper(ctx context.Context, t *testing.T, h *Host, mode string, env ...string) *helper {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// -test.run=^$: should the env var ever get lost, run no tests
	// rather than recursing.
	cmd := h.Command(ctx, exe, "-test.run=^$")
	limit := 15 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		limit = time.Until(dl)
	}
	cmd.Env = append(os.Environ(), helperEnv+"="+mode,
		fmt.Sprintf("%s=%d", helperLimit, limit.Milliseconds()))
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	hp := &helper{cmd: cmd, out: bufio.NewScanner(stdout), stderr: new(strings.Builder)}
	cmd.Stderr = hp.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s helper in %s: %v", mode, h, err)
	}
	t.Cleanup(func() {
		// Normally already waited for; this only reaps after a failure.
		if cmd.ProcessState == nil {
			cmd.Process.Kill() //nolint:errcheck
			cmd.Wait()         //nolint:errcheck
		}
	})
	return hp
}

// next reads the helper's next JSON line.
func (hp *helper) next(t *testing.T) helperReport {
	t.Helper()
	if !hp.out.Scan() {
		hp.cmd.Wait() //nolint:errcheck
		t.Fatalf("helper %v ended without output (err %v), stderr: %s", hp.cmd.Args, hp.out.Err(), hp.stderr)
	}
	var r helperReport
	if err := json.Unmarshal(hp.out.Bytes(), &r); err != nil {
		t.Fatalf("helper output %q: %v", hp.out.Text(), err)
	}
	if r.Error != "" {
		t.Fatalf("helper %v failed: %s; stderr: %s", hp.cmd.Args, r.Error, hp.stderr)
	}
	return r
}

// wait reads the helper's final report and waits for it to exit.
func (hp *helper) wait(t *testing.T) helperReport {
	t.Helper()
	r := hp.next(t)
	if err := hp.cmd.Wait(); err != nil {
		t.Fatalf("helper %v: %v; stderr: %s", hp.cmd.Args, err, hp.stderr)
	}
	return r
}

// transfer runs a sink in dst and a source in src sending for d, and
// returns both reports.
func transfer(t *testing.T, src, dst *Host, d time.Duration, cc string) (source, sink helperReport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	sk := startHelper(ctx, t, dst, "sink", helperAddr+"="+dst.Addr.String())
	port := sk.next(t).Port
	so := startHelper(ctx, t, src, "source",
		helperAddr+"="+net.JoinHostPort(dst.Addr.String(), strconv.Itoa(port)),
		fmt.Sprintf("%s=%g", helperSeconds, d.Seconds()), helperCC+"="+cc)
	source = so.wait(t)
	sink = sk.wait(t)
	return source, sink
}
