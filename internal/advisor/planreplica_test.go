package advisor

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func same(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }

func steady(rate float64) []result.LogRate {
	return []result.LogRate{{Mean: rate, Peak: rate, Source: "assumed"}}
}

// TestReplicaCaseArithmetic: the verdicts and their arithmetic, on the
// field cases and the testbed's.
func TestReplicaCaseArithmetic(t *testing.T) {
	cases := []struct {
		name                    string
		mean, peak, capacity    float64
		peakFor                 time.Duration
		verdict                 string
		growth, growthMean, rpo float64
		rpoSeconds              float64
		catchUp                 float64 // -1: never
		headMean, headPeak      float64
	}{
		// Field note 003: 7.1 MB/s of log against 2.2 MB/s for one stream.
		{"continents", 7.1e6, 7.1e6, 2.2e6, 10 * time.Minute, result.VerdictFallsBehind, 4.9e6, 4.9e6, 4.9e6 * 600, 4.9e6 * 600 / 7.1e6, -1, 2.2 / 7.1, 2.2 / 7.1},
		// Field note 001: 28 MB/s per thread; 20 MB/s of log, peaks of 35.
		{"one thread at 28 MB/s", 20e6, 35e6, 28e6, 10 * time.Minute, result.VerdictFallsBehindAtPeak, 7e6, 0, 4.2e9, 120, 4.2e9 / 8e6, 1.4, 0.8},
		// Experiment 3: 2 MB/s on a line one stream fills at 11.8 MB/s.
		{"keeping up", 2e6, 2e6, 11.8e6, 10 * time.Minute, result.VerdictKeepsUp, 0, 0, 0, 0, 0, 5.9, 5.9},
		// Experiment 2: 5 MB/s against a window-bound 1.92 MB/s.
		{"falling behind", 5e6, 5e6, 1.92e6, time.Minute, result.VerdictFallsBehind, 3.08e6, 3.08e6, 3.08e6 * 60, 3.08e6 * 60 / 5e6, -1, 0.384, 0.384},
		// Exactly at capacity keeps up.
		{"at capacity", 2e6, 3e6, 3e6, time.Minute, result.VerdictKeepsUp, 0, 0, 0, 0, 0, 1.5, 1},
		// The mean at capacity: the peak's queue never drains.
		{"mean at capacity", 3e6, 4e6, 3e6, time.Minute, result.VerdictFallsBehindAtPeak, 1e6, 0, 60e6, 15, -1, 1, 0.75},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ReplicaCase("", c.mean, c.peak, c.capacity, c.peakFor)
			if got.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s", got.Verdict, c.verdict)
			}
			if !same(got.Growth, c.growth) || !same(got.GrowthMean, c.growthMean) {
				t.Errorf("growth %v (at mean %v), want %v (%v)", got.Growth, got.GrowthMean, c.growth, c.growthMean)
			}
			if !same(float64(got.RPOBytes), math.Round(c.rpo)) || !same(got.RPOSeconds, c.rpoSeconds) {
				t.Errorf("RPO %d B = %v s, want %.0f B = %v s", got.RPOBytes, got.RPOSeconds, c.rpo, c.rpoSeconds)
			}
			switch {
			case c.catchUp < 0 && (!got.CatchUpNever || got.CatchUp != nil):
				t.Errorf("catch-up %v (never %v), want never", got.CatchUp, got.CatchUpNever)
			case c.catchUp >= 0 && (got.CatchUp == nil || !same(*got.CatchUp, c.catchUp)):
				t.Errorf("catch-up %v, want %v s", got.CatchUp, c.catchUp)
			}
			if !same(*got.HeadroomMean, c.headMean) || !same(*got.HeadroomPeak, c.headPeak) {
				t.Errorf("headroom %v / %v, want %v / %v", *got.HeadroomMean, *got.HeadroomPeak, c.headMean, c.headPeak)
			}
		})
	}
	// No log at all: no headroom to speak of, nothing to send.
	if c := ReplicaCase("", 0, 0, 1e6, time.Minute); c.HeadroomMean != nil || c.HeadroomPeak != nil || c.Verdict != result.VerdictKeepsUp {
		t.Errorf("an idle primary: %+v", c)
	}
}

