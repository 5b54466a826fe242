//go:build linux

package cli_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// rps is h's receive queue's rps_cpus as the kernel shows it.
func rps(t *testing.T, h *testbed.Host) string {
	t.Helper()
	out, err := h.Command(context.Background(), "cat", "/sys/class/net/"+h.Dev+"/queues/rx-0/rps_cpus").Output()
	if err != nil {
		t.Fatalf("rps_cpus of %s: %v", h.Dev, err)
	}
	return strings.TrimSpace(string(out))
}

// TestTryRPSReverse: with --reverse this host receives, and narrows
// steers its own receive for the steered run, as root, and puts it back;
// the report says what it changed.
func TestTryRPSReverse(t *testing.T) {
	ln := testbed.NewTestLink(t, testbed.LinkOptions{})
	before := rps(t, ln.A)
	addr := net.JoinHostPort(ln.B.Addr.String(), "7447")
	itest.StartAgent(t, []string{"--listen", addr}, "ip", "netns", "exec", ln.B.NS)
	r := itest.RunWrapped(t, time.Minute, nil, []string{"ip", "netns", "exec", ln.A.NS},
		"net", "stream", "--to", addr, "--duration", "1s", "--reverse", "--try-rps", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	rep := summaryOf(t, r.Stdout)
	st := rep.Stream.Steering
	if st == nil || st.End != result.EndClient || st.Interface != ln.A.Dev || !st.Restored || st.Error != "" || st.Before != before {
		t.Fatalf("steering %+v; want this host's %s, put back to %s", st, ln.A.Dev, before)
	}
	tryInTurn(t, rep.Stream, result.PhaseSteered, st.Gain)
	if got := rps(t, ln.A); got != before {
		t.Errorf("rps_cpus %s after the run, was %s", got, before)
	}
	if !strings.Contains(findingsText(rep), "stream.rps_") {
		t.Errorf("no --try-rps finding: %s", findingsText(rep))
	}
}

// tryInTurn: a try's runs came in pairs in turn after the single
// stream (as is, tried; tried, as is; as is, tried; ...), each of one
// direction, and its judgement holds their rates in that order, judged.
func tryInTurn(t *testing.T, s *result.Stream, phase string, g *result.TryGain) {
	t.Helper()
	if g == nil || len(g.Pairs) < 3 {
		t.Fatalf("the try's judgement %+v: want 3 pairs or more", g)
	}
	var order []string
	var asIs, tried []float64
	for _, r := range s.Runs {
		order = append(order, r.Phase)
		switch r.Phase {
		case result.PhaseSingle, result.PhaseAsIs:
			asIs = append(asIs, r.Throughput)
		case phase:
			tried = append(tried, r.Throughput)
		}
	}
	var want []string
	for i := range g.Pairs {
		first, then := result.PhaseAsIs, phase
		if i%2 == 1 {
			first, then = phase, result.PhaseAsIs
		}
		if i == 0 {
			first = result.PhaseSingle
		}
		want = append(want, first, then)
	}
	if !slices.Equal(order, want) {
		t.Errorf("runs in the order %v, want %v", order, want)
	}
	for i, p := range g.Pairs {
		if i >= len(asIs) || i >= len(tried) || p.AsIs != asIs[i] || p.Tried != tried[i] || p.AsIs <= 0 || p.Tried <= 0 {
			t.Errorf("pair %d %+v: not the runs' rates (as is %v, tried %v)", i, p, asIs, tried)
		}
	}
	if g.Verdict == result.TryUnjudged && len(g.Pairs) < result.MaxTryPairs && !strings.Contains(g.Why, "whose change was undone") {
		t.Errorf("unjudged after %d pairs (%s), fewer than %d", len(g.Pairs), g.Why, result.MaxTryPairs)
	}
}

// TestTryRPSAgentKilled: an agent killed (SIGKILL: no handler runs)
// while a test has its receive steered leaves nothing changed: the
// guardian it started first writes rps_cpus back.
func TestTryRPSAgentKilled(t *testing.T) {
	ln := testbed.NewTestLink(t, testbed.LinkOptions{})
	before := rps(t, ln.B)
	var steered string
	killAgentMidTry(t, ln.A, ln.B, "--try-rps",
		func() bool { steered = rps(t, ln.B); return steered != before },
		func() bool { return rps(t, ln.B) == before })
	if got := rps(t, ln.B); got != before {
		t.Errorf("rps_cpus %s after the agent was killed while steered to %s; it was %s", got, steered, before)
	}
	t.Logf("steered %s → %s, put back to %s by the guardian", before, steered, before)
}

// killAgentMidTry starts an agent with --allow-try on b and a client on
// a asking it to try a change (try: net stream --try-rps or
// --try-offloads, net rr --try-coalescing), waits up to 30 s until changed says the agent made
// it, kills the agent (SIGKILL: no handler runs), and waits up to 5 s
// until putBack says it is as before.
func killAgentMidTry(t *testing.T, a, b *testbed.Host, try string, changed, putBack func() bool) {
	t.Helper()
	addr := net.JoinHostPort(b.Addr.String(), "7447")
	ag := itest.StartAgent(t, []string{"--listen", addr, "--allow-try"}, "ip", "netns", "exec", b.NS)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := map[string][]string{"--try-rps": {"net", "stream", "--duration", "3s"}, "--try-offloads": {"net", "stream", "--duration", "3s"},
		"--try-coalescing": {"net", "rr", "--duration", "1s"}}[try]
	cli := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", a.NS, itest.Binary(t)}, append(cmd, "--to", addr, try, "--json")...)...)
	cli.Env = append(os.Environ(), "NARROWS_SECRET="+itest.Secret)
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer cli.Wait() //nolint:errcheck
	deadline := time.Now().Add(30 * time.Second)
	for !changed() {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never made its change (%s)", try)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ag.Cmd.Process.Kill()
	ag.Cmd.Wait() //nolint:errcheck
	deadline = time.Now().Add(5 * time.Second)
	for !putBack() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}
