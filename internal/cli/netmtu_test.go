package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
)

// TestNetMTULoopback: both directions pass at full size on loopback, the
// path MTU is what loopback's interface allows, and the findings say so.
func TestNetMTULoopback(t *testing.T) {
	a := itest.StartAgent(t, nil)
	out, errOut, code := run(t, map[string]string{"NARROWS_SECRET": itest.Secret}, "net", "mtu", "--to", a.Addr, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep result.Report
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); err != nil || rep.MTU == nil {
		t.Fatalf("no mtu summary (%v): %s", err, out)
	}
	m := rep.MTU
	if len(m.Directions) != 2 || m.Here.MTU <= 0 || m.Agent.MTU != m.Here.MTU {
		t.Fatalf("want both directions and the same interface at both ends: %+v", m)
	}
	for _, d := range m.Directions {
		// IPv4 caps a packet at 65,535 bytes whatever lo's 65,536 says.
		if !d.FullSize || d.BlackHole || d.PathMTU != min(m.Here.MTU, 65535) || d.KernelPMTU < d.PathMTU || d.Probes != 1 {
			t.Errorf("%s: %+v", d.Direction, d)
		}
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Code != "mtu.ok" {
		t.Errorf("findings %+v, want mtu.ok alone", rep.Findings)
	}
	table, _, code := run(t, map[string]string{"NARROWS_SECRET": itest.Secret}, "net", "mtu", "--to", a.Addr, "--direction", "down")
	if code != 0 || !strings.Contains(table, "down   passed") || strings.Contains(table, "up     passed") {
		t.Errorf("--direction down: exit %d\n%s", code, table)
	}
}
