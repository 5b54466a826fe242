//go:build linux

package experiments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// outageRun is db repl watching a real standby stopped and started again
// under load: what narrows said, and the truth the test made.
type outageRun struct {
	rep        *result.Report
	ivs        []result.Interval
	table      string
	metrics    string        // /metrics scraped during the outage
	stop, back time.Duration // when the standby was stopped and started, into the watch
	ready      time.Duration // when its start returned (pg_ctl -w: accepting connections)
}

// runOutage watches dr1 (the standby) for watch, at interval, while db
// load writes rate; the standby is stopped at stopAt into the watch and
// started down later.
func runOutage(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, rate string, interval, watch, stopAt, down time.Duration) outageRun {
	t.Helper()
	primary := pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword)
	ld := startOn(t, l.A, "db", "load", "--dsn", primary, "--rate", rate, "--duration", (watch + 6*time.Second).String(), "--json")
	time.Sleep(2 * time.Second)
	prom := net.JoinHostPort(l.A.Addr.String(), strconv.Itoa(agentPort+7))
	repl := startOn(t, l.A, "db", "repl", "--dsn", primary, "--replica-dsn", "dr1="+pg.DSN(pg.Standby, "narrows", dbserver.NarrowsPassword),
		"--interval", interval.String(), "--duration", watch.String(), "--prometheus-listen", prom, "--json")
	t0 := time.Now()
	var o outageRun
	time.Sleep(stopAt)
	o.stop = time.Since(t0)
	if err := pg.StopStandby(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Scrape once the outage is well under way: the exporter must say
	// what the table says of a replica whose lag is unknown.
	time.Sleep(down * 2 / 3)
	// A plain HTTP/1.0 request on a socket made on a thread inside A's
	// namespace (net/http would dial from a goroutine of its own, outside).
	if err := l.A.Do(func() error {
		c, err := net.DialTimeout("tcp", prom, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.0\r\nHost: narrows\r\n\r\n"); err != nil {
			return err
		}
		b, err := io.ReadAll(c)
		o.metrics = string(b)
		return err
	}); err != nil || !strings.Contains(o.metrics, "narrows_repl_") {
		t.Errorf("scrape /metrics during the outage: %v\n%s", err, o.metrics)
	}
	time.Sleep(down - time.Since(t0) + o.stop)
	o.back = time.Since(t0)
	if err := pg.StartStandby(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.ready = time.Since(t0)
	repl.wait(t, watch+time.Minute)
	ld.wait(t, watch+time.Minute)
	rep, ivs, err := jsonl.Last(strings.NewReader(repl.out.String()), "db repl")
	if err != nil || rep == nil || rep.Repl == nil {
		t.Fatalf("db repl's run: %v\n%s", err, repl.out.String())
	}
	o.rep, o.ivs = rep, ivs
	var b bytes.Buffer
	if err := table.New(&b).Report(rep); err != nil {
		t.Fatal(err)
	}
	o.table = b.String()
	return o
}

// TestReplStandbyOutage: a standby stopped for a while under load, as a
// DBA's maintenance or a crash does. What db repl says of the outage must
// agree with itself and with the truth the test made (when the standby
// was stopped, for how long): one start, one length, an RPO only where
// the lag is known, the same unknown in the exporter as in the table, and
// no bottleneck named from one catch-up poll. Issue 25 §2 defect 6.
func TestReplStandbyOutage(t *testing.T) {
	setUp(t, 2) // the load must hold its rate: the RPO in seconds is read at it
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 300e6})
	pg := startPG(t, l)
	const interval, watch, stopAt, down = time.Second, 32 * time.Second, 6 * time.Second, 12 * time.Second
	o := runOutage(t, l, pg, "2MB/s", interval, watch, stopAt, down)
	t.Logf("truth: standby stopped at %.1f s, started at %.1f s into the watch (%.1f s)", o.stop.Seconds(), o.back.Seconds(), (o.back - o.stop).Seconds())
	t.Logf("table:\n%s", o.table)
	for _, f := range o.rep.Findings {
		t.Logf("finding %s: %s", f.Code, f.Summary)
	}
	for _, iv := range o.ivs {
		if iv.Repl == nil {
			continue
		}
		for _, st := range iv.Repl.Replicas {
			rpo := "-"
			if st.RPOBytes != nil {
				rpo = fmt.Sprint(*st.RPOBytes)
			}
			silent := "-"
			if st.SilentFor != nil {
				silent = fmt.Sprintf("%.1f", st.SilentFor.D().Seconds())
			}
			gap := ""
			if st.Gap != nil {
				gap = fmt.Sprintf(" gap from %.1f", st.Gap.Start.D().Seconds())
			}
			t.Logf("%5.1f-%5.1f s %s state %s silent %s rpo %s%s: %s", iv.Start.D().Seconds(), iv.End.D().Seconds(), st.Name, st.State, silent, rpo, gap, st.Verdict)
		}
	}
	for _, line := range strings.Split(o.metrics, "\n") {
		if strings.HasPrefix(line, "narrows_repl_") && strings.Contains(line, "dr1") {
			t.Logf("metrics: %s", line)
		}
	}
	o.check(t, interval)
}