// TestReplicaWhatIfRTT: the capacity at another RTT is the least of the
// window bound (window ÷ RTT), the loss bound (Mathis et al.) and the
// link (unchanged), with the window chosen by what held the stream.
func TestReplicaWhatIfRTT(t *testing.T) {
	windowBound := result.ReplicaStream{Capacity: 3.9e6, LimitedBy: result.LimitWindow, RTT: result.Seconds(20300 * time.Microsecond),
		MinRTT: result.Seconds(20 * time.Millisecond), PeerWindow: 81920, MSS: 1448, ReceiverRmemMax: 131072, SenderWmemMax: 4 << 20}
	linkBound := result.ReplicaStream{Capacity: 11.8e6, LimitedBy: result.LimitLink, RTT: result.Seconds(41 * time.Millisecond),
		MinRTT: result.Seconds(40 * time.Millisecond), PeerWindow: 1 << 20, MSS: 1448, ReceiverRmemMax: 6 << 20, SenderWmemMax: 4 << 20}
	lossy := result.ReplicaStream{Capacity: 1e6, LimitedBy: result.LimitLoss, RTT: result.Seconds(40 * time.Millisecond), MSS: 1448,
		Retransmits: 50, RetransRatio: 0.001, PeerWindow: 1 << 20}
	selfLoss := linkBound
	selfLoss.Retransmits, selfLoss.RetransRatio = 200, 0.001
	unknownBuffers := linkBound
	unknownBuffers.ReceiverRmemMax, unknownBuffers.SenderWmemMax = 0, 0
	windowsReplica := unknownBuffers
	windowsReplica.ReceiverOS, windowsReplica.SenderWmemMax = "windows", 64<<20
	noTCP := result.ReplicaStream{Capacity: 2e6, LimitedBy: result.LimitUnknown, RTT: result.Seconds(40 * time.Millisecond)}
	// A stream one core's packet work held (7 Gbit/s on a sub-ms path):
	// at 2 ms the core still holds it, not the window autotuning allows.
	coreBound := result.ReplicaStream{Capacity: 875e6, LimitedBy: result.LimitCore, RTT: result.Seconds(200 * time.Microsecond),
		MinRTT: result.Seconds(150 * time.Microsecond), PeerWindow: 6 << 20, MSS: 1448, ReceiverRmemMax: 6 << 20, SenderWmemMax: 4 << 20}
	cases := []struct {
		name     string
		s        result.ReplicaStream
		rtt      time.Duration
		capacity float64
		limit    string
		window   int64
		from     string
	}{
		{"window-bound at 20 ms, to 80 ms", windowBound, 80 * time.Millisecond, 81920 / 0.08, result.LimitWindow, 81920, "the window the stream had"},
		{"window-bound, to 10 ms (no link measured)", windowBound, 10 * time.Millisecond, 81920 / 0.01, result.LimitWindow, 81920, "the window the stream had"},
		{"link-bound, to 80 ms: the link still", linkBound, 80 * time.Millisecond, 11.8e6, result.LimitLink, 2 << 20, "tcp_wmem"},
		{"link-bound, to 200 ms: the sender's buffer", linkBound, 200 * time.Millisecond, float64(2<<20) / 0.2, result.LimitWindow, 2 << 20, "tcp_wmem"},
		{"loss-bound at 40 ms, to 80 ms", lossy, 80 * time.Millisecond, 1448 / (0.08 * math.Sqrt(0.001)) * MathisC, result.LimitLoss, 2 << 20, "tcp_wmem"},
		{"losses the stream beat: not applied", selfLoss, 80 * time.Millisecond, 11.8e6, result.LimitLink, 2 << 20, ""},
		{"buffers not told: Linux defaults", unknownBuffers, 300 * time.Millisecond, float64(2<<20) / 0.3, result.LimitWindow, 2 << 20, "Linux default tcp_wmem"},
		{"a Windows replica: auto-tuning normal", windowsReplica, 2 * time.Second, float64(WindowsNormal) / 2, result.LimitWindow, WindowsNormal, "normal"},
		{"core-bound, to 2 ms: the core still", coreBound, 2 * time.Millisecond, 875e6, result.LimitCore, 2 << 20, "tcp_wmem"},
		{"nothing known: what it had in flight", noTCP, 80 * time.Millisecond, 80000 / 0.08, result.LimitWindow, 80000, "in flight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanReplica(ReplicaInput{Log: steady(1e6), Stream: c.s, RTT: c.rtt, LogFactor: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.WhatIfs) != 1 {
				t.Fatalf("%d what-ifs, want the RTT's: %v", len(p.WhatIfs), p.Notes)
			}
			w := p.WhatIfs[0]
			if math.Abs(w.Capacity/c.capacity-1) > 0.001 || w.LimitedBy != c.limit {
				t.Errorf("capacity %.0f B/s limited by %s, want %.0f by %s; bounds %+v", w.Capacity, w.LimitedBy, c.capacity, c.limit, w.Bounds)
			}
			if w.Window != c.window || !strings.Contains(w.WindowFrom, c.from) {
				t.Errorf("window %d (%s), want %d (%q)", w.Window, w.WindowFrom, c.window, c.from)
			}
			for _, b := range w.Bounds {
				want := map[string]string{result.LimitWindow: "window ÷ RTT", result.LimitLoss: "MSS ÷ (RTT × √p) × C", result.LimitLink: "unchanged",
					result.LimitCore: "core: unchanged, one core's packet work at an end held it"}[b.Limit]
				if !strings.Contains(b.Formula, want) {
					t.Errorf("%s bound's formula %q does not say %q", b.Limit, b.Formula, want)
				}
			}
			if c.name == "losses the stream beat: not applied" && (len(w.Bounds) < 2 || w.Bounds[1].Applies || !strings.Contains(w.Bounds[1].Formula, "not applied")) {
				t.Errorf("the loss bound the stream beat was applied: %+v", w.Bounds)
			}
			if len(w.Cases) != 1 || w.Cases[0].Capacity != w.Capacity {
				t.Errorf("cases %+v", w.Cases)
			}
		})
	}
	// No RTT known: no what-if, a note that says what to give.
	p, err := PlanReplica(ReplicaInput{Log: steady(1e6), Stream: result.ReplicaStream{Capacity: 2e6}, RTT: 80 * time.Millisecond, LogFactor: 1})
	if err != nil || len(p.WhatIfs) != 0 || !strings.Contains(strings.Join(p.Notes, " "), "--assume rtt=") {
		t.Errorf("no RTT: %v, what-ifs %v, notes %v", err, p.WhatIfs, p.Notes)
	}
}

