package invariants

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// Rule names: stable, for a test or a script to match on.
const (
	RuleRate          = "rate_above_path"
	RuleContradiction = "contradicting_findings"
	RuleSameWords     = "same_words"
	RuleTuning        = "tuning_lowers_setting"
	RuleStartedAt     = "started_at"
	RuleNotFinite     = "not_finite"
	RuleUnknownCode   = "unknown_code"
	RuleNoData        = "verdict_without_data"
	RuleDisagree      = "disagreeing_measures"
)

// Slack is how far above the path's rate a figure may read: a shaper's
// bucket and the timing of the interval reports let a rate read a little
// above the line's for a moment, never more.
const Slack = 1.05

// HeldMinimum is the shortest interval allowed to read, above the line,
// the bytes the receiver held behind a loss when it began.
const HeldMinimum = 250 * time.Millisecond

// Path is what the measured path can carry, when the caller knows it (a
// test's delay line, a shaper). Zero: the report's own facts give the
// interfaces' speed, when they tell it.
type Path struct {
	RateBitsPerSecond float64
}

// Violation is one invariant broken: its rule and one line that says
// where and by how much, made safe to print.
type Violation struct {
	Rule string
	Line string
}

func (v Violation) String() string { return v.Rule + ": " + v.Line }

// Check returns every invariant rep and its intervals break (nil: none).
// A doctor's steps are checked each with its own intervals.
func Check(rep *result.Report, ivs []result.Interval, path Path) []Violation {
	if rep == nil {
		return []Violation{{RuleNoData, "no report"}}
	}
	c := &checker{}
	c.report(rep, ivs, path, "")
	if d := rep.Doctor; d != nil {
		// The verdicts are the steps' findings, each step checked for
		// contradictions below, where its subject is known: "net stream"
		// and "net stream reverse" each have a limit of their own.
		c.findings(rep, d.Verdicts, "doctor verdicts: ", false)
		for _, s := range d.Steps {
			if s.Report != nil {
				c.report(s.Report, s.Intervals, path, s.Name+": ")
			}
		}
	}
	c.finite(reflect.ValueOf(rep), "report")
	for i, iv := range ivs {
		c.finite(reflect.ValueOf(iv), fmt.Sprintf("interval %d", i))
	}
	return c.out
}

type checker struct {
	out []Violation
}

func (c *checker) add(rule, format string, a ...any) {
	c.out = append(c.out, Violation{Rule: rule, Line: untrusted.Text(fmt.Sprintf(format, a...))})
}

func (c *checker) report(rep *result.Report, ivs []result.Interval, path Path, where string) {
	c.startedAt(rep, ivs, where)
	c.rates(rep, ivs, path, where)
	c.fleetLinks(rep, where)
	if rep.Doctor != nil {
		// A doctor's findings are its steps' verdicts: each step is
		// checked with its own figures, and says each broken rule once.
		return
	}
	c.findings(rep, rep.Findings, where, true)
	c.tuning(rep, where)
	c.noData(rep, where)
	c.agree(rep, where)
}

