package words

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestEveryStageHasWords: each bottleneck a plan can name has words of its
// own, not its JSON code, and a list of them reads as a DBA says it.
func TestEveryStageHasWords(t *testing.T) {
	seen := map[string]string{}
	for _, st := range []string{result.StageSourceDisk, result.StageNetwork, result.StageTargetDisk, result.StageCompress,
		result.StageDecompress, result.StageUnmeasured, result.StageCannotJudge} {
		w := Stage(st)
		if w == st || strings.Contains(w, "_") {
			t.Errorf("stage %q has no words of its own: %q", st, w)
		}
		if other, ok := seen[w]; ok {
			t.Errorf("stages %q and %q both read %q", other, st, w)
		}
		seen[w] = st
	}
	if got, want := Stages(result.StageNetwork, []string{result.StageCompress, result.StageTargetDisk}),
		"the network, compression (CPU) or the backup host's disk"; got != want {
		t.Errorf("Stages = %q, want %q", got, want)
	}
	for _, e := range []string{result.SyncPostgres, result.SyncSQLServer, result.SyncMySQL} {
		if SyncEngine(e) == e {
			t.Errorf("engine %q has no name of its own", e)
		}
	}
	for _, e := range []string{"postgres", "mysql", "sqlserver"} {
		if w := ReplOf(e); w.Unsent == "" || w.Unreplayed == "" || w.Verdict(result.VerdictSendQueue) == result.VerdictSendQueue {
			t.Errorf("engine %q: replication words %+v", e, w)
		}
	}
}

// TestEveryPartHasAnArea: every kind of part a Report can carry is filed
// under an area of the report.
func TestEveryPartHasAnArea(t *testing.T) {
	for _, p := range result.Parts() {
		if _, ok := areas[p.Kind()]; !ok {
			t.Errorf("a %s has no area: add it to areas", p.Kind())
		}
	}
}

// TestLimitWords: every limit a stream verdict or a replica plan can
// name has words of its own ("loss" is its code and its word).
func TestLimitWords(t *testing.T) {
	for _, l := range []string{result.LimitWindow, result.LimitLink, result.LimitLoss, result.LimitCPU, result.LimitCore,
		result.LimitHost, result.LimitPerStream, result.LimitUnknown} {
		if _, ok := limitWords[l]; !ok || Limit(l) == "" {
			t.Errorf("limit %q has no words of its own", l)
		}
	}
	if Limit("new") != "new" {
		t.Error("an unknown limit is not said as it is")
	}
}

func TestNICKind(t *testing.T) {
	for d, want := range map[string]string{"virtio_net": "paravirtual", "vmxnet3": "VMware", "hv_netvsc": "Hyper-V", "veth": "inside this host", "bonding": "one member", "ixgbe": "", "": ""} {
		if got := NICKind(d); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("NICKind(%q) = %q, want it to say %q", d, got, want)
		}
	}
}
