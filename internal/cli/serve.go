package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/wire"
)

func serve(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "serve")
	listen := fs.String("listen", "", "address to listen on, HOST:PORT or :PORT (default :7447, or 127.0.0.1:7447 with --insecure)")
	secretFile := fs.String("secret-file", "", "file holding the shared secret (or set NARROWS_SECRET)")
	insecure := fs.Bool("insecure", false, "run without a secret: allowed on a loopback address only")
	maxTests := fs.Int("max-tests", 4, "tests that may run at once")
	maxConns := fs.Int("max-conns", 64, "connections that may be open at once (at most half of them not yet authenticated)")
	perHost := fs.Int("max-unauth-per-host", 0, "connections from one address that may be open before they authenticate (default: max-conns/8, at least 4)")
	maxMemory := fs.String("max-memory", "512MiB", "buffer memory all running tests may hold together")
	maxTestMemory := fs.String("max-test-memory", "256MiB", "buffer memory one test may hold (streams × read size, plus one block)")
	maxDuration := fs.String("max-duration", "10m", "longest test allowed")
	idle := fs.String("idle-timeout", "60s", "close a control connection that sends nothing for this long")
	handshake := fs.String("handshake-timeout", "10s", "close a connection that has not authenticated within this time")
	dataTimeout := fs.String("data-timeout", "10s", "end a test whose data connection moves nothing for this long")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	verbose := fs.Bool("verbose", false, "log debug messages too")
	var diskPaths []string
	fs.Func("disk-path", "a `directory` in which clients may run disk tests (narrows disk --on) and write net commit's log file, repeatable; without it, disk tests are refused and net commit acknowledges on receipt only", func(v string) error {
		diskPaths = append(diskPaths, v)
		return nil
	})
	maxDiskSize := fs.String("max-disk-size", "4GiB", "the largest test file a disk test may ask for")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := agent.Config{Insecure: *insecure, MaxTests: *maxTests, MaxConns: *maxConns, MaxUnauthPerHost: *perHost, Software: Version}
	for _, d := range []struct {
		flag, val string
		into      *time.Duration
	}{{"--max-duration", *maxDuration, &cfg.MaxDuration}, {"--idle-timeout", *idle, &cfg.IdleTimeout},
		{"--handshake-timeout", *handshake, &cfg.HandshakeTimeout}, {"--data-timeout", *dataTimeout, &cfg.DataTimeout}} {
		v, err := metric.ParseDuration(d.val)
		if err != nil || v <= 0 {
			return usagef("%s: %s", d.flag, errOr(err, "must be more than zero"))
		}
		*d.into = v
	}
	for _, m := range []struct {
		flag, val string
		into      *int64
	}{{"--max-memory", *maxMemory, &cfg.MaxMemory}, {"--max-test-memory", *maxTestMemory, &cfg.MaxTestMemory}} {
		v, err := metric.ParseSize(m.val)
		if err != nil || v < 1<<20 {
			return usagef("%s %q: %s", m.flag, m.val, errOr(err, "must be at least 1MiB"))
		}
		*m.into = v
	}
	var err error
	if cfg.MaxDiskSize, err = metric.ParseSize(*maxDiskSize); err != nil || cfg.MaxDiskSize < disk.MinSize {
		return usagef("--max-disk-size %q: %s", *maxDiskSize, errOr(err, "must be at least 1MiB"))
	}
	if cfg.DiskRoots, err = agent.ResolveDiskPaths(diskPaths); err != nil {
		return usagef("serve: %v", err)
	}
	if cfg.MaxTestMemory > cfg.MaxMemory {
		return usagef("--max-test-memory %s is more than --max-memory %s: one test cannot hold more than all of them", *maxTestMemory, *maxMemory)
	}
	if *maxTests < 1 || *maxConns < 2 || *perHost < 0 {
		return usagef("--max-tests must be at least 1, --max-conns at least 2 and --max-unauth-per-host not negative")
	}
	if cfg.Secret, err = secret(env, *secretFile); err != nil {
		return err
	}
	if *listen == "" {
		*listen = ":" + strconv.Itoa(wire.DefaultPort)
		if *insecure {
			*listen = "127.0.0.1:" + strconv.Itoa(wire.DefaultPort)
		}
	}
	ap, err := listenAddr(*listen)
	if err != nil {
		return err
	}
	if err := cfg.Validate(ap); err != nil {
		return usagef("serve: %v", err)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(env.Stderr, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(env.Stderr, opts))
	default:
		return usagef("--log-format %q: use text or json", *logFormat)
	}
	// Listen on the address that was checked, never on a name again: a
	// hosts file that maps "localhost" elsewhere must not move an
	// --insecure agent off loopback.
	host := ap.String()
	if ap.Addr().IsUnspecified() {
		host = ":" + strconv.Itoa(int(ap.Port()))
	}
	ln, err := net.Listen("tcp", host)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return usagef("cannot listen on %s: the port is in use (another agent?); choose another with --listen", *listen)
		}
		return usagef("cannot listen on %s: %v", *listen, err)
	}
	if bound, ok := ln.Addr().(*net.TCPAddr); !ok || (!ap.Addr().IsUnspecified() && bound.AddrPort().Addr().Unmap() != ap.Addr().Unmap()) {
		ln.Close()
		return fmt.Errorf("serve: asked to listen on %s, but the socket is bound to %v: refusing to serve there", ap.Addr(), ln.Addr())
	}
	// The buffers are bounded above; the runtime is told the same, so its
	// garbage (a finished test's buffers) does not double the footprint.
	debug.SetMemoryLimit(cfg.MaxMemory + runtimeRoom)
	return agent.New(cfg).Serve(ctx, ln)
}

// runtimeRoom is what the agent needs beside its tests' buffers: its
// code, goroutine stacks, frames and connection state.
const runtimeRoom = 64 << 20

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}

// listenAddr reads HOST:PORT where HOST is an IP literal, "localhost" or empty.
func listenAddr(s string) (netip.AddrPort, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, usagef("--listen %q: use HOST:PORT or :PORT, e.g. :7447 or 127.0.0.1:7447", s)
	}
	port, err := parsePort(p)
	if err != nil {
		return netip.AddrPort{}, usagef("--listen %q: %v", s, err)
	}
	var a netip.Addr
	switch h {
	case "":
		a = netip.IPv6Unspecified()
	case "localhost":
		a = netip.MustParseAddr("127.0.0.1")
	default:
		if a, err = netip.ParseAddr(h); err != nil {
			return netip.AddrPort{}, usagef("--listen %q: the host must be an IP address of this machine (or empty for all)", s)
		}
	}
	return netip.AddrPortFrom(a, port), nil
}

func parsePort(p string) (uint16, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port %q: use a number from 1 to 65535", p)
	}
	return uint16(n), nil
}