// agree: where a report holds two measures of one quantity, they agree,
// or the report says they disagree and concludes from neither.
func (c *checker) agree(rep *result.Report, where string) {
	// A disk pattern's rate and its latency: by Little's law the I/Os in
	// flight on average are its IOPS × its mean latency, never more than
	// it keeps outstanding (a tenth over, and a tenth of an I/O, for the
	// edges of the measured window).
	if d := rep.Disk; d != nil {
		for _, p := range d.Patterns {
			outstanding := float64(max(p.QueueDepth, 1) * max(p.Threads, 1))
			if inFlight := p.IOPS * p.Mean.D().Seconds(); p.IOs > 0 && inFlight > 1.1*outstanding+0.1 {
				c.add(RuleDisagree, "%sdisk %s: %.0f IOPS at a mean latency of %s is %.1f I/Os in flight, more than the %.0f it keeps outstanding",
					where, p.Name, p.IOPS, metric.FormatDuration(p.Mean.D()), inFlight, outstanding)
			}
		}
	}
	// A stream's bytes: never more received than sent.
	if s := rep.Stream; s != nil {
		for _, r := range s.Runs {
			if r.ReceivedBytes > r.SentBytes {
				c.add(RuleDisagree, "%sstream %s %s: %d bytes received of %d sent", where, r.Phase, r.Direction, r.ReceivedBytes, r.SentBytes)
			}
		}
	}
	// A fleet's total is its counted hosts' sum, and no replica received
	// more than was sent to it.
	if f := rep.FleetNet; f != nil {
		var sum float64
		n := 0
		for _, h := range f.Hosts {
			if r := h.Stream; r != nil && r.ReceivedBytes > r.SentBytes {
				c.add(RuleDisagree, "%sfleet net: %s received %d bytes of %d sent", where, h.Name, r.ReceivedBytes, r.SentBytes)
			}
			if h.Counted() {
				sum += h.Stream.Throughput
				n++
			}
		}
		if n != f.Total.Hosts || math.Abs(sum-f.Total.Throughput) > 1e-9*sum+1e-6 {
			c.add(RuleDisagree, "%sfleet net: the total reads %s over %d hosts, its counted hosts' own sum %s over %d",
				where, metric.FormatBitRate(f.Total.Throughput), f.Total.Hosts, metric.FormatBitRate(sum), n)
		}
	}
	// A query's network share: the agent's round trip is taken within
	// the bounds the database's own round trips set, or at the high
	// bound, and said so.
	if p := rep.DBPing; p != nil && p.Network != nil && p.Network.NetworkP50 != nil {
		n := p.Network
		if got := n.NetworkP50.D(); got > n.NetworkHigh.D()+time.Microsecond || (n.AgentAboveHigh && got != n.NetworkHigh.D()) {
			c.add(RuleDisagree, "%sdb ping: the split takes a network round trip of %s, above the database's own cheapest round trip %s (agent above it said: %v)",
				where, metric.FormatDuration(got), metric.FormatDuration(n.NetworkHigh.D()), n.AgentAboveHigh)
		}
	}
	// The replica's log flush measured twice: where the two disagree,
	// the plan says so.
	if ps := rep.SyncPlan; ps != nil {
		if why := advisor.FlushDisagreement(ps.Parts.RemoteFlush, ps.Parts.RemoteFlushCheck); why != "" &&
			!slices.ContainsFunc(rep.Findings, func(f result.Finding) bool { return f.Code == "plan.sync_flush_disagree" }) {
			c.add(RuleDisagree, "%splan sync: %s, and the plan does not say so", where, why)
		}
	}
}

// startedAt: the report's start is set, and nothing in it happened before.
func (c *checker) startedAt(rep *result.Report, ivs []result.Interval, where string) {
	if rep.StartedAt.IsZero() {
		c.add(RuleStartedAt, "%sstarted_at is zero", where)
		return
	}
	for i, iv := range ivs {
		if iv.Start < 0 || iv.End < iv.Start {
			c.add(RuleStartedAt, "%sinterval %d runs %.3f-%.3f s from started_at: it must start at or after it and end after its start",
				where, i, iv.Start.D().Seconds(), iv.End.D().Seconds())
		}
	}
	if r := rep.Repl; r != nil && r.Last != nil && !r.Last.At.IsZero() && r.Last.At.Before(rep.StartedAt) {
		c.add(RuleStartedAt, "%sthe last poll at %s is before started_at %s", where, r.Last.At.Format("15:04:05.000"), rep.StartedAt.Format("15:04:05.000"))
	}
}