// TestReplicaPlan: the whole plan: verdicts, the link for several
// databases, the window and its settings, the doubled log.
func TestReplicaPlan(t *testing.T) {
	stream := result.ReplicaStream{Capacity: 1.92e6, LimitedBy: result.LimitWindow, RTT: result.Seconds(40300 * time.Microsecond),
		MinRTT: result.Seconds(40 * time.Millisecond), PeerWindow: 81920, ReceiverRmemMax: 131072, SenderWmemMax: 4 << 20}
	p, err := PlanReplica(ReplicaInput{Engine: "postgres", Log: []result.LogRate{{Mean: 1.2e6, Peak: 5.4e6}}, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	if p.Verdict != result.VerdictFallsBehindAtPeak || p.PeakDuration.D() != DefaultPeak {
		t.Fatalf("verdict %s over %v", p.Verdict, p.PeakDuration.D())
	}
	c := p.Cases[0]
	if !same(c.Growth, 3.48e6) || c.RPOBytes != int64(3.48e6*600) || !same(*c.CatchUp, 3.48e6*600/0.72e6) {
		t.Errorf("growth %v, RPO %d, catch-up %v", c.Growth, c.RPOBytes, *c.CatchUp)
	}
	// The window: 5.4 MB/s × 40 ms = 216,000 B in flight, × 1.25 = 270,000,
	// ÷ 0.5 = 540,000 B of buffer, rounded up to 64 KiB: 589,824.
	w := p.Window
	if w.BDP != 216000 || w.Needed != 270000 || w.Buffer != 589824 {
		t.Errorf("window: BDP %d, needed %d, buffer %d", w.BDP, w.Needed, w.Buffer)
	}
	// The replica's 128 KiB is raised (its min and default, not told,
	// kept by the command); the primary's 4 MiB is enough: no command.
	if len(w.Tuning) != 2 || w.Tuning[0].Status != result.TuningRaise ||
		w.Tuning[0].Command != `sysctl -w net.ipv4.tcp_rmem="$(cut -f1,2 /proc/sys/net/ipv4/tcp_rmem) 6291456"` ||
		w.Tuning[1].Status != result.TuningEnough || w.Tuning[1].Command != "" || w.WindowsLevel != "normal" {
		t.Errorf("settings %+v, Windows %q", w.Tuning, w.WindowsLevel)
	}
	if w.ReceiverEnough == nil || *w.ReceiverEnough || w.SenderEnough == nil || !*w.SenderEnough {
		t.Errorf("enough: receiver %v, sender %v", w.ReceiverEnough, w.SenderEnough)
	}
	// The doubled log is the default what-if; no --rtt, no RTT what-if.
	if len(p.WhatIfs) != 1 || p.WhatIfs[0].LogFactor != 2 || p.WhatIfs[0].Cases[0].Peak != 10.8e6 || p.WhatIfs[0].Verdict != result.VerdictFallsBehind {
		t.Errorf("what-ifs %+v", p.WhatIfs)
	}
	f := Advise(&result.Report{ReplicaPlan: &p})
	codes := ""
	for _, x := range f {
		codes += x.Code + " "
	}
	for _, want := range []string{"plan.replica_falls_behind_at_peak", "plan.replica_window", "plan.replica_log_factor"} {
		if !strings.Contains(codes, want) {
			t.Errorf("findings %s lack %s", codes, want)
		}
	}
	if !strings.Contains(f[1].Detail, "the replica's host allows 128 KiB") {
		t.Errorf("the window finding does not name the small buffer: %+v", f[1])
	}

	// Big windows: Windows' levels and a buffer above Linux's default.
	// Never a level that caps the window (disabled: 64 KiB).
	if WindowsLevel(65535) != "normal" || WindowsLevel(1e6) != "normal" || WindowsLevel(16<<20) != "experimental" || WindowsLevel(20<<20) != "experimental" {
		t.Error("WindowsLevel")
	}
	big, _ := PlanReplica(ReplicaInput{Log: steady(100e6), Stream: result.ReplicaStream{Capacity: 1e9, MinRTT: result.Seconds(80 * time.Millisecond),
		ReceiverRmemMax: 6 << 20, ReceiverRmemLow: []int64{4096, 131072}, ReceiverOS: "linux"}})
	if big.Window.Buffer != 20<<20 || big.Window.Tuning[0].Command != `sysctl -w net.ipv4.tcp_rmem="4096 131072 20971520"` || big.Window.WindowsLevel != "normal" {
		t.Errorf("100 MB/s at 80 ms: %+v", big.Window)
	}
}

// TestReplicaSQLServer: one stream per database, and their sum against
// the link, the sum's peak taken from the same intervals.
func TestReplicaSQLServer(t *testing.T) {
	sec := result.Seconds(time.Second)
	logs := []result.LogRate{
		{Database: "Sales", Mean: 4e6, Peak: 6e6, Samples: []float64{2e6, 6e6, 4e6}, Interval: sec},
		{Database: "HR", Mean: 3e6, Peak: 5e6, Samples: []float64{5e6, 2e6, 2e6}, Interval: sec},
	}
	stream := result.ReplicaStream{Capacity: 6.5e6, LimitedBy: result.LimitWindow, MinRTT: result.Seconds(20 * time.Millisecond), Link: 7.5e6, LinkStreams: 4}
	cases := []struct {
		name                 string
		link                 float64
		verdict, linkVerdict string
	}{
		{"the link holds both", 12e6, result.VerdictKeepsUp, result.VerdictKeepsUp},
		// Together the peak is 8 MB/s (2+5, 6+2, 4+2), not 6 + 5; the mean 7.
		{"the link at the sum's peak", 8e6, result.VerdictKeepsUp, result.VerdictKeepsUp},
		// N streams below one stream's 6.5 MB/s: the link is at least that.
		{"the link below the sum's mean", 6e6, result.VerdictFallsBehind, result.VerdictFallsBehind},
		{"the link between mean and peak", 7.5e6, result.VerdictFallsBehindAtPeak, result.VerdictFallsBehindAtPeak},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := stream
			s.Link = c.link
			p, err := PlanReplica(ReplicaInput{Engine: "sqlserver", Log: logs, Stream: s, LogFactor: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Cases) != 2 || p.Cases[0].Database != "Sales" || p.Cases[0].Verdict != result.VerdictKeepsUp {
				t.Fatalf("cases %+v", p.Cases)
			}
			if p.Link == nil || p.Link.Peak != 8e6 || p.Link.Mean != 7e6 || p.Link.Capacity != max(c.link, 6.5e6) {
				t.Fatalf("link %+v", p.Link)
			}
			if p.Link.Verdict != c.linkVerdict || p.Verdict != c.verdict {
				t.Errorf("link %s, plan %s; want %s, %s", p.Link.Verdict, p.Verdict, c.linkVerdict, c.verdict)
			}
		})
	}
	// Without samples in step, the sum of the peaks.
	unaligned := []result.LogRate{{Database: "A", Mean: 1e6, Peak: 2e6}, {Database: "B", Mean: 1e6, Peak: 3e6}}
	p, _ := PlanReplica(ReplicaInput{Log: unaligned, Stream: stream, LogFactor: 1})
	if p.Link == nil || p.Link.Peak != 5e6 {
		t.Errorf("link %+v, want the sum of the peaks", p.Link)
	}
	// The link not measured: said, not guessed.
	s := stream
	s.Link = 0
	p, _ = PlanReplica(ReplicaInput{Log: unaligned, Stream: s, LogFactor: 1})
	if p.Link != nil || !strings.Contains(strings.Join(p.Notes, " "), "link was not measured") {
		t.Errorf("link %+v, notes %v", p.Link, p.Notes)
	}
}

func TestReplicaPlanRefuses(t *testing.T) {
	for _, in := range []ReplicaInput{
		{Stream: result.ReplicaStream{Capacity: 1e6}},
		{Log: steady(1e6)},
		{Log: steady(math.Inf(1)), Stream: result.ReplicaStream{Capacity: 1e6}},
		{Log: steady(1e6), Stream: result.ReplicaStream{Capacity: math.NaN()}},
	} {
		if _, err := PlanReplica(in); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
}

// TestReplicaStreamOf reads a net stream run the way the plan needs it.
func TestReplicaStreamOf(t *testing.T) {
	tcp := &result.TCPSummary{RTT: result.Seconds(40 * time.Millisecond), MinRTT: result.Seconds(39 * time.Millisecond), MSSBytes: 1448,
		SndWndBytes: 81920, RwndLimited: 0.9, BDPBytes: 80000}
	s := &result.Stream{Runs: []result.StreamRun{
		{Phase: result.PhaseSingle, Direction: "reverse", Streams: 1, Throughput: 80e6, TCP: tcp},
		{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: 16e6, TCP: tcp},
		{Phase: result.PhaseParallel, Direction: "forward", Streams: 4, Throughput: 64e6},
	}, Buffers: &result.StreamBuffers{ClientWmemMax: 4 << 20, AgentRmemMax: 131072, AgentOS: "linux"}}
	r := ReplicaStreamOf(s, "measured")
	if r == nil || r.Capacity != 2e6 || r.LimitedBy != result.LimitWindow || r.PeerWindow != 81920 || r.Link != 8e6 || r.LinkStreams != 4 ||
		r.ReceiverRmemMax != 131072 || r.SenderWmemMax != 4<<20 || r.ReceiverOS != "linux" {
		t.Fatalf("%+v", r)
	}
	if ReplicaStreamOf(&result.Stream{}, "x") != nil {
		t.Error("an empty run gave a stream")
	}
}

// TestReplicaCannotJudge: a watch of a primary that wrote almost no log
// (or a rate of 0 given by hand) is no ground for a verdict: the plan
// says it cannot judge, what the primary wrote and what to run instead,
// and nothing else; no sentence prints a word for an infinite margin.
// A rate given by hand above 0, or a watch at IdleLogPeak, is judged.
func TestReplicaCannotJudge(t *testing.T) {
	stream := result.ReplicaStream{Capacity: 35.9e6, LimitedBy: result.LimitLink, MinRTT: result.Seconds(8 * time.Millisecond)}
	idle := []result.LogRate{{Mean: 400, Peak: 900, Bytes: 24000, Watch: result.Seconds(60 * time.Second), Source: "measured"}}
	cases := []struct {
		name    string
		log     []result.LogRate
		verdict string
		say     []string
	}{
		{"idle watch", idle, result.VerdictCannotJudge, []string{"Cannot judge: the primary wrote only 24 kB of log in 60.0 s (its busiest second 900 B/s, under 16 kB/s)", "run plan replica while the workload runs", "--log-rate MEAN,PEAK"}},
		{"nothing written", []result.LogRate{{Source: "measured", Watch: result.Seconds(60 * time.Second)}}, result.VerdictCannotJudge, []string{"Cannot judge: the primary wrote only 0 B of log"}},
		{"idle, from a saved run", []result.LogRate{{Mean: 400, Peak: 900, Source: "measured (run.jsonl)"}}, result.VerdictCannotJudge, []string{"Cannot judge: the primary wrote log at"}},
		{"0 given", []result.LogRate{{Source: "assumed"}}, result.VerdictCannotJudge, []string{"Cannot judge: a log rate of 0 was given"}},
		{"just busy enough", []result.LogRate{{Mean: 8000, Peak: IdleLogPeak, Source: "measured"}}, result.VerdictKeepsUp, []string{"keeps up", "× the peak of"}},
		{"small, given by hand", []result.LogRate{{Mean: 1000, Peak: 2000, Source: "assumed"}}, result.VerdictKeepsUp, []string{"keeps up"}},
		{"a mean of 0 given by hand", []result.LogRate{{Mean: 0, Peak: 5e6, Source: "assumed"}}, result.VerdictKeepsUp, []string{"7.18× the peak of 5 MB/s."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanReplica(ReplicaInput{Engine: "postgres", Log: c.log, Stream: stream, RTT: 80 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if p.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s", p.Verdict, c.verdict)
			}
			f := Advise(&result.Report{ReplicaPlan: &p})
			var all strings.Builder
			for _, x := range f {
				all.WriteString(x.Code + ": " + x.Summary + " " + x.Detail + "\n")
			}
			for _, w := range c.say {
				if !strings.Contains(all.String(), w) {
					t.Errorf("findings lack %q:\n%s", w, all.String())
				}
			}
			if strings.Contains(all.String(), "any") || strings.Contains(all.String(), "Inf") || strings.Contains(all.String(), "NaN") {
				t.Errorf("a margin in words for infinity:\n%s", all.String())
			}
			if c.verdict == result.VerdictCannotJudge {
				if len(f) != 1 || f[0].Code != "plan.replica_cannot_judge" || len(p.WhatIfs) != 0 || p.Window.BDP != 0 {
					t.Errorf("want the one cannot-judge finding, no what-if, no window:\n%s", all.String())
				}
			}
		})
	}
}

// TestReplicaWindowNeverLowers: the printed tcp_rmem/tcp_wmem never set a
// maximum below the host's own, and none is printed where the host's is
// enough (issue 25, defect 1: 32 MiB cut to 6 MiB).
func TestReplicaWindowNeverLowers(t *testing.T) {
	cases := []result.ReplicaCase{{Peak: 1e6}}
	for _, c := range []struct {
		rmem, wmem         int64
		wantRmem, wantWmem string // the command, "" none
	}{
		{32 << 20, 64 << 20, "", ""},
		{128 << 10, 0, `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`, ""},
	} {
		w := replicaWindow(cases, result.ReplicaStream{RTT: result.Seconds(80 * time.Millisecond), ReceiverRmemMax: c.rmem, SenderWmemMax: c.wmem,
			ReceiverRmemLow: []int64{4096, 131072}, SenderWmemLow: []int64{4096, 16384}, ReceiverOS: "linux", SenderOS: "linux"})
		if len(w.Tuning) != 2 || w.Tuning[0].Command != c.wantRmem || w.Tuning[1].Command != c.wantWmem {
			t.Errorf("rmem %d, wmem %d: %+v; want %q, %q", c.rmem, c.wmem, w.Tuning, c.wantRmem, c.wantWmem)
		}
		for _, x := range w.Tuning {
			if err := CheckTuning(x); err != nil {
				t.Error(err)
			}
		}
	}
}
