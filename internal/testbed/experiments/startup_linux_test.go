//go:build linux

package experiments

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
)

// Issue 25 §2 defect 2: on a clean 30 ms, 300 Mbit/s line whose router
// queue slow start overflows, every retransmit falls in the first seconds
// and N streams carry no more than one: the link is the limit, not loss.
// The same line with random loss keeps retransmitting through the steady
// state and N streams carry more: that is loss. narrows must tell the two
// apart.

// startupStream is one `net stream --streams 4` run as read here.
type startupStream struct {
	codes     []string
	summaries map[string]string
	retrans   int64   // the single stream's retransmits
	ratio     float64 // its share of bytes sent again
	startup   int64   // its retransmits in the start-up, as narrows splits them
	steadyIvs int     // steady-state intervals, and those with retransmits
	lossIvs   int
	single    float64 // bit/s
	agg       float64 // N streams, bit/s
	perIv     []string
}

func runStartupStream(t *testing.T, l *testbed.DelayLine, d time.Duration) startupStream {
	t.Helper()
	args := []string{"net", "stream", "--to", agentAddr(l), "--duration", d.String(), "--streams", "4", "--json"}
	res := runOnA(t, l, 2*d+time.Minute, args...)
	ivs, sum := itest.Records(t, res.Stdout)
	s := startupStream{summaries: map[string]string{}}
	for _, f := range sum["findings"].([]any) {
		m := f.(map[string]any)
		c, _ := m["code"].(string)
		s.codes = append(s.codes, c)
		s.summaries[c], _ = m["summary"].(string)
	}
	st := itest.Obj(sum, "stream")
	for _, r := range st["runs"].([]any) {
		run := r.(map[string]any)
		if run["phase"] != "single" {
			s.agg = jnum(run, "throughput_bits_per_second")
			continue
		}
		s.single = jnum(run, "throughput_bits_per_second")
		tcp := itest.Obj(run, "tcp")
		s.retrans, s.ratio = int64(jnum(tcp, "retransmits")), jnum(tcp, "retransmit_ratio")
		s.startup = int64(jnum(tcp, "startup_retransmits"))
		s.steadyIvs, s.lossIvs = int(jnum(tcp, "steady_intervals")), int(jnum(tcp, "steady_intervals_with_retransmits"))
	}
	for _, iv := range ivs {
		if iv["phase"] != "single" {
			continue
		}
		s.perIv = append(s.perIv, fmt.Sprintf("%.0f-%.0fs %.0f Mbit/s %.0f retr", jnum(iv, "start_seconds"), jnum(iv, "end_seconds"),
			jnum(iv, "throughput_bits_per_second")/1e6, jnum(itest.Obj(iv, "tcp"), "retransmits")))
	}
	t.Logf("one stream %.1f Mbit/s, %d retransmits (%.2f%% of bytes), %d in the start-up, steady intervals %d (%d with retransmits); 4 streams %.1f Mbit/s (%.2f×); codes %v",
		s.single/1e6, s.retrans, 100*s.ratio, s.startup, s.steadyIvs, s.lossIvs, s.agg/1e6, s.agg/s.single, s.codes)
	t.Logf("intervals: %s", strings.Join(s.perIv, "; "))
	for _, c := range []string{"stream.loss_limited", "stream.link_limited", "stream.per_stream_limited", "stream.parallel_comparison"} {
		if v, ok := s.summaries[c]; ok {
			t.Logf("%s: %s", c, v)
		}
	}
	return s
}

func startupLine(t *testing.T, loss float64, cc string) *testbed.DelayLine {
	t.Helper()
	// The default queue (50 ms at the rate, 1.9 MB) is over the path's
	// 1.1 MB BDP: slow start, doubling per round trip (BBR's start-up
	// nearly triples), overflows it all the same.
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 300e6, Loss: loss})
	for _, h := range l.Hosts() {
		setCC(t, h, cc)
	}
	startAgent(t, l)
	return l
}

