//go:build linux

package experiments

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// What every experiment does around narrows: the agent on host B, the
// clients on host A, as processes inside the namespaces, the way a DBA
// would run them at the two ends of a WAN path.

const agentPort = 7447

// setUp starts every experiment: it skips without a delay line (fails
// under CI=true), builds narrows before any clock matters, lets the test
// run beside the others (t.Parallel), and holds n of the machine's
// timing shares for the rest of t (share). n = 0 takes none: the test's
// subtests take their own (run).
func setUp(t *testing.T, n int) {
	t.Helper()
	testbed.SkipUnlessDelayLine(t)
	itest.Binary(t)
	if n > 0 {
		parallel(t, n, early)
	} else {
		t.Parallel()
	}
}

// run runs one setting of an experiment as a subtest beside the others,
// on n of the machine's timing shares.
func run(t *testing.T, name string, n int, f func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) {
		parallel(t, n, early)
		f(t)
	})
}

// parallel lets t run beside the others (t.Parallel) and holds n of the
// machine's timing shares for the rest of it, in its order's turn.
func parallel(t *testing.T, n, order int) {
	t.Helper()
	t.Parallel()
	share(t, n, order)
}

// The order the tests of this process take their shares in.
const (
	// late: a scenario that needs the machine to itself (testbed.Slots:
	// a disk measured, a CPU quota judged) runs after all the others,
	// when the machine is as quiet as it gets. Taking the whole machine
	// between others would empty it first, each time.
	late = iota
	// the verdict matrix's scenarios, seconds each, fill the gaps;
	normal
	// the experiments, minutes each, start early: begun last, a long one
	// would keep the suite waiting on it alone;
	early
	// and first of all the experiments that need the machine to
	// themselves (the hosts' share of a round trip), one after another
	// before anything else starts. (The backups, on two shares, start
	// early too: at the end, a backup's gigabytes were still being
	// written out when the disk scenarios measured their flushes (disk/
	// log-on-ext4 read a tail of 2-3.5 ms, 11-21× its median, in two
	// runs of three).)
	first
)

// share holds n of the machine's timing shares for the rest of t
// (testbed.Share), when no test of an earlier order is waiting for its
// own. Nothing is handed out in the first second after the first ask,
// so that every test of the process has asked (they ask together, when
// go test lets the parallel ones go) before the order is kept.
func share(t *testing.T, n, order int) {
	t.Helper()
	if n >= testbed.Slots {
		switch order {
		case normal:
			order = late
		case early:
			order = first
		}
	}
	turns.settle()
	turns.mu.Lock()
	turns.waiting[order]++
	if order == first {
		// Until it ends, nothing of a later order starts.
		turns.alone++
		t.Cleanup(func() {
			turns.mu.Lock()
			turns.alone--
			turns.cond.Broadcast()
			turns.mu.Unlock()
		})
	}
	for turns.busy || turns.ahead(order) {
		turns.cond.Wait()
	}
	turns.waiting[order]--
	turns.busy = true
	turns.mu.Unlock()
	defer func() {
		turns.mu.Lock()
		turns.busy = false
		turns.cond.Broadcast()
		turns.mu.Unlock()
	}()
	testbed.Share(t, n)
	if n >= testbed.Slots {
		// The machine to itself, its disk too: what the tests before
		// wrote (a backup's gigabytes) is flushed now, not during this
		// one's flushes.
		unix.Sync()
	}
}

// turns is the order this process's tests take their shares in: one at a
// time, earlier orders first.
var turns = newTurnQueue()

type turnQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	busy    bool           // one is taking its share
	waiting [first + 1]int // of each order
	alone   int            // tests of the first order asked and not ended
	settle  func()
}

