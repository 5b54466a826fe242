package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/wire"
)

// serveFlags are serve's flags: serve parses them, and service install
// checks a service's command line with them.
type serveFlags struct {
	fs                                                     *flag.FlagSet
	listen, secretFile                                     *string
	insecure, verbose, allowTry                            *bool
	maxTests, maxConns, perHost                            *int
	maxMemory, maxTestMemory, maxDuration, idle, handshake *string
	dataTimeout, logFormat, maxDiskSize                    *string
	diskPaths                                              []string
}

func newServeFlags(env Env, name string) *serveFlags {
	fs := newFlags(env, name)
	f := &serveFlags{fs: fs}
	f.listen = fs.String("listen", "", "address to listen on, HOST:PORT or :PORT (default :7447, or 127.0.0.1:7447 with --insecure)")
	f.secretFile = fs.String("secret-file", "", "file holding the shared secret (or set NARROWS_SECRET)")
	f.insecure = fs.Bool("insecure", false, "run without a secret: allowed on a loopback address only")
	f.maxTests = fs.Int("max-tests", 4, "tests that may run at once")
	f.maxConns = fs.Int("max-conns", 64, "connections that may be open at once (at most half of them not yet authenticated)")
	f.perHost = fs.Int("max-unauth-per-host", 0, "connections from one address that may be open before they authenticate (default: max-conns/8, at least 4)")
	f.maxMemory = fs.String("max-memory", "512MiB", "buffer memory all running tests may hold together")
	f.maxTestMemory = fs.String("max-test-memory", "256MiB", "buffer memory one test may hold (streams × read size, plus one block)")
	f.maxDuration = fs.String("max-duration", "10m", "longest test allowed")
	f.idle = fs.String("idle-timeout", "60s", "close a control connection that sends nothing for this long")
	f.handshake = fs.String("handshake-timeout", "10s", "close a connection that has not authenticated within this time")
	f.dataTimeout = fs.String("data-timeout", "10s", "end a test whose data connection moves nothing for this long")
	f.logFormat = fs.String("log-format", "text", "log format: text or json (a Windows service logs to the Event Log instead)")
	f.verbose = fs.Bool("verbose", false, "log debug messages too")
	fs.Func("disk-path", "a `directory` in which clients may run disk tests (narrows disk --to) and write net commit's log file, repeatable; without it, disk tests are refused and net commit acknowledges on receipt only", func(v string) error {
		f.diskPaths = append(f.diskPaths, v)
		return nil
	})
	f.maxDiskSize = fs.String("max-disk-size", "4GiB", "the largest test file a disk test may ask for")
	f.allowTry = fs.Bool("allow-try", false, "let a client's test change this host's settings for the test's length and put them back (net stream --try-rps: the receive's protocol work moved off a core; net stream --try-offloads: the stream's offloads on; net rr --try-coalescing: the receive's interrupt coalescing at its least; Linux, as root)")
	return f
}

// serveHooks are what a Windows service changes in serve: it is told
// when the agent listens, and the log goes to the Event Log.
type serveHooks struct {
	listening func()    // called once the socket is bound; nil at the console
	events    eventSink // the Event Log; nil: standard error
}

// serveWith is serve: it checks the flags, listens, and runs the agent
// until ctx is done.
func serveWith(ctx context.Context, env Env, args []string, hooks serveHooks) error {
	f := newServeFlags(env, "serve")
	if err := parse(f.fs, args); err != nil {
		return err
	}
	cfg, ap, err := f.config(env, hooks.events)
	if err != nil {
		return err
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
		// Windows says WSAEADDRINUSE (10048), not syscall.EADDRINUSE.
		if errors.Is(err, syscall.EADDRINUSE) || runtime.GOOS == "windows" && errors.Is(err, syscall.Errno(10048)) {
			return usagef("cannot listen on %s: the port is in use (another agent?); choose another with --listen", *f.listen)
		}
		return usagef("cannot listen on %s: %v", *f.listen, err)
	}
	if bound, ok := ln.Addr().(*net.TCPAddr); !ok || (!ap.Addr().IsUnspecified() && bound.AddrPort().Addr().Unmap() != ap.Addr().Unmap()) {
		ln.Close()
		return fmt.Errorf("serve: asked to listen on %s, but the socket is bound to %v: refusing to serve there", ap.Addr(), ln.Addr())
	}
	// The buffers are bounded above; the runtime is told the same, so its
	// garbage (a finished test's buffers) does not double the footprint.
	debug.SetMemoryLimit(cfg.MaxMemory + runtimeRoom)
	if hooks.listening != nil {
		hooks.listening()
	}
	return agent.New(cfg).Serve(ctx, ln)
}

