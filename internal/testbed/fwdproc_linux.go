//go:build linux

package testbed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/sysinfo"
)

// The forwarders run in a process of their own: this one's executable
// started again with fwdEnv set, which the package's init hands to
// forwarderMain before anything else runs. Every thread of that process
// runs at real-time priority (unless the line was asked not to), not only
// the two forwarder threads.
//
// Why: in the test's own process, with one core held by a busy loop, the
// line stalled once for 80–130 ms in 2 of 4 runs of a 50 Mbit/s line (its
// mean lateness 1.6 and 7.2 ms), though its threads were real-time: a
// thread of the Go runtime that the forwarder waits on (the scheduler
// handing a preempted locked goroutine back, a stop-the-world) ran at
// ordinary priority behind the busy loop. With every thread of the process
// real-time (`chrt -f 1`), 5 runs of the same stalled at most 5 ms. The
// test's process cannot be made real-time as a whole: the servers and
// tools it starts would inherit it. A process that only forwards can.
//
// The parent passes the two TUN devices and a shared page (memfd) as
// extra files and the options as one JSON line on standard input, which
// it then holds open: its end, or the parent's death, stops the line. The
// child writes each direction's counters to the page after every loop
// (Stats reads them there without a round trip) and reports, as JSON
// lines on standard output, that it is ready and any I/O error.

const fwdEnv = "NARROWS_TESTBED_FORWARDER"

func init() {
	if os.Getenv(fwdEnv) == "" {
		return
	}
	if err := forwarderMain(); err != nil {
		fmt.Fprintf(os.Stderr, "narrows testbed forwarder: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// fwdConfig is what the parent tells the forwarder process.
type fwdConfig struct {
	Paths    [2]Path // A→B, B→A
	Seed     uint64
	MTU      int
	MaxHeld  int
	Realtime bool
	// LetCPUsSleep: no CPU latency request (DelayLineOptions).
	LetCPUsSleep bool `json:",omitempty"`
}

// fwdMsg is one line from the forwarder process.
type fwdMsg struct {
	Ready    bool   `json:"ready,omitempty"`
	Realtime bool   `json:"realtime,omitempty"` // every thread real-time
	Awake    string `json:"awake,omitempty"`    // why the CPU latency request is not held
	Dir      int    `json:"dir,omitempty"`      // with Err: 0 A→B, 1 B→A
	Err      string `json:"err,omitempty"`
}

// Counters in the shared page: statsWords int64s per direction.
const statsWords = 20

func statsPageSize() int { return 2 * statsWords * 8 }

func word(page []byte, dir, i int) *int64 {
	return (*int64)(unsafe.Pointer(&page[(dir*statsWords+i)*8]))
}

func storeStats(page []byte, dir int, s PathStats) {
	for i, v := range []int64{s.Packets, s.Bytes, s.DroppedLoss, s.DroppedQueue, s.DroppedHeld, s.Held,
		int64(s.LateTotal), int64(s.LateMax), s.LateOver1ms, s.WriteErrors, s.DroppedTooBig, int64(s.QueueWait), s.Queued, int64(s.SmallWait), s.SmallQueued, s.SmallDropped,
		s.ModerationHeld, int64(s.ModerationWait), s.ModerationTimeouts, int64(s.ModerationLate)} {
		atomic.StoreInt64(word(page, dir, i), v)
	}
}

func loadStats(page []byte, dir int) PathStats {
	w := func(i int) int64 { return atomic.LoadInt64(word(page, dir, i)) }
	return PathStats{Packets: w(0), Bytes: w(1), DroppedLoss: w(2), DroppedQueue: w(3), DroppedHeld: w(4), Held: w(5),
		LateTotal: time.Duration(w(6)), LateMax: time.Duration(w(7)), LateOver1ms: w(8), WriteErrors: w(9),
		DroppedTooBig: w(10), QueueWait: time.Duration(w(11)), Queued: w(12),
		SmallWait: time.Duration(w(13)), SmallQueued: w(14), SmallDropped: w(15),
		ModerationHeld: w(16), ModerationWait: time.Duration(w(17)), ModerationTimeouts: w(18), ModerationLate: time.Duration(w(19))}
}

// fwdProc is the parent's handle on a forwarder process.
type fwdProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	page  []byte
	done  chan struct{} // closed when its output ends

	mu       sync.Mutex
	errs     [2]error
	realtime bool
	awake    error
}

// startForwarders starts the forwarder process for tuns (A's, B's) and
// waits until it is forwarding.
func startForwarders(tuns [2]int, cfg fwdConfig, timeout time.Duration) (*fwdProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("testbed: the forwarder's executable: %w", err)
	}
	mfd, err := unix.MemfdCreate("narrows-testbed-stats", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("testbed: memfd: %w", err)
	}
	mem := os.NewFile(uintptr(mfd), "stats")
	defer mem.Close() // the mapping and the child's copy keep it
	if err := mem.Truncate(int64(statsPageSize())); err != nil {
		return nil, fmt.Errorf("testbed: memfd: %w", err)
	}
	page, err := unix.Mmap(mfd, 0, statsPageSize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("testbed: mmap: %w", err)
	}
	p := &fwdProc{page: page, done: make(chan struct{})}
	// Dup the devices: exec.Cmd closes its ExtraFiles' *os.File in the
	// parent after Start, and the line keeps its own descriptors.
	var extra []*os.File
	for i, fd := range tuns {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			unix.Munmap(page)
			return nil, fmt.Errorf("testbed: dup: %w", err)
		}
		extra = append(extra, os.NewFile(uintptr(d), [2]string{tunA, tunB}[i]))
	}
	extra = append(extra, mem)
	cmd := exec.Command(exe)
	cmd.Args = []string{filepath.Base(exe) + " (narrows testbed forwarder)"}
	cmd.Env = append(os.Environ(), fwdEnv+"=1")
	cmd.ExtraFiles = extra // fds 3 (A's device), 4 (B's), 5 (the page)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		unix.Munmap(page)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		unix.Munmap(page)
		return nil, err
	}
	err = cmd.Start()
	for _, f := range extra[:2] {
		f.Close()
	}
	if err != nil {
		unix.Munmap(page)
		return nil, fmt.Errorf("testbed: starting the forwarder process: %w", err)
	}
	p.cmd, p.stdin = cmd, stdin
	ready := make(chan error, 1)
	go p.read(stdout, ready)
	if err := json.NewEncoder(stdin).Encode(cfg); err != nil {
		p.stop()
		return nil, fmt.Errorf("testbed: configuring the forwarder process: %w", err)
	}
	select {
	case err = <-ready:
	case <-time.After(timeout):
		err = errors.New("testbed: the forwarder process did not start in time")
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// read takes the forwarder process's lines until it ends.
func (p *fwdProc) read(r io.Reader, ready chan<- error) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	started := false
	for sc.Scan() {
		var m fwdMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		p.mu.Lock()
		switch {
		case m.Ready:
			p.realtime = m.Realtime
			if m.Awake != "" {
				p.awake = errors.New(m.Awake)
			}
		case m.Err != "" && m.Dir >= 0 && m.Dir < 2 && p.errs[m.Dir] == nil:
			p.errs[m.Dir] = errors.New(m.Err)
		}
		p.mu.Unlock()
		if m.Ready && !started {
			started = true
			ready <- nil
		}
	}
	if !started {
		ready <- errors.New("testbed: the forwarder process ended before it was ready")
	}
}

