package words

import (
	"fmt"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// fleetQuestions are what a DBA asks of a fleet run (issue 29), each
// answered by the first of its codes among the run's findings (what is
// wrong before what is well), as doctor's are.
var fleetQuestions = []question{
	{q: "Does one host stand out while the whole fleet works?", codes: []string{"fleet.outlier", "fleet.even"}},
	{q: "What does the fleet give within the latency objective?", codes: []string{"fleet.slo_missed", "fleet.knee"}},
	{q: "Did every host run?", codes: []string{"fleet.host_failed"}},
}

var fleetNetQuestions = []question{
	{q: "Is one replica's path the weak one?", codes: []string{"fleetnet.weak_path", "fleetnet.slow_replica", "fleetnet.even"}},
	{q: "Is this host's NIC the limit when it ships to every replica at once?", codes: []string{"fleetnet.nic_limited"}},
	{q: "Did every replica run?", codes: []string{"fleet.host_failed"}},
}

// FleetAnswers are a fleet run's questions answered by its findings, or,
// where none answers, what its figures say instead: the question not
// asked (and what to give), or that it ran and said nothing to it. Nil
// for a Report of another command.
func FleetAnswers(rep *result.Report) []Answer {
	var qs []question
	var elses func(i int) string
	switch {
	case rep.Fleet != nil:
		qs, elses = fleetQuestions, func(i int) string { return fleetElse(rep.Fleet, i) }
	case rep.FleetNet != nil:
		qs, elses = fleetNetQuestions, func(i int) string { return fleetNetElse(rep.FleetNet, i) }
	default:
		return nil
	}
	var out []Answer
	for i, q := range qs {
		a := Answer{Question: q.q, Finding: first(q.codes, rep.Findings)}
		if a.Finding == nil {
			a.Else = elses(i)
		}
		out = append(out, a)
	}
	return out
}

// fleetElse answers fleet disk's question i where no finding did.
func fleetElse(f *result.Fleet, i int) string {
	ran := 0
	for _, h := range f.Hosts {
		if h.Disk != nil {
			ran++
		}
	}
	switch i {
	case 0:
		return "no host named, nor every one even: a pattern needs 3 hosts with figures to be judged, and a host between the two is neither; each one's share of the median is in the table"
	case 1:
		switch {
		case f.Sweep == nil:
			return "not asked: give --sweep qd=1,2,4,8,16,32,64 --slo p99=2ms to find the knee"
		case f.Sweep.SLO == nil:
			return "not asked: the sweep had no objective; give --slo p99=2ms with it to find the knee"
		}
		return "cannot judge: no step had the fleet's merged latency (a host's histogram missing)"
	}
	return fmt.Sprintf("every one of the %s gave its figures", metric.Plural(int64(ran), "host"))
}

// fleetNetElse answers fleet net's question i where no finding did.
func fleetNetElse(f *result.FleetNet, i int) string {
	switch i {
	case 0:
		return fmt.Sprintf("no replica named, nor every one even: it takes 2 replicas with figures to judge (%d had them), and one between the two is neither; each one's share is in the table", f.Total.Hosts)
	case 1:
		for _, l := range f.Links {
			if l.Rate > 0 {
				return fmt.Sprintf("no: %s carried %.0f%% of its %s on the wire", linkWord(l), 100*l.Share, metric.FormatBitRate(l.Rate))
			}
		}
		for _, l := range f.Links {
			if l.SameHost {
				return "cannot judge: " + l.RateUnknown
			}
		}
		return "cannot judge: this host's link rate is not known; give it with --assume nic=RATE"
	}
	return fmt.Sprintf("every one of the %s gave its figures", metric.Plural(int64(f.Total.Hosts), "replica"))
}

func linkWord(l result.FleetNetLink) string {
	if l.Interface == "" {
		return "this host's link"
	}
	return "this host's link " + l.Interface
}