// pathRate is what the path carries: the caller's, else the slower end's
// fastest interface that says its speed (an end may list every interface
// that is up when the route is not known: its fastest is the bound that
// cannot be wrong), else 0: not known.
func pathRate(rep *result.Report, path Path) (float64, string) {
	if path.RateBitsPerSecond > 0 {
		return path.RateBitsPerSecond, "the path's rate"
	}
	if rep.Stream != nil && rep.Stream.SameHost {
		return 0, ""
	}
	rate, name := 0.0, ""
	for _, f := range []*result.Facts{rep.Facts, rep.AgentFacts} {
		if f == nil {
			continue
		}
		best, bestName := 0.0, ""
		for _, n := range f.Interfaces {
			if !n.SpeedIsLimit() {
				continue
			}
			if s := float64(n.SpeedMbps) * 1e6; s > best {
				best, bestName = s, n.Name
			}
		}
		if best > 0 && (rate == 0 || best < rate) {
			rate, name = best, "the nominal speed of "+bestName
		}
	}
	return rate, name
}

// rates: no interval and no summary rate above what the path carries.
func (c *checker) rates(rep *result.Report, ivs []result.Interval, path Path, where string) {
	limit, what := pathRate(rep, path)
	if limit <= 0 {
		return
	}
	over := func(rate float64) bool { return rate > limit*Slack }
	say := func(thing string, rate float64) {
		c.add(RuleRate, "%s%s reads %s, above %s %s × %.2f", where, thing, metric.FormatBitRate(rate), what, metric.FormatBitRate(limit), Slack)
	}
	// An interval's bytes are what the receiving application read in it:
	// they may include bytes that crossed the line before it and waited
	// in the receiver's TCP behind a lost packet, released when its
	// retransmission came (seen: 317 Mbit/s in one second on a 300 Mbit/s
	// line with 1% loss). Those are at most what was in flight when the
	// interval began: the sender's window at the end of the one before
	// (same phase and direction). A full interval may read that much
	// above the line, never more; a fragment shorter than HeldMinimum is
	// held to the line alone.
	prevCwnd := map[string]int64{}
	for _, iv := range ivs {
		if iv.Probe != "stream" {
			continue
		}
		key := iv.Phase + "/" + iv.Direction
		held := prevCwnd[key]
		if iv.TCP != nil {
			prevCwnd[key] = iv.TCP.CwndBytes
		}
		allowed, also := limit*Slack, ""
		if length := (iv.End - iv.Start).D(); length >= HeldMinimum && held > 0 {
			allowed += float64(8*held) / length.Seconds()
			also = " + the " + metric.FormatBytes(held) + " in flight when it began"
		}
		if iv.Throughput > allowed {
			c.add(RuleRate, "%sinterval %s %.2f-%.2f s reads %s, above %s %s × %.2f%s", where, iv.Direction, iv.Start.D().Seconds(), iv.End.D().Seconds(),
				metric.FormatBitRate(iv.Throughput), what, metric.FormatBitRate(limit), Slack, also)
		}
	}
	if s := rep.Stream; s != nil {
		if over(s.Throughput) {
			say("the stream's throughput", s.Throughput)
		}
		for _, r := range s.Runs {
			// N streams in each direction (--bidir) each have the path.
			if over(r.Throughput) {
				say(fmt.Sprintf("the %s %s run", r.Phase, r.Direction), r.Throughput)
			}
			if over(r.WireThroughput) {
				say(fmt.Sprintf("the %s %s run on the wire", r.Phase, r.Direction), r.WireThroughput)
			}
		}
		if cm := s.Comparison; cm != nil && over(cm.Aggregate) {
			say(fmt.Sprintf("%d streams %s", cm.Streams, cm.Direction), cm.Aggregate)
		}
	}
	if l := rep.Loaded; l != nil && l.Config.Direction != result.DirBoth && over(l.Throughput) {
		say("the load", l.Throughput)
	}
	// Each replica of a fleet has its path; the path's rate bounds each.
	if f := rep.FleetNet; f != nil {
		for _, h := range f.Hosts {
			if r := h.Stream; r != nil {
				if over(r.Throughput) {
					say("the streams to "+h.Name, r.Throughput)
				}
				if over(r.WireThroughput) {
					say("the streams to "+h.Name+" on the wire", r.WireThroughput)
				}
			}
		}
	}
}

