//go:build linux

package experiments

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// Issue 17's path-MTU proof: a black hole made on the delay line (packets
// over 1400 bytes dropped toward the agent, without a word) is found and
// named at 1400 exactly, in that direction only; two hosts whose devices
// disagree (9000 and 1500) are named a mismatch; a clean 1500-byte path is
// 1500 both ways.

func netMTU(t *testing.T, a, b *testbed.Host) *result.Report {
	t.Helper()
	res := runOn(t, a, time.Minute, "net", "mtu", "--to", agentAt(b), "--json")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	var rep result.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.MTU == nil {
		t.Fatalf("narrows net mtu: no summary (%v):\n%s", err, res.Stdout)
	}
	t.Logf("%s", res.Stdout)
	return &rep
}

func direction(t *testing.T, m *result.MTU, dir string) result.MTUDirection {
	t.Helper()
	for _, d := range m.Directions {
		if d.Direction == dir {
			return d
		}
	}
	t.Fatalf("no %s direction in %+v", dir, m.Directions)
	return result.MTUDirection{}
}

func codes(rep *result.Report) string {
	var c []string
	for _, f := range rep.Findings {
		c = append(c, f.Code)
	}
	return strings.Join(c, " ")
}

func TestMTUBlackHoleAndClean(t *testing.T) {
	setUp(t, 1)
	for _, c := range []struct {
		name string
		max  int // packets over it vanish A→B
	}{{"clean", 0}, {"black hole over 1400 toward the agent", 1400}} {
		t.Run(c.name, func(t *testing.T) {
			l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{
				AtoB: &testbed.Path{Delay: time.Millisecond, MaxPacket: c.max},
				BtoA: &testbed.Path{Delay: time.Millisecond}})
			startAgent(t, l)
			rep := netMTU(t, l.A, l.B)
			m := rep.MTU
			down := direction(t, m, result.DirDown)
			if !down.FullSize || down.PathMTU != 1500 || down.BlackHole {
				t.Errorf("down: the agent's 1500-byte packets pass: %+v", down)
			}
			up := direction(t, m, result.DirUp)
			if c.max == 0 {
				if !up.FullSize || up.PathMTU != 1500 || !strings.Contains(codes(rep), "mtu.ok") {
					t.Errorf("a clean path carries 1500 up: %+v, findings %s", up, codes(rep))
				}
				return
			}
			if up.FullSize || !up.BlackHole || up.PathMTU != c.max || up.SmallestFailed != c.max+1 {
				t.Errorf("up: a black hole over %d bytes, found as %+v", c.max, up)
			}
			if !strings.Contains(codes(rep), "mtu.black_hole") {
				t.Errorf("no mtu.black_hole finding: %s", codes(rep))
			}
			st := l.Stats().AtoB
			if st.DroppedTooBig == 0 {
				t.Errorf("the line dropped no packet over %d bytes: %+v", c.max, st)
			}
			t.Logf("up: path MTU %d (edge %d/%d) in %d probes, %v each at most; the line dropped %d oversized packets",
				up.PathMTU, up.LargestPassed, up.SmallestFailed, up.Probes, up.Timeout.D(), st.DroppedTooBig)
		})
	}
}

func TestMTUMismatch(t *testing.T) {
	setUp(t, 1)
	l := testbed.NewTestLink(t, testbed.LinkOptions{MTU: 9000, MTUB: 1500})
	startAgentOn(t, l.B)
	rep := netMTU(t, l.A, l.B)
	m := rep.MTU
	if m.Here.MTU != 9000 || m.Agent.MTU != 1500 || !strings.Contains(codes(rep), "mtu.mismatch") {
		t.Errorf("interfaces %+v / %+v, findings %s: want 9000 here, 1500 there, named a mismatch", m.Here, m.Agent, codes(rep))
	}
	for _, d := range m.Directions {
		// TCP's MSS negotiation holds both ends to the smaller MTU.
		if !d.FullSize || d.PathMTU != 1500 {
			t.Errorf("%s: TCP carries 1500-byte packets across the mismatch: %+v", d.Direction, d)
		}
	}
}