func (p *fwdProc) stats(dir int) PathStats { return loadStats(p.page, dir) }

// state is what the forwarder process said when it was ready: whether
// every thread runs real-time, and why the CPUs are not held awake, if not.
func (p *fwdProc) state() (realtime bool, awake error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.realtime, p.awake
}

func (p *fwdProc) err(dir int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errs[dir] != nil {
		return p.errs[dir]
	}
	select {
	case <-p.done:
		if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
			return fmt.Errorf("testbed: the forwarder process ended: %v", p.cmd.ProcessState)
		}
	default:
	}
	return nil
}

// stop ends the forwarder process (its standard input closed; killed if it
// takes over 5 s) and waits for it. The page stays mapped: Stats still
// reads the final counts.
func (p *fwdProc) stop() {
	p.stdin.Close()
	exited := make(chan struct{})
	go func() {
		<-p.done
		p.cmd.Wait() //nolint:errcheck // its state is read by err
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck
		<-exited
	}
}

// forwarderMain is the forwarder process.
func forwarderMain() error {
	var cfg fwdConfig
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the configuration: %w", err)
	}
	if err := json.Unmarshal(line, &cfg); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	page, err := unix.Mmap(5, 0, statsPageSize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the counters: %w", err)
	}
	for _, fd := range []int{3, 4} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return fmt.Errorf("non-blocking device: %w", err)
		}
	}
	var awake string
	if cfg.LetCPUsSleep {
		awake = "testbed: no CPU latency request held, as asked (LetCPUsSleep)"
	} else if release, err := sysinfo.HoldCPULatency(); err != nil {
		awake = fmt.Sprintf("testbed: CPU latency request (%s) not held: %v", sysinfo.CPULatencyDev, err)
	} else {
		defer release()
		if !sysinfo.CPUIdleGoverned() {
			awake = fmt.Sprintf("testbed: the CPU latency request keeps no CPU awake here: no cpuidle driver (%q)", sysinfo.CPUIdleDriver())
		}
	}
	addForwarderPs(2)
	rt := cfg.Realtime && allRealtime() == nil
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	say := func(m fwdMsg) {
		outMu.Lock()
		defer outMu.Unlock()
		out.Encode(m) //nolint:errcheck // the parent is gone: stdin ends too
	}
	base := time.Now()
	var fws [2]*forwarder
	var rxs []*rxCoalescing
	for i := range 2 {
		dir := i
		fw, err := newForwarder([2]string{"A→B", "B→A"}[i], 3+i, 4-i, newShaper(cfg.Paths[i], cfg.Seed, uint64(i+1)), base, cfg.MTU, cfg.MaxHeld, cfg.Realtime)
		if err != nil {
			return err
		}
		if m := cfg.Paths[i].Moderation; m > 0 {
			// The receiving device's coalescing, read where it is.
			rx, err := openRxCoalescing(fw.dst)
			if err != nil {
				return err
			}
			fw.mod, fw.rx = m, rx
			fw.spin.share = modShare
			rxs = append(rxs, rx)
		}
		fw.sink = func(s PathStats) { storeStats(page, dir, s) }
		fw.onErr = func(err error) { say(fwdMsg{Dir: dir, Err: err.Error()}) }
		fws[i] = fw
	}
	if len(rxs) > 0 {
		poller, err := startRxPoller(rxs, base)
		if err != nil {
			return err
		}
		defer poller.close()
	}
	for _, fw := range fws {
		fw.start()
	}
	say(fwdMsg{Ready: true, Realtime: rt, Awake: awake})
	io.Copy(io.Discard, in) //nolint:errcheck // until the parent closes it, or dies
	for _, fw := range fws {
		fw.stop()
	}
	return nil
}

// allRealtime puts every thread of this process at the lowest real-time
// priority; the threads the runtime starts later inherit it from theirs.
func allRealtime() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
			return err
		}
	}
	return nil
}