// fleetLinks: a fleet's streams on one of this host's physical NICs
// carry no more than its speed, together.
func (c *checker) fleetLinks(rep *result.Report, where string) {
	f := rep.FleetNet
	if f == nil {
		return
	}
	for _, l := range f.Links {
		nic := result.NIC{Driver: l.Driver, SpeedMbps: int64(l.Speed / 1e6)}
		if nic.SpeedIsLimit() && l.WireThroughput > l.Speed*Slack {
			c.add(RuleRate, "%sthe streams on %s read %s on the wire together, above its speed %s × %.2f", where, l.Interface,
				metric.FormatBitRate(l.WireThroughput), metric.FormatBitRate(l.Speed), Slack)
		}
	}
}

// contradictions are codes that cannot both be true of one subject.
var contradictions = func() [][2]string {
	var out [][2]string
	exclusive := func(codes ...string) {
		for i := range codes {
			for _, b := range codes[i+1:] {
				out = append(out, [2]string{codes[i], b})
			}
		}
	}
	// One stream has one limit (advisor.read picks one cause per run).
	exclusive("stream.cpu_limited", "stream.packet_core_limited", "stream.window_limited", "stream.loss_limited", "stream.per_stream_limited",
		"stream.host_limited", "stream.link_limited", "stream.limit_unknown")
	// --try-rps has one answer; a stream that moving its receive's work
	// sped up was not at the link's rate.
	exclusive("stream.rps_helped", "stream.rps_no_gain", "stream.rps_not_tried", "stream.rps_unjudged")
	exclusive("stream.rps_helped", "stream.link_limited")
	// --try-offloads has one answer; a stream that the offloads sped up
	// was not at the link's rate.
	exclusive("stream.offloads_helped", "stream.offloads_no_gain", "stream.offloads_not_tried", "stream.offloads_unjudged")
	exclusive("stream.offloads_helped", "stream.link_limited")
	// --try-coalescing has one answer.
	exclusive("rr.coalescing_costs", "rr.coalescing_free", "rr.coalescing_unjudged", "rr.coalescing_not_tried")
	// A fleet has a host that stood out, or none did.
	exclusive("fleet.outlier", "fleet.even")
	// A replica stood out (its path weak, or what held it not told), or
	// none did.
	exclusive("fleetnet.weak_path", "fleetnet.even")
	exclusive("fleetnet.slow_replica", "fleetnet.even")
	// A path under load either keeps its round trips, grows a tail, or
	// queues.
	exclusive("rr.under_load_ok", "rr.under_load_tail", "rr.bufferbloat", "rr.under_load_unfilled")
	// mtu.ok says full-size packets pass and the ends agree.
	exclusive("mtu.ok", "mtu.black_hole")
	exclusive("mtu.ok", "mtu.nothing_passes")
	exclusive("mtu.ok", "mtu.mismatch")
	// A replica plan has one verdict per subject.
	exclusive("plan.replica_keeps_up", "plan.replica_falls_behind_at_peak", "plan.replica_falls_behind")
	// A replica is in one state at its last poll.
	var repl []string
	for _, v := range result.Verdicts {
		repl = append(repl, "repl."+v)
	}
	exclusive(repl...)
	for _, r := range repl {
		out = append(out, [2]string{"repl.no_replicas", r})
	}
	// One stream carried nearly all N did, or there was room: not both.
	return out
}()

// Contradictions lists the pairs of codes that contradict each other
// about one subject, for the verdict matrix and the docs.
func Contradictions() [][2]string { return slices.Clone(contradictions) }

// subject is what a finding is about, so that two findings contradict only
// about the same thing: a replica's name, a plan's database, a stream's
// direction when a report has several.
func subject(rep *result.Report, f result.Finding) (string, bool) {
	switch {
	case strings.HasPrefix(f.Code, "repl.") && f.Code != "repl.no_replicas" && f.Code != "repl.run" && f.Code != "repl.connection_lost":
		name, _, _ := strings.Cut(f.Summary, ": ")
		return name, true
	case strings.HasPrefix(f.Code, "plan.replica_") && !strings.HasPrefix(f.Code, "plan.replica_link_"):
		for _, verb := range []string{" keeps up", " falls behind"} {
			if name, _, ok := strings.Cut(f.Summary, verb); ok {
				return name, true
			}
		}
		return "", true
	case strings.HasPrefix(f.Code, "stream."):
		// The limit findings do not name the direction: with one single
		// run they are about it; with more, they cannot be told apart
		// (the same-words rule holds them then).
		if rep == nil || rep.Stream == nil {
			return "", true
		}
		n := 0
		for _, r := range rep.Stream.Runs {
			if r.Phase == result.PhaseSingle {
				n++
			}
		}
		return "", n <= 1
	}
	return "", true
}

