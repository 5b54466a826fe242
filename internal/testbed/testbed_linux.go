//go:build linux

package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` bind-mounts named namespaces.
const netnsDir = "/var/run/netns"

// cmdTimeout bounds each single ip/tc invocation even if the caller's ctx
// has no deadline.
const cmdTimeout = 15 * time.Second

// linkSeq numbers links within this process; it picks the namespace names
// and the 198.18.<n>.0/24 subnet.
var linkSeq atomic.Uint32

// run runs an ip/tc command and returns its error with stderr attached.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		} else {
			msg = msg + " (" + err.Error() + ")"
		}
		return nil, fmt.Errorf("testbed: %s %s: %s", name, strings.Join(args, " "), msg)
	}
	return stdout.Bytes(), nil
}

var available = sync.OnceValue(probe)

// Available reports why namespaces cannot be made here (not root, no
// ip/tc, netns or veth creation refused), nil if they can. The first call
// really creates and deletes a throwaway namespace with a veth pair; the
// answer is cached for the life of the process.
func Available() error { return available() }

func probe() error {
	if euid := os.Geteuid(); euid != 0 {
		return fmt.Errorf("testbed: network namespaces need root (running as euid %d)", euid)
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("testbed: %q not found in PATH (install iproute2): %w", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*cmdTimeout)
	defer cancel()
	ns := fmt.Sprintf("%s%d-probe", NamePrefix, os.Getpid())
	if _, err := run(ctx, "ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("testbed: cannot create a network namespace: %w", err)
	}
	defer deleteNS(ns) //nolint:errcheck // only matters if a step below failed
	if _, err := run(ctx, "ip", "-n", ns, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"); err != nil {
		return fmt.Errorf("testbed: cannot create a veth pair (CONFIG_VETH?): %w", err)
	}
	if _, err := run(ctx, "ip", "netns", "del", ns); err != nil {
		return fmt.Errorf("testbed: cannot delete a network namespace: %w", err)
	}
	return nil
}

// NewLink creates two namespaces narrows-<pid>-<n>-a and -b, a veth pair
// between them (device "veth-a" in a, "veth-b" in b), addresses
// 198.18.<n>.1/24 and 198.18.<n>.2/24, loopback up in each, and, if
// opts.RateBitsPerSecond > 0, a tbf root qdisc on both veth ends. It first
// calls CleanupStale. On error nothing is left behind.
//
// Links never share namespaces, so the subnets of different links (even
// of different processes) may repeat without conflict; n beyond 511 wraps
// within 198.18.0.0/15.
func NewLink(ctx context.Context, opts LinkOptions) (*Link, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if err := CleanupStale(); err != nil {
		return nil, err
	}
	a, b, prefix := newHostPair(linkSeq.Add(1), "veth-a", "veth-b")
	l := &Link{A: a, B: b, Options: opts, Prefix: prefix}
	if err := l.setup(ctx); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return l, nil
}

// newHostPair names the n-th pair of hosts of this process: namespaces
// narrows-<pid>-<n>-a and -b, addresses 198.18.<n>.1 and .2 in a /24, and
// the given device names.
func newHostPair(n uint32, devA, devB string) (a, b *Host, prefix netip.Prefix) {
	sub := n % 512 // 198.18.0.0/15 holds 512 /24s: n=1 is 198.18.1.0/24
	base := netip.AddrFrom4([4]byte{198, 18 + byte(sub/256), byte(sub % 256), 0})
	b4 := base.As4()
	addrA := netip.AddrFrom4([4]byte{b4[0], b4[1], b4[2], 1})
	addrB := netip.AddrFrom4([4]byte{b4[0], b4[1], b4[2], 2})
	name := fmt.Sprintf("%s%d-%d", NamePrefix, os.Getpid(), n)
	a = &Host{Name: "a", NS: name + "-a", Addr: addrA, Dev: devA}
	b = &Host{Name: "b", NS: name + "-b", Addr: addrB, Dev: devB}
	return a, b, netip.PrefixFrom(base, 24)
}

func (l *Link) setup(ctx context.Context) error {
	o := l.Options
	for _, h := range l.Hosts() {
		if _, err := run(ctx, "ip", "netns", "add", h.NS); err != nil {
			return err
		}
	}
	// Create both ends directly inside their namespaces, so the device
	// names never appear in (or collide within) the root namespace.
	if _, err := run(ctx, "ip", "link", "add", l.A.Dev, "netns", l.A.NS, "mtu", strconv.Itoa(o.MTU),
		"type", "veth", "peer", "name", l.B.Dev, "netns", l.B.NS, "mtu", strconv.Itoa(o.mtuB())); err != nil {
		return err
	}
	for _, h := range l.Hosts() {
		steps := [][]string{
			{"ip", "-n", h.NS, "link", "set", "lo", "up"},
			{"ip", "-n", h.NS, "addr", "add", netip.PrefixFrom(h.Addr, 24).String(), "dev", h.Dev},
		}
		if o.RateBitsPerSecond > 0 {
			steps = append(steps, []string{"tc", "-n", h.NS, "qdisc", "replace", "dev", h.Dev, "root", "tbf",
				"rate", strconv.FormatInt(o.RateBitsPerSecond, 10) + "bit",
				"burst", strconv.FormatInt(o.BurstBytes, 10),
				"latency", strconv.FormatInt(o.QueueLatency.Microseconds(), 10) + "us"})
		}
		steps = append(steps, []string{"ip", "-n", h.NS, "link", "set", h.Dev, "up"})
		for _, s := range steps {
			if _, err := run(ctx, s[0], s[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

// mtuB is B's end's MTU.
func (o LinkOptions) mtuB() int {
	if o.MTUB != 0 {
		return o.MTUB
	}
	return o.MTU
}

// teardown deletes both namespaces, for Close.
func (l *Link) teardown() error {
	var errs []error
	for _, h := range l.Hosts() {
		if err := deleteNS(h.NS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteNS deletes a named namespace; one that is already gone is fine.
func deleteNS(ns string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, ns)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := run(context.Background(), "ip", "netns", "del", ns)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(netnsDir, ns)); errors.Is(serr, fs.ErrNotExist) {
			return nil // deleted concurrently
		}
	}
	return err
}

// CleanupStale deletes narrows-<pid>-* namespaces whose pid is no longer
// alive, left behind by an earlier run that crashed or was killed before
// its Close ran. Namespaces of live processes (including this one) and
// names that do not match the pattern are left alone. A recycled pid keeps
// its stale namespaces until that process exits too; that is harmless.
func CleanupStale() error {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("testbed: listing namespaces: %w", err)
	}
	var errs []error
	for _, e := range ents {
		pid, ok := ownerPID(e.Name())
		if !ok || pidAlive(pid) {
			continue
		}
		if err := deleteNS(e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ownerPID parses the pid out of "narrows-<pid>-<rest>".
func ownerPID(ns string) (int, bool) {
	rest, ok := strings.CutPrefix(ns, NamePrefix)
	if !ok {
		return 0, false
	}
	p, tail, ok := strings.Cut(rest, "-")
	if !ok || tail == "" {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != p {
		return 0, false
	}
	return pid, true
}

func pidAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Do runs fn on an OS thread that has entered the host's network
// namespace, and waits for it. Sockets created by fn itself (net.Listen,
// net.Dial with IP literals, ...) belong to the host's namespace for their
// whole life and may be used from any goroutine afterwards. Goroutines
// that fn starts do NOT run in the namespace. A panic in fn is re-raised
// in the caller. If the thread cannot be switched back, it is discarded
// (the goroutine exits while still locked, so the runtime kills it).
func (h *Host) Do(fn func() error) error {
	type result struct {
		err      error
		panicked bool
		pv       any
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := syscall.Open("/proc/thread-self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("testbed: opening current netns: %w", err)}
			return
		}
		defer syscall.Close(orig)
		target, err := syscall.Open(filepath.Join(netnsDir, h.NS), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("testbed: opening netns %s: %w", h.NS, err)}
			return
		}
		defer syscall.Close(target)
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("testbed: entering netns %s: %w", h.NS, err)}
			return
		}
		var res result
		func() {
			defer func() {
				if p := recover(); p != nil {
					res.panicked, res.pv = true, p
				}
			}()
			res.err = fn()
		}()
		if err := setns(orig); err != nil {
			// Stay locked: this thread dies with the goroutine.
			res.err = errors.Join(res.err, fmt.Errorf("testbed: leaving netns %s: %w", h.NS, err))
			ch <- res
			return
		}
		runtime.UnlockOSThread()
		ch <- res
	}()
	r := <-ch
	if r.panicked {
		panic(r.pv)
	}
	return r.err
}

func setns(fd int) error { return unix.Setns(fd, unix.CLONE_NEWNET) }