// config checks the parsed flags and reads the secret: the agent's
// Config and the address to listen on, or a usage error.
func (f *serveFlags) config(env Env, events eventSink) (cfg agent.Config, ap netip.AddrPort, err error) {
	cfg = agent.Config{Insecure: *f.insecure, MaxTests: *f.maxTests, MaxConns: *f.maxConns, MaxUnauthPerHost: *f.perHost, Software: Version,
		AllowTry: *f.allowTry}
	for _, d := range []struct {
		flag, val string
		into      *time.Duration
	}{{"--max-duration", *f.maxDuration, &cfg.MaxDuration}, {"--idle-timeout", *f.idle, &cfg.IdleTimeout},
		{"--handshake-timeout", *f.handshake, &cfg.HandshakeTimeout}, {"--data-timeout", *f.dataTimeout, &cfg.DataTimeout}} {
		v, err := metric.ParseDuration(d.val)
		if err != nil || v <= 0 {
			return cfg, ap, usagef("%s: %s", d.flag, errOr(err, "must be more than zero"))
		}
		*d.into = v
	}
	for _, m := range []struct {
		flag, val string
		into      *int64
	}{{"--max-memory", *f.maxMemory, &cfg.MaxMemory}, {"--max-test-memory", *f.maxTestMemory, &cfg.MaxTestMemory}} {
		v, err := metric.ParseSize(m.val)
		if err != nil || v < 1<<20 {
			return cfg, ap, usagef("%s %q: %s", m.flag, m.val, errOr(err, "must be at least 1MiB"))
		}
		*m.into = v
	}
	if cfg.MaxDiskSize, err = metric.ParseSize(*f.maxDiskSize); err != nil || cfg.MaxDiskSize < disk.MinSize {
		return cfg, ap, usagef("--max-disk-size %q: %s", *f.maxDiskSize, errOr(err, "must be at least 1MiB"))
	}
	if cfg.DiskRoots, err = agent.ResolveDiskPaths(f.diskPaths); err != nil {
		return cfg, ap, usagef("serve: %v", err)
	}
	if cfg.MaxTestMemory > cfg.MaxMemory {
		return cfg, ap, usagef("--max-test-memory %s is more than --max-memory %s: one test cannot hold more than all of them", *f.maxTestMemory, *f.maxMemory)
	}
	if *f.maxTests < 1 || *f.maxConns < 2 || *f.perHost < 0 {
		return cfg, ap, usagef("--max-tests must be at least 1, --max-conns at least 2 and --max-unauth-per-host not negative")
	}
	if cfg.Secret, err = secret(env, *f.secretFile); err != nil {
		return cfg, ap, err
	}
	if *f.listen == "" {
		*f.listen = ":" + strconv.Itoa(wire.DefaultPort)
		if *f.insecure {
			*f.listen = "127.0.0.1:" + strconv.Itoa(wire.DefaultPort)
		}
	}
	if ap, err = listenAddr(*f.listen); err != nil {
		return cfg, ap, err
	}
	if err := cfg.Validate(ap); err != nil {
		return cfg, ap, usagef("serve: %v", err)
	}
	level := slog.LevelInfo
	if *f.verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	switch {
	case *f.logFormat != "text" && *f.logFormat != "json":
		return cfg, ap, usagef("--log-format %q: use text or json", *f.logFormat)
	case events != nil:
		cfg.Logger = slog.New(newEventHandler(events, opts))
	case *f.logFormat == "text":
		cfg.Logger = slog.New(slog.NewTextHandler(env.Stderr, opts))
	default:
		cfg.Logger = slog.New(slog.NewJSONHandler(env.Stderr, opts))
	}
	return cfg, ap, nil
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