func startupDuration() time.Duration {
	if long() {
		return 10 * time.Second
	}
	return 8 * time.Second
}

// TestStreamStartupOverflow: a clean line, with a sender that backs off
// at loss (reno) and one that paces (bbr): the start-up overflow is not
// called loss, and one stream is link-limited.
func TestStreamStartupOverflow(t *testing.T) {
	setUp(t, 0)
	for _, cc := range []string{"reno", "bbr"} {
		run(t, cc, 2, func(t *testing.T) {
			l := startupLine(t, 0, cc)
			before := l.Stats()
			s := runStartupStream(t, l, startupDuration())
			after := l.Stats()
			t.Logf("line: %s; %s", lineRecord(before, after), drops(before.AtoB, after.AtoB))
			l.Close()
			if slices.Contains(s.codes, "stream.loss_limited") {
				t.Errorf("a clean line called loss-limited: %s", s.summaries["stream.loss_limited"])
			}
			if !slices.Contains(s.codes, "stream.link_limited") {
				t.Errorf("a clean line whose one stream 4 streams did not outrun (%.2f×): want stream.link_limited, got %v", s.agg/s.single, s.codes)
			}
			if c := s.summaries["stream.parallel_comparison"]; strings.Contains(c, "room") {
				t.Errorf("the comparison contradicts a link-limited verdict: %s", c)
			}
			if s.retrans > 0 && s.steadyIvs == 0 {
				t.Errorf("%d retransmits, and the run was not split into start-up and steady state", s.retrans)
			}
		})
	}
}

// TestStreamRandomLoss: the same line with random loss. A sender that
// backs off at loss (reno) is held by it, and 4 streams carry more: loss-
// limited. A sender that paces past it (bbr) still fills the line, and 4
// streams carry no more: link-limited, whatever was sent again.
func TestStreamRandomLoss(t *testing.T) {
	setUp(t, 0)
	for _, tc := range []struct {
		cc   string
		loss float64
		want string
	}{{"reno", 0.001, "stream.loss_limited"}, {"reno", 0.01, "stream.loss_limited"}, {"bbr", 0.01, "stream.link_limited"}} {
		run(t, fmt.Sprintf("%s/loss=%g", tc.cc, tc.loss), 2, func(t *testing.T) {
			l := startupLine(t, tc.loss, tc.cc)
			before := l.Stats()
			// A loss-held stream is slow and loses few packets per second:
			// longer, for steady intervals enough to tell loss that goes on.
			s := runStartupStream(t, l, startupDuration()*3/2)
			after := l.Stats()
			t.Logf("line: %s; %s", lineRecord(before, after), drops(before.AtoB, after.AtoB))
			l.Close()
			if !slices.Contains(s.codes, tc.want) {
				t.Errorf("%s, %.1f%% random loss: want %s, got %v", tc.cc, 100*tc.loss, tc.want, s.codes)
			}
			for _, not := range []string{"stream.loss_limited", "stream.link_limited"} {
				if not != tc.want && slices.Contains(s.codes, not) {
					t.Errorf("%s, %.1f%% random loss called %s: %s", tc.cc, 100*tc.loss, not, s.summaries[not])
				}
			}
			room := strings.Contains(s.summaries["stream.parallel_comparison"], "room")
			if room != (tc.want == "stream.loss_limited") {
				t.Errorf("the comparison disagrees with %s: %s", tc.want, s.summaries["stream.parallel_comparison"])
			}
		})
	}
}

// drops is what the line dropped A→B between two snapshots, and why: the
// truth the verdicts are held to (random loss, or a full router queue).
func drops(b, a testbed.PathStats) string {
	return fmt.Sprintf("A→B dropped %d at random, %d at the full queue, %d over the held bound",
		a.DroppedLoss-b.DroppedLoss, a.DroppedQueue-b.DroppedQueue, a.DroppedHeld-b.DroppedHeld)
}
