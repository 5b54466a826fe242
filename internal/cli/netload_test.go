package cli_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// TestNetRRUnderLoad: each load direction runs both phases on loopback,
// and the summary's figures hold together: round trips in each phase,
// the loaded connections' RTT sampled, the load's throughput, and the
// responsiveness the draft's formula gives for the reported parts.
func TestNetRRUnderLoad(t *testing.T) {
	a := itest.StartAgent(t, nil)
	env := map[string]string{"NARROWS_SECRET": itest.Secret}
	// Both ways at once: the client's senders and the agent's, each
	// direction's TCP state read at its own end.
	for _, dir := range []string{"both"} {
		t.Run(dir, func(t *testing.T) {
			out, errOut, code := run(t, env, "net", "rr", "--to", a.Addr, "--under-load", "--load-direction", dir, "--load-streams", "2",
				"--duration", "1500ms", "--warmup", "300ms", "--interval", "500ms", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var rep result.Report
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.Loaded == nil {
				t.Fatalf("no under-load summary (%v): %s", err, out)
			}
			l := rep.Loaded
			phases := map[string]int{}
			for _, line := range lines[:len(lines)-1] {
				var iv result.Interval
				if json.Unmarshal([]byte(line), &iv) == nil && iv.Type == result.TypeInterval {
					phases[iv.Phase]++
				}
			}
			if phases["idle"] == 0 || phases["loaded"] == 0 {
				t.Errorf("interval records by phase: %v, want both idle and loaded", phases)
			}
			if l.Config.Direction != dir || l.Config.Streams != 2 || l.Idle.RoundTrips == 0 || l.Loaded.RoundTrips == 0 {
				t.Fatalf("phases: %+v", l)
			}
			if l.Throughput <= 0 || l.SelfSamples == 0 || l.Self <= 0 || l.Handshake <= 0 {
				t.Errorf("the load: %s, self %v (%d samples), handshake %v", metric.FormatBitRate(l.Throughput), l.Self.D(), l.SelfSamples, l.Handshake.D())
			}
			if want := metric.Responsiveness(l.Handshake.D(), l.Loaded.Trimmed.D(), l.Self.D()); math.Abs(l.Responsiveness-want) > 1e-6*want || want <= 0 {
				t.Errorf("responsiveness %v RPM, the formula gives %v from the parts reported", l.Responsiveness, want)
			}
			if l.Rise != l.Loaded.P50-l.Idle.P50 || l.Idle.Trimmed > l.Idle.Max || l.Loaded.Trimmed > l.Loaded.Max {
				t.Errorf("rise %v from p50s %v and %v; trimmed means %v, %v", l.Rise, l.Loaded.P50, l.Idle.P50, l.Idle.Trimmed, l.Loaded.Trimmed)
			}
			if len(rep.Findings) == 0 || !strings.HasPrefix(rep.Findings[0].Code, "rr.") {
				t.Errorf("findings %+v, want the under-load verdict", rep.Findings)
			}
		})
	}
}

// TestNetRRUnderLoadRefused: an agent that runs one test at a time cannot
// carry the load and the round trips: refused in words, exit 2.
func TestNetRRUnderLoadRefused(t *testing.T) {
	a := itest.StartAgent(t, []string{"--max-tests", "1"})
	_, errOut, code := run(t, map[string]string{"NARROWS_SECRET": itest.Secret}, "net", "rr", "--to", a.Addr, "--under-load", "--duration", "1s")
	if code != 2 || !strings.Contains(errOut, "its --max-tests") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, %q: want 2 and one line naming --max-tests", code, errOut)
	}
}
