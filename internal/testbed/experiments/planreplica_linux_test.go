//go:build linux

package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
)

// Experiment 8 (issue 14): `narrows plan replica` predicts, before any
// load, whether a replica keeps up and how fast its send queue grows; the
// replication experiments (repl_linux_test.go) then hold it to what `db
// repl` measures, and TestPlanReplicaRTT holds its --rtt what-if to one
// stream measured on the farther line.

// replicaPrediction is the part of `plan replica --json` read here.
type replicaPrediction struct {
	capacity, growth float64 // B/s
	limit, verdict   string
	rtt              map[string]any // the --rtt what-if, when asked
	headroomPeak     float64
	peerWindow       float64
}

// planReplica runs `narrows plan replica` on host A with args (--json
// added) and reads its prediction for the first stream.
func planReplica(t *testing.T, l *testbed.DelayLine, args ...string) replicaPrediction {
	t.Helper()
	res := runOnA(t, l, 2*time.Minute, append([]string{"plan", "replica", "--json"}, args...)...)
	_, sum := itest.Records(t, res.Stdout)
	p := itest.Obj(sum, "replica_plan")
	cases, _ := p["cases"].([]any)
	if p == nil || len(cases) == 0 {
		t.Fatalf("no replica plan:\n%s", res.Stdout)
	}
	c := cases[0].(map[string]any)
	s := itest.Obj(p, "stream")
	r := replicaPrediction{capacity: jnum(s, "capacity_bytes_per_second"), growth: jnum(c, "send_queue_growth_bytes_per_second"),
		headroomPeak: jnum(c, "headroom_at_peak_ratio"), peerWindow: jnum(s, "peer_window_bytes")}
	r.limit, _ = s["limited_by"].(string)
	r.verdict, _ = p["verdict"].(string)
	for _, w := range p["what_ifs"].([]any) {
		if m := w.(map[string]any); strings.HasPrefix(m["what"].(string), "rtt ") {
			r.rtt = m
		}
	}
	t.Logf("plan replica %s: one stream %.2f MB/s limited by %s (peer window %.0f B); verdict %s, headroom at the peak %.2f×, send queue growing %.2f MB/s",
		strings.Join(args, " "), r.capacity/1e6, r.limit, r.peerWindow, r.verdict, r.headroomPeak, r.growth/1e6)
	return r
}

// TestPlanReplicaRTT: on a 20 ms line (100 Mbit/s, host B's receive
// buffer capped at 128 KiB, so one stream is window-bound near 4 MB/s)
// plan replica predicts one stream's capacity at 80 ms from the window the
// stream had (window ÷ RTT); then the same hosts' line at 80 ms, one
// stream measured as a replica's would run (the host's buffers): within
// 15% of the prediction.
func TestPlanReplicaRTT(t *testing.T) {
	setUp(t, 1)
	d := fallingStreamFor()
	line := func(rtt time.Duration) *testbed.DelayLine {
		l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
		for _, h := range l.Hosts() {
			setCC(t, h, "reno")
		}
		capRmem(t, l.B)
		startAgent(t, l)
		return l
	}
	near := line(20 * time.Millisecond)
	before := near.Stats()
	pred := planReplica(t, near, "--to", agentAddr(near), "--stage-duration", d.String(), "--streams", "1", "--log-rate", "1MB/s", "--rtt", "80ms")
	rec20 := lineRecord(before, near.Stats())
	if pred.rtt == nil {
		t.Fatal("no --rtt what-if in the plan")
	}
	want := jnum(pred.rtt, "capacity_bytes_per_second")
	wlimit, _ := pred.rtt["limited_by"].(string)
	from, _ := pred.rtt["window_from"].(string)
	near.Close() // one line at a time on this machine

	far := line(80 * time.Millisecond)
	before = far.Stats()
	s := runStream(t, far, d)
	rec80 := lineRecord(before, far.Stats())
	got := s.Stream.Throughput / 8
	tcp := s.Stream.Runs[0].TCP
	ratio := got / want
	t.Logf("RESULT rtt what-if: at 20 ms one stream %.2f MB/s (%s, peer window %.0f B); predicted at 80 ms %.3f MB/s (%s: %s); measured at 80 ms %.3f MB/s (%s, peer window %d B, RTT %.1f ms); measured ÷ predicted %.3f; 20 ms %s; 80 ms %s",
		pred.capacity/1e6, pred.limit, pred.peerWindow, want/1e6, wlimit, from, got/1e6, s.verdict(), tcp.PeerWindow, 1e3*tcp.RTT, ratio, rec20, rec80)
	if pred.limit != "window" || wlimit != "window" {
		t.Errorf("the stream at 20 ms reads %s and the 80 ms what-if %s: with 128 KiB of receive buffer both are window-bound", pred.limit, wlimit)
	}
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("one stream at 80 ms carried %.3f MB/s; plan replica predicted %.3f MB/s from the 20 ms line: off by %+.1f%%, more than 15%%",
			got/1e6, want/1e6, 100*(ratio-1))
	}
}

// planGrowthRatio holds plan replica's prediction, made before the load,
// to the send queue growth db repl measured under it (within 15%).
func planGrowthRatio(t *testing.T, pred replicaPrediction, measured float64) float64 {
	t.Helper()
	if pred.verdict != "falls_behind" {
		t.Errorf("plan replica's verdict is %s, want falls_behind", pred.verdict)
	}
	if pred.growth <= 0 {
		t.Fatalf("plan replica predicted no growth")
	}
	r := measured / pred.growth
	if r < 0.85 || r > 1.15 {
		t.Errorf("db repl measured the send queue growing %.2f MB/s; plan replica predicted %.2f MB/s before the load: off by %+.1f%%, more than 15%%",
			measured/1e6, pred.growth/1e6, 100*(r-1))
	}
	return r
}