// findings: known codes, no two contradicting, no two in the same words.
// own: fs are the report's own findings, not a doctor's verdicts drawn from
// its steps (whose codes and pairs are checked in each step).
func (c *checker) findings(rep *result.Report, fs []result.Finding, where string, own bool) {
	said := map[string]int{}
	for i, f := range fs {
		if own && !advisor.KnownCode(f.Code) {
			c.add(RuleUnknownCode, "%sfinding %q is not in advisor.Codes", where, f.Code)
		}
		if j, ok := said[f.Summary]; ok {
			c.add(RuleSameWords, "%sfindings %s and %s say the same words: %q", where, fs[j].Code, f.Code, f.Summary)
		} else {
			said[f.Summary] = i
		}
	}
	if !own {
		return
	}
	for i, a := range fs {
		sa, oka := subject(rep, a)
		for _, b := range fs[i+1:] {
			sb, okb := subject(rep, b)
			if !oka || !okb || sa != sb || !contradict(a.Code, b.Code) {
				continue
			}
			c.add(RuleContradiction, "%s%s and %s both said%s: %q against %q", where, a.Code, b.Code, about(sa), a.Summary, b.Summary)
		}
	}
}

func about(s string) string {
	if s == "" {
		return ""
	}
	return " of " + s
}

func contradict(a, b string) bool {
	for _, p := range contradictions {
		if p == [2]string{a, b} || p == [2]string{b, a} {
			return true
		}
	}
	return false
}

var (
	// sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456", net.ipv4.tcp_rmem = 4096 131072 6291456,
	// net.core.rmem_max=N.
	sysctlRe = regexp.MustCompile(`(net\.ipv4\.tcp_[rw]mem|net\.core\.[rw]mem_max)\s*=\s*"?(\d+(?:[ \t]+\d+)*)"?`)
	netshRe  = regexp.MustCompile(`autotuninglevel\s*=\s*([a-z]+)`)
)

// windowsLevels from the smallest window to the largest.
var windowsLevels = []string{"disabled", "highlyrestricted", "restricted", "normal", "experimental"}

// current are the settings the report records, by sysctl key, each with
// where it was read.
type current map[string][]setting

type setting struct {
	value int64
	where string
}

func currents(rep *result.Report) (current, []string) {
	cur := current{}
	var levels []string
	add := func(key string, v int64, where string) {
		if v > 0 {
			cur[key] = append(cur[key], setting{v, where})
		}
	}
	if p := rep.ReplicaPlan; p != nil {
		// A plan's commands name their host: the replica's receives, the
		// primary's sends.
		add("net.ipv4.tcp_rmem", p.Window.ReceiverRmemMax, "the replica's host")
		add("net.ipv4.tcp_wmem", p.Window.SenderWmemMax, "the primary")
		return cur, nil
	}
	for _, f := range []struct {
		facts *result.Facts
		where string
	}{{rep.Facts, "this host"}, {rep.AgentFacts, "the agent's host"}} {
		if f.facts == nil || f.facts.TCP == nil {
			continue
		}
		add("net.ipv4.tcp_rmem", f.facts.TCP.RmemMax, f.where)
		add("net.ipv4.tcp_wmem", f.facts.TCP.WmemMax, f.where)
		if f.facts.TCP.AutoTuning != "" {
			levels = append(levels, f.facts.TCP.AutoTuning)
		}
	}
	if b := rep.Stream; b != nil && b.Buffers != nil {
		add("net.ipv4.tcp_rmem", b.Buffers.ClientRmemMax, "this host")
		add("net.ipv4.tcp_wmem", b.Buffers.ClientWmemMax, "this host")
		add("net.ipv4.tcp_rmem", b.Buffers.AgentRmemMax, "the agent's host")
		add("net.ipv4.tcp_wmem", b.Buffers.AgentWmemMax, "the agent's host")
	}
	return cur, levels
}