func newTurnQueue() *turnQueue {
	q := &turnQueue{settle: sync.OnceFunc(func() { time.Sleep(time.Second) })}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// ahead says whether a test of an earlier order than order is waiting,
// or one of the first order has not ended.
func (q *turnQueue) ahead(order int) bool {
	if order < first && q.alone > 0 {
		return true
	}
	for o := order + 1; o <= first; o++ {
		if q.waiting[o] > 0 {
			return true
		}
	}
	return false
}

// inNS is the command prefix that runs a program on host h.
func inNS(h *testbed.Host) []string { return []string{"ip", "netns", "exec", h.NS} }

// agentAddr is where startAgent's agent listens: host B, agentPort.
func agentAddr(l *testbed.DelayLine) string { return agentAt(l.B) }

// agentAt is where startAgentOn's agent listens on h.
func agentAt(h *testbed.Host) string {
	return net.JoinHostPort(h.Addr.String(), strconv.Itoa(agentPort))
}

// startAgent starts `narrows serve` on host B at agentAddr until the end
// of t.
func startAgent(t *testing.T, l *testbed.DelayLine) { t.Helper(); startAgentOn(t, l.B) }

// startAgentOn starts `narrows serve` on h at agentAt(h) until the end of t.
func startAgentOn(t *testing.T, h *testbed.Host) {
	t.Helper()
	itest.StartAgent(t, []string{"--listen", agentAt(h)}, inNS(h)...)
}

// runOnA runs narrows with args on host A, at most timeout, and fails t
// unless it exits 0.
func runOnA(t *testing.T, l *testbed.DelayLine, timeout time.Duration, args ...string) itest.Result {
	t.Helper()
	return runOn(t, l.A, timeout, args...)
}

// runOn runs narrows with args on host h, at most timeout, and fails t
// unless it exits 0.
func runOn(t *testing.T, h *testbed.Host, timeout time.Duration, args ...string) itest.Result {
	t.Helper()
	res := itest.RunWrapped(t, timeout, nil, inNS(h), args...)
	if res.Code != 0 {
		t.Fatalf("narrows %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// streamSummary is the part of `narrows net stream --json`'s summary read here.
type streamSummary struct {
	Partial bool   `json:"partial"`
	Error   string `json:"error"`
	Stream  *struct {
		Throughput float64 `json:"throughput_bits_per_second"`
		Runs       []struct {
			TCP *struct {
				RTT           float64 `json:"rtt_seconds"`
				MinRTT        float64 `json:"min_rtt_seconds"`
				PeerWindow    int64   `json:"peer_window_bytes"`
				RwndLimited   float64 `json:"rwnd_limited_ratio"`
				SndbufLimited float64 `json:"sndbuf_limited_ratio"`
				Retransmits   int64   `json:"retransmits"`
			} `json:"tcp"`
		} `json:"runs"`
	} `json:"stream"`
	Findings []struct {
		Code    string `json:"code"`
		Summary string `json:"summary"`
	} `json:"findings"`
}

// verdict is the summary's stream.*_limited finding, "" if none.
func (s streamSummary) verdict() string {
	var v string
	for _, f := range s.Findings {
		if strings.HasSuffix(f.Code, "_limited") {
			v = f.Code
		}
	}
	return v
}

// runStream runs `narrows net stream` A→B to startAgent's agent for d,
// with extra flags, and returns its summary (the last line of its output).
func runStream(t *testing.T, l *testbed.DelayLine, d time.Duration, extra ...string) streamSummary {
	t.Helper()
	args := append([]string{"net", "stream", "--to", agentAddr(l), "--duration", d.String(), "--json"}, extra...)
	res := runOnA(t, l, d+30*time.Second, args...)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	var s streamSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Stream == nil {
		t.Fatalf("narrows net stream: no stream summary (%v):\n%s", err, res.Stdout)
	}
	return s
}

// streamOnce is runStream's throughput, in B/s of payload, and its verdict.
func streamOnce(t *testing.T, l *testbed.DelayLine, d time.Duration, extra ...string) (float64, string) {
	t.Helper()
	s := runStream(t, l, d, extra...)
	return s.Stream.Throughput / 8, s.verdict()
}

// sysctl sets one kernel setting (key=value) in h's namespace.
func sysctl(t *testing.T, h *testbed.Host, kv string) {
	t.Helper()
	if out, err := h.Command(context.Background(), "sysctl", "-qw", kv).CombinedOutput(); err != nil {
		t.Fatalf("sysctl -w %s on %s: %v: %s", kv, h, err, out)
	}
}

// setCC sets the default TCP congestion control of h's namespace.
func setCC(t *testing.T, h *testbed.Host, cc string) {
	t.Helper()
	sysctl(t, h, "net.ipv4.tcp_congestion_control="+cc)
}

// placeOn places a database server on host h.
func placeOn(h *testbed.Host) dbserver.Place { return dbserver.Place{Addr: h.Addr.String(), Do: h.Do} }
