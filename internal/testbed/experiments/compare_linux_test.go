//go:build linux

package experiments

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/history"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
)

// TestCompareDoctorAcrossRTT (issue 27): `narrows compare` of two real
// doctor runs, the path 8 ms, then 30 ms (100 Mbit/s, an agent on host B,
// host A's own directory as the data path). The truth is the line's RTT:
// compare calls the round trip's change significant and its size the
// lines' ratio (30 / 8, within 10%: the line adds its forwarder's tens of
// µs, the hosts their wake-ups); the streams' and the disk's figures each
// have the samples to be tested (issue 27: every disk row was "too few
// samples, need 4+4"); the verdicts that changed come first.
func TestCompareDoctorAcrossRTT(t *testing.T) {
	setUp(t)
	dir, data := t.TempDir(), t.TempDir() // one data directory, as a DBA's is
	var runs []string
	for _, rtt := range []time.Duration{8 * time.Millisecond, 30 * time.Millisecond} {
		l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
		startAgentOn(t, l.B)
		run := filepath.Join(dir, "doctor-"+rtt.String()+".jsonl")
		res := runOnA(t, l, 3*time.Minute, "doctor", "--to", agentAddr(l), "--data-path", data, "--budget", "30s", "--out", run, "--html", strings.TrimSuffix(run, ".jsonl")+".html")
		t.Logf("doctor across %v: %s", rtt, firstLines(res.Stdout, 3))
		runs = append(runs, run)
		l.Close()
	}
	res := runHere(t, "compare", runs[0], runs[1])
	t.Logf("compare:\n%s", res.Stdout)
	res = runHere(t, "compare", "--json", runs[0], runs[1])
	var c history.Comparison
	if err := json.Unmarshal([]byte(res.Stdout), &c); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, res.Stdout)
	}
	byName := map[string]history.Change{}
	for _, f := range c.Figures {
		byName[f.Name] = f
	}
	rt, ok := byName["net rr 64 B: round trip p50"]
	switch {
	case !ok:
		t.Fatalf("compare has no round trip p50 of net rr 64 B among %d figures", len(c.Figures))
	case rt.P == nil || !rt.Significant:
		t.Errorf("the round trip went from %.4g to %.4g s and compare did not call it significant (p %v, n=%d+%d)", rt.Before, rt.After, rt.P, rt.NBefore, rt.NAfter)
	case math.Abs(rt.After/rt.Before/(30.0/8)-1) > 0.10:
		t.Errorf("the round trip went from %.4g to %.4g s: %.3f×, the lines' %.3f× within 10%%", rt.Before, rt.After, rt.After/rt.Before, 30.0/8)
	default:
		t.Logf("RESULT compare: the 64 B round trip %.3f → %.3f ms (%.3f×, the lines' 3.75×), p=%.4f n=%d+%d; %d figures, %d verdicts changed",
			rt.Before*1e3, rt.After*1e3, rt.After/rt.Before, *rt.P, rt.NBefore, rt.NAfter, len(c.Figures), len(c.Verdicts))
	}
	// Every figure a step measured over intervals has the samples for
	// compare's test: the streams', the round trips', the commit's, the
	// disk's (the load's phases and its queue are one figure a run).
	tested := 0
	for _, f := range c.Figures {
		if strings.HasPrefix(f.Name, "net rr under load") || strings.HasPrefix(f.Name, "net mtu") {
			continue
		}
		if f.NBefore < history.MinSamples || f.NAfter < history.MinSamples {
			t.Errorf("%s: n=%d+%d, too few samples for compare's test", f.Name, f.NBefore, f.NAfter)
		}
		tested++
	}
	if tested == 0 || !hasPrefix(c.Figures, "disk data path") || !hasPrefix(c.Figures, "net stream") {
		t.Errorf("compare has no disk or stream figure among %d", len(c.Figures))
	}
	text := runHere(t, "compare", runs[0], runs[1]).Stdout
	if len(c.Verdicts) > 0 && strings.Index(text, "Verdicts that changed") > strings.Index(text, "FIGURE") {
		t.Errorf("the verdicts that changed come after the figures:\n%s", text)
	}
}

// runHere runs narrows on this host, failing t unless it exits 0.
func runHere(t *testing.T, args ...string) itest.Result {
	t.Helper()
	res := itest.Run(t, time.Minute, nil, args...)
	if res.Code != 0 {
		t.Fatalf("narrows %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

func hasPrefix(fs []history.Change, p string) bool {
	for _, f := range fs {
		if strings.HasPrefix(f.Name, p) {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " / ")
}
