package words

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestFleetAnswers: each question answered by the finding that answers
// it, what is wrong before what is well; else by what the run says: not
// asked (and what to give), cannot judge (and why), or the figure.
func TestFleetAnswers(t *testing.T) {
	disk := func(sw *result.FleetSweep, codes ...string) *result.Report {
		r := &result.Report{Fleet: &result.Fleet{Sweep: sw, Hosts: []result.FleetHost{{Disk: &result.Disk{}}, {Disk: &result.Disk{}}}}}
		for _, c := range codes {
			r.Findings = append(r.Findings, result.Finding{Code: c, Summary: c + " said"})
		}
		return r
	}
	net := func(l result.FleetNetLink, codes ...string) *result.Report {
		r := &result.Report{FleetNet: &result.FleetNet{Total: result.FleetNetTotal{Hosts: 3}, Links: []result.FleetNetLink{l}}}
		for _, c := range codes {
			r.Findings = append(r.Findings, result.Finding{Code: c, Summary: c + " said"})
		}
		return r
	}
	slo := &result.FleetSLO{Name: "p99", Quantile: 0.99}
	for _, c := range []struct {
		name string
		rep  *result.Report
		want []string // each answer's finding's code, or words of its Else
	}{
		{"outlier before even", disk(nil, "fleet.even", "fleet.outlier"), []string{"fleet.outlier", "not asked: give --sweep", "every one of the 2 hosts"}},
		{"a sweep without an objective", disk(&result.FleetSweep{}, "fleet.host_failed"), []string{"no host named", "not asked: the sweep had no objective", "fleet.host_failed"}},
		{"an objective judged nowhere", disk(&result.FleetSweep{SLO: slo}), []string{"no host named", "cannot judge: no step had", "every one"}},
		{"missed before the knee", disk(&result.FleetSweep{SLO: slo}, "fleet.knee", "fleet.slo_missed"), []string{"no host named", "fleet.slo_missed", "every one"}},
		{"a weak path, the link's share", net(result.FleetNetLink{Interface: "eth0", Rate: 1e9, Share: 0.42}, "fleetnet.even", "fleetnet.weak_path"),
			[]string{"fleetnet.weak_path", "no: this host's link eth0 carried 42% of its 1 Gbit/s", "every one of the 3 replicas"}},
		{"a link of no known rate", net(result.FleetNetLink{Interface: "eth0", RateUnknown: "a virtual interface"}), []string{"no replica named", "cannot judge: this host's link rate is not known", "every one"}},
		{"a full link", net(result.FleetNetLink{Interface: "eth0"}, "fleetnet.nic_limited"), []string{"no replica named", "fleetnet.nic_limited", "every one"}},
	} {
		as := FleetAnswers(c.rep)
		if len(as) != len(c.want) {
			t.Fatalf("%s: %d answers, want %d", c.name, len(as), len(c.want))
		}
		for i, a := range as {
			got := a.Else
			if a.Finding != nil {
				got = a.Finding.Code
			}
			if !strings.Contains(got, c.want[i]) {
				t.Errorf("%s: %q answered %q, want %q", c.name, a.Question, got, c.want[i])
			}
		}
	}
	if as := FleetAnswers(&result.Report{Disk: &result.Disk{}}); as != nil {
		t.Errorf("a disk run has fleet answers: %v", as)
	}
}