// tuning: a printed command sets a maximum no lower than the one the report
// records (below the lowest recorded, it lowers the setting wherever it is
// pasted).
func (c *checker) tuning(rep *result.Report, where string) {
	cur, levels := currents(rep)
	var texts []string
	for _, f := range rep.Findings {
		texts = append(texts, f.Summary, f.Detail)
	}
	if p := rep.ReplicaPlan; p != nil {
		// The table prints these commands as they are; each is held to
		// the rule whole (min and default too, and none where enough).
		for _, t := range p.Window.Tuning {
			texts = append(texts, t.Command, t.IfBelow)
			if err := advisor.CheckTuning(t); err != nil {
				c.add(RuleTuning, "%s%v", where, err)
			}
		}
	}
	seen := map[string]bool{}
	for _, t := range texts {
		for _, m := range sysctlRe.FindAllStringSubmatch(t, -1) {
			key, fields := m[1], strings.Fields(m[2])
			set, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
			if err != nil || len(cur[key]) == 0 || seen[m[0]] {
				continue
			}
			lowest := slices.MinFunc(cur[key], func(a, b setting) int { return cmp.Compare(a.value, b.value) })
			if set < lowest.value {
				seen[m[0]] = true
				c.add(RuleTuning, "%s%q sets a maximum of %s where %s has %s: pasting it lowers the setting",
					where, strings.TrimSpace(m[0]), metric.FormatBytes(set), lowest.where, metric.FormatBytes(lowest.value))
			}
		}
		for _, m := range netshRe.FindAllStringSubmatch(t, -1) {
			for _, l := range levels {
				if k, n := slices.Index(windowsLevels, m[1]), slices.Index(windowsLevels, l); k >= 0 && n > k && !seen[m[0]+l] {
					seen[m[0]+l] = true
					c.add(RuleTuning, "%s%q lowers the auto-tuning level from %s", where, m[0], l)
				}
			}
		}
	}
}

// noData: a verdict needs figures; from none it must say "cannot judge".
func (c *checker) noData(rep *result.Report, where string) {
	for _, f := range rep.Findings {
		switch {
		case f.Code == "plan.replica_keeps_up" || f.Code == "plan.replica_link_keeps_up":
			if peak, ok := f.Values["log_peak_bytes_per_second"]; ok && peak <= 0 {
				c.add(RuleNoData, "%s%s from a log peak of 0: an idle primary cannot tell whether a replica keeps up", where, f.Code)
			}
		case f.Code == "rr.under_load_ok" || f.Code == "rr.under_load_tail" || f.Code == "rr.bufferbloat" || f.Code == "rr.under_load_unfilled":
			if l := rep.Loaded; l != nil && (l.Idle.RoundTrips == 0 || l.Loaded.RoundTrips == 0) {
				c.add(RuleNoData, "%s%s with %d idle and %d loaded round trips", where, f.Code, l.Idle.RoundTrips, l.Loaded.RoundTrips)
			}
		case strings.HasPrefix(f.Code, "stream.") && strings.HasSuffix(f.Code, "_limited"):
			if s := rep.Stream; s != nil && s.Throughput <= 0 {
				c.add(RuleNoData, "%s%s from a stream that carried nothing", where, f.Code)
			}
		}
	}
}

// finite walks every number in v: a NaN or an infinity is a figure no
// reader can use (and no JSON can carry).
func (c *checker) finite(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			c.finite(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = t.Field(i).Name
			}
			if t.Field(i).Anonymous {
				c.finite(v.Field(i), path)
				continue
			}
			c.finite(v.Field(i), path+"."+name)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			c.finite(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			c.finite(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()))
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			c.add(RuleNotFinite, "%s is %v", path, f)
		}
	}
}