// check holds what db repl said of the outage to itself and to the truth.
// The resolution is one poll: a poll's verdict stands for the interval
// that ends with it, and the standby is last heard at the poll before it
// went; so a start may read up to one interval early, a length up to one
// interval long, plus the standby's own start until it streams again.
func (o outageRun) check(t *testing.T, interval time.Duration) {
	t.Helper()
	iv := interval.Seconds()
	stop, back, ready := o.stop.Seconds(), o.back.Seconds(), o.ready.Seconds()
	run := o.rep.Repl.Run
	if run == nil || len(run.Replicas) != 1 {
		t.Fatalf("the run's tally: %+v", run)
	}
	rr := run.Replicas[0]
	var silent *result.VerdictTime
	for i, v := range rr.Verdicts {
		if v.Verdict == result.VerdictSilent {
			silent = &rr.Verdicts[i]
		}
		if v.Verdict == result.VerdictDisk {
			t.Errorf("the standby's disk named the bottleneck for %.1f s from %.1f s: its disk is not slow (%s)", v.Seconds.D().Seconds(), v.First.D().Seconds(), v.Worst)
		}
	}
	if silent == nil || rr.LongestSilenceStart == nil || rr.LongestSilence == nil {
		t.Fatalf("no silence told: %+v", rr)
	}
	from, length := silent.First.D().Seconds(), silent.Seconds.D().Seconds()
	t.Logf("said: silent %.1f s from %.1f s; longest silence %.1f s from %.1f s; truth: down %.1f–%.1f s (start returned at %.1f s)",
		length, from, rr.LongestSilence.D().Seconds(), rr.LongestSilenceStart.D().Seconds(), stop, back, ready)
	// One start, in both words.
	if d := from - rr.LongestSilenceStart.D().Seconds(); d > 0.05 || d < -0.05 {
		t.Errorf("two starts of one outage: verdicts 'silent from %.1f s', silence 'from %.1f s'", from, rr.LongestSilenceStart.D().Seconds())
	}
	if !strings.Contains(o.table, fmt.Sprintf("from %.1f s", from)) {
		t.Errorf("the table does not say the start %.1f s", from)
	}
	// The truth, to one poll.
	if from < stop-iv-0.25 || from > stop+iv {
		t.Errorf("silent from %.1f s: the standby stopped at %.1f s (polls every %.1f s)", from, stop, iv)
	}
	if length < back-stop-iv || length > ready-stop+2*iv {
		t.Errorf("silent for %.1f s: the standby was down %.1f s (its start returned %.1f s after the stop; polls every %.1f s)", length, back-stop, ready-stop, iv)
	}
	// An RPO only where the lag is known, in the JSON and the exporter.
	for _, x := range o.ivs {
		if x.Repl == nil {
			continue
		}
		for _, st := range x.Repl.Replicas {
			if st.State == result.ReplicaSilent && (st.RPOBytes != nil || st.RPOSeconds != nil) {
				t.Errorf("at %.1f s a silent replica (lag unknown) has an RPO of %v B", x.End.D().Seconds(), *st.RPOBytes)
			}
		}
	}
	if rr.WorstRPOAt != nil {
		at := rr.WorstRPOAt.D().Seconds()
		if at > from+0.05 && at < from+length-0.05 {
			t.Errorf("the worst RPO is taken at %.1f s, inside the silence %.1f–%.1f s, where the RPO is unknown", at, from, from+length)
		}
		// The RPO in time is the age of the first byte not yet sent: the
		// standby held what it confirmed at the last poll before it was
		// stopped, so that byte was written at most one interval before
		// the stop (half a second more: narrows' clock starts after the
		// test's, by its own start). At the poll's rate instead, a CI run
		// read 18.1 s of log 19.1 s into the watch, for an outage from
		// 6.0 s: the primary slowed under the catch-up.
		if s := rr.WorstRPOSeconds; s != nil && s.D().Seconds() > at-stop+iv+0.5 {
			t.Errorf("worst RPO %.1f s of log at %.1f s: the standby stopped at %.1f s, and held the log to the poll before", s.D().Seconds(), at, stop)
		}
	}
	if o.metrics == "" {
		t.Error("nothing scraped during the outage")
	}
	if strings.Contains(o.metrics, "narrows_repl_silent_seconds{") && regexpRPO.MatchString(o.metrics) {
		t.Errorf("the exporter gives dr1 an RPO while it is silent:\n%s", o.metrics)
	}
	// Its own session: named as such, back once the primary sees it again.
	for _, g := range o.rep.Repl.Gaps {
		if g.Of != "dr1" {
			continue
		}
		if strings.Contains(o.table, "gap          dr1 lost") || !strings.Contains(o.table, "dr1's own session (--replica-dsn) lost") {
			t.Errorf("the gap of dr1's own session is not named as such:\n%s", o.table)
		}
		if g.End == nil || g.End.D().Seconds() > ready+2*iv+1 {
			t.Errorf("dr1's own session back at %v: the standby accepted connections at %.1f s", g.End, ready)
		}
	}
	for _, f := range o.rep.Findings {
		if strings.Contains(f.Summary, "dr1") && strings.Contains(f.Summary, "have no figures") {
			t.Errorf("%s says dr1's stretch has no figures, beside rows that have them: %s", f.Code, f.Summary)
		}
	}
}

// regexpRPO finds an RPO figure for dr1 in the exporter's text.
var regexpRPO = regexp.MustCompile(`narrows_repl_rpo_(bytes|seconds)\{[^}]*replica="dr1"`)
