//go:build linux

package experiments

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// The database words of issue 25 §2 (defects 4 and 6): a primary too idle
// to judge a replica by, and a standby's outage told in one set of words
// that agree with each other and with the outage the scenario made.
var dbWordsScenarios = []Scenario{
	{
		Name: "plan/replica-idle-primary", Share: 2, CI: true,
		Question: "will a replica across this line keep up with my primary?",
		Truth:    "8 ms, 300 Mbit/s; the primary runs no workload while plan replica watches it: its log says nothing of the workload's",
		Say:      []string{"plan.replica_cannot_judge"},
		NotSay: []string{"plan.replica_keeps_up", "plan.replica_falls_behind", "plan.replica_falls_behind_at_peak",
			"plan.replica_log_factor", "plan.replica_rtt", "plan.replica_window"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 300e6})
			pg := chattyPrimary(c.T, l)
			addr := c.Agent(l.B)
			rep := c.Narrows(l.A, "plan", "replica", "--dsn", primaryDSN(pg), "--watch", "4s", "--to", addr,
				"--stage-duration", "2s", "--streams", "1", "--rtt", "80ms")
			verdict := "no plan"
			if p := rep.ReplicaPlan; p != nil {
				verdict = p.Verdict
			}
			c.Expect("verdict cannot_judge", verdict == result.VerdictCannotJudge, verdict)
			for _, f := range rep.Findings {
				c.Expect("no margin in words for infinity", !strings.Contains(f.Summary, "any"), f.Summary)
			}
		},
	},
	{
		Name: "plan/replica-busy-primary", Share: 2, CI: true,
		Question: "will a replica across this line keep up with my primary?",
		Truth:    "8 ms, 300 Mbit/s; db load writes 2 MB/s of log on the primary while plan replica watches it; one stream carries far more",
		Say:      []string{"plan.replica_keeps_up"},
		NotSay:   []string{"plan.replica_cannot_judge", "plan.replica_falls_behind", "plan.replica_falls_behind_at_peak"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 300e6})
			pg := chattyPrimary(c.T, l)
			addr := c.Agent(l.B)
			ld := startOn(c.T, l.A, "db", "load", "--dsn", primaryDSN(pg), "--rate", "2MB/s", "--duration", "9s", "--json")
			time.Sleep(1500 * time.Millisecond)
			rep := c.Narrows(l.A, "plan", "replica", "--dsn", primaryDSN(pg), "--watch", "5s", "--to", addr,
				"--stage-duration", "2s", "--streams", "1", "--log-factor", "1")
			ld.wait(c.T, time.Minute)
			_, ls := itest.Records(c.T, ld.out.String())
			truth, _ := itest.Num(itest.Obj(ls, "db_load"), "log_bytes_per_second")
			if p := rep.ReplicaPlan; p != nil && len(p.Log) == 1 {
				c.Within("log mean read / db load's own log rate", p.Log[0].Mean, truth, 0.85, 1.15,
					"pg_current_wal_lsn() once a second over 5 s against the load's own count over 9 s (TestPlanReplicaLogRate's bound)")
			} else {
				c.Expect("one log rate read", false, fmt.Sprint(p))
			}
		},
	},
	{
		Name:     "repl/standby-outage-words",
		Question: "the standby went away for a while: when, for how long, and what did it cost?",
		Truth:    "8 ms, 300 Mbit/s, 2 MB/s of log; the standby is stopped 6 s into a 32 s watch (polls every 1 s) and started again 12 s later; its disk is not slow",
		Say:      []string{"repl.run", "repl.connection_lost"},
		NotSay:   []string{"repl.standby_disk_bottleneck", "repl.silent", "repl.send_queue_growing", "repl.no_replicas"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 300e6})
			pg := startPG(c.T, l)
			const interval = time.Second
			o := runOutage(c.T, l, pg, "2MB/s", interval, 32*time.Second, 6*time.Second, 12*time.Second)
			c.Heard(o.rep)
			rr := o.rep.Repl.Run
			if rr == nil || len(rr.Replicas) != 1 {
				c.Expect("one replica in the run's tally", false, fmt.Sprint(rr))
				return
			}
			r := rr.Replicas[0]
			var silent *result.VerdictTime
			for i, v := range r.Verdicts {
				if v.Verdict == result.VerdictSilent {
					silent = &r.Verdicts[i]
				}
			}
			if silent == nil || r.LongestSilenceStart == nil {
				c.Expect("the silence told", false, fmt.Sprint(r.Verdicts))
				return
			}
			down := (o.back - o.stop).Seconds()
			// A poll's verdict stands for the interval ending with it: the
			// start reads up to one poll early, the length up to one poll
			// and the standby's own start (o.ready − o.back) long.
			c.Within("the silence's start, said + 1 poll / the stop", silent.First.D().Seconds()+interval.Seconds(), o.stop.Seconds(), 0.9, 1.25,
				"one poll (1 s) of resolution on a 6 s start")
			c.Within("the silence's length / the outage", silent.Seconds.D().Seconds(), down, 0.9, (o.ready-o.stop+2*interval).Seconds()/down,
				"one poll early, up to one poll late, plus the standby's start until it streams")
			c.Expect("one start in the verdicts and the silence line",
				(silent.First-*r.LongestSilenceStart).D().Abs() < 50*time.Millisecond, fmt.Sprintf("%.1f s and %.1f s", silent.First.D().Seconds(), r.LongestSilenceStart.D().Seconds()))
			rpoWhileSilent := 0
			for _, x := range o.ivs {
				if x.Repl == nil {
					continue
				}
				for _, st := range x.Repl.Replicas {
					if st.State == result.ReplicaSilent && st.RPOBytes != nil {
						rpoWhileSilent++
					}
				}
			}
			c.Expect("no RPO figure while the lag is unknown", rpoWhileSilent == 0, fmt.Sprintf("%d silent polls with an RPO", rpoWhileSilent))
			c.Expect("no rpo_bytes for dr1 in the exporter during the outage", !regexpRPO.MatchString(o.metrics) && strings.Contains(o.metrics, "narrows_repl_"), "scraped mid-outage")
		},
	},
}
