package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/lograte"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// PlanReplica is `narrows plan replica`: will a replica keep up with the
// log over one stream, with what margin, and at a farther site. The log
// rate comes from a saved run (From), the primary (DSN) or by hand
// (LogRates, Assume); the stream from a saved run, the agent on the
// replica's host (Measure) or by hand (Assume): the later overriding the
// earlier.
type PlanReplica struct {
	PeakDuration time.Duration // how long a peak lasts: the RPO is the send queue at its end
	// LogFactor is the what-if of a log rate this many times higher; 1
	// or less: no such what-if.
	LogFactor float64
	RTT       time.Duration // the what-if of a replica this far away; 0: none

	From plan.Saved // a saved run: its last net stream and plan replica
	// DSN is the primary whose log rate is read for Watch (its mean and
	// its peak second); nil: not read.
	DSN   *dbconn.DSN
	Watch time.Duration // at least 2 s: the rate is read every second
	// LogRates are log rates given by hand (--log-rate): the server's, or
	// one per database (SQL Server); over what was read or measured.
	LogRates []result.LogRate
	Assume   []plan.Assumption // figures given by hand (plan.ReplicaAssumeNames)
	Measure  *ReplicaMeasure   // nil: no stream is measured
}

// ReplicaMeasure is how plan replica measures the stream: forward, from
// the primary, where narrows runs, to the agent on the replica's host.
type ReplicaMeasure struct {
	Agent client.Options
	// To is the agent as the person named it, the report's target;
	// Agent.Addr when empty.
	To      string
	Stage   time.Duration // how long the stream (and the N streams) is measured
	Streams int           // the streams measured after one, for the link the databases share (1: one only)
}

// DefaultPlanReplica is plan replica with its flags' defaults: a 10
// minute peak, the what-if of twice the log rate, a minute's watch of
// the primary. It has neither log rate nor stream: give them.
func DefaultPlanReplica() PlanReplica {
	return PlanReplica{PeakDuration: advisor.DefaultPeak, LogFactor: advisor.DefaultLogFactor, Watch: time.Minute}
}

// DefaultReplicaMeasure is the stream measured through the agent at agent
// with the flags' defaults: 5 s of one stream, then of 4.
func DefaultReplicaMeasure(agent client.Options) ReplicaMeasure {
	return ReplicaMeasure{Agent: agent, Stage: 5 * time.Second, Streams: 4}
}

// Run reads, measures and plans.
func (c PlanReplica) Run(ctx context.Context, env Env) (*result.Report, error) {
	started := env.now() // the run starts here, before anything is measured
	in := advisor.ReplicaInput{PeakDuration: c.PeakDuration, LogFactor: c.LogFactor, RTT: c.RTT}
	if c.LogFactor <= 1 {
		in.LogFactor = 1
	}
	assumed, err := plan.ReadReplica(c.Assume)
	if err != nil {
		return nil, err
	}
	var saved *result.ReplicaStream
	target := "assumed"
	if c.From.Given() {
		target = c.From.Name
		if saved, in.Log, in.Engine, err = ReplicaFrom(c.From); err != nil {
			return nil, err
		}
	}
	if c.DSN != nil {
		target = c.DSN.Redacted
	}
	if c.DSN == nil && len(c.LogRates) == 0 && len(in.Log) == 0 && !assumed.Has("log") {
		return nil, errext.Userf(nil, "plan replica: give the log rate: read it on the primary (--dsn), from a saved run (--from), or by hand (--log-rate 5MB/s)")
	}
	if c.Measure == nil && saved == nil && !assumed.Has("stream") {
		return nil, errext.Userf(nil, "plan replica: give one stream's capacity: measure it through an agent on the replica's host (--to), read it --from a saved `net stream --json`, or --assume stream=2MB/s,rtt=40ms")
	}

	var steps []planStep
	if d := c.DSN; d != nil {
		steps = append(steps, planStep{fmt.Sprintf("the log on the primary (%s), every second for %s", d.Redacted, metric.FormatDuration(c.Watch)), func(ctx context.Context) error {
			res, err := lograte.Run(ctx, d, lograte.Config{Interval: time.Second, Duration: c.Watch})
			if err != nil {
				return dbErr(err, d)
			}
			in.Log, in.Engine = res.Logs, res.Engine
			in.Notes = append(in.Notes, res.Notes...)
			return nil
		}})
	}
	var software string
	var unauth bool
	if m := c.Measure; m != nil {
		what := "one stream to the agent"
		if m.Streams > 1 {
			what += fmt.Sprintf(", then %d", m.Streams)
		}
		steps = append(steps, planStep{what, func(ctx context.Context) error {
			s, sw, ua, err := m.measure(ctx, env.note)
			software, unauth = sw, ua
			if s != nil {
				saved = s
			}
			return err
		}})
		target = agentName(m.To, m.Agent)
	}
	for i, st := range steps {
		env.note(fmt.Sprintf("narrows plan replica: step %d of %d: %s", i+1, len(steps), st.what))
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			return nil, err
		}
	}
	if len(c.LogRates) > 0 {
		in.Log = slices.Clone(c.LogRates)
	}
	if saved == nil {
		saved = &result.ReplicaStream{Source: "assumed"}
	}
	in.Stream = *saved
	applyReplicaAssumed(assumed, &in)
	p, err := advisor.PlanReplica(in)
	if err != nil {
		return nil, errext.Userf(nil, "plan replica: %v", err)
	}
	rep := result.NewReport("plan replica", target, env.Tool, started)
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.ReplicaPlan = &p
	return Finish(ctx, env.Tool, rep, nil)
}

// measure measures one stream to the agent (and N, for the link),
// forward: from the primary, where narrows runs, to the replica's host.
func (m ReplicaMeasure) measure(ctx context.Context, note func(string)) (*result.ReplicaStream, string, bool, error) {
	sess, err := Connect(ctx, m.Agent)
	if err != nil {
		return nil, "", false, err
	}
	defer sess.Close()
	n := m.Streams
	if most := sess.Limits.MaxDataConns; most > 0 && n > most {
		n = most
	}
	res, err := stream.Run(ctx, sess, stream.Config{Direction: wire.Forward, Streams: n, Duration: m.Stage, Interval: time.Second, Block: 128 << 10},
		func(result.Interval) {})
	rs := advisor.ReplicaStreamOf(res, "measured")
	if err != nil {
		var r *client.Refusal
		if errors.As(err, &r) {
			return rs, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: %w", err)
		}
		if rs == nil || ctx.Err() != nil || errors.Is(err, client.ErrMisbehaved) {
			return rs, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: the stream to %s: %w", agentName(m.To, m.Agent), err)
		}
		// One stream ran; the N streams did not.
		note(fmt.Sprintf("narrows plan replica: the %d streams were not measured: %v", n, err))
	}
	if rs == nil {
		return nil, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: the stream to %s carried nothing", agentName(m.To, m.Agent))
	}
	return rs, sess.Software, !sess.Authenticated, nil
}

// applyReplicaAssumed sets the figures given by hand over what was
// measured or read: the log rate whole, the stream's figures one by one
// (its limit inferred anew from them unless given).
func applyReplicaAssumed(a plan.ReplicaAssumed, in *advisor.ReplicaInput) {
	if a.Has("log") {
		peak := a.Rates["log"]
		if a.Has("peak") {
			peak = a.Rates["peak"]
		}
		in.Log = []result.LogRate{{Mean: a.Rates["log"], Peak: peak, Source: "assumed"}}
	}
	s := &in.Stream
	var streamKeys []string
	for _, k := range a.Keys {
		if k != "log" && k != "peak" {
			streamKeys = append(streamKeys, k)
		}
	}
	if len(streamKeys) == 0 {
		return
	}
	if v, ok := a.Rates["stream"]; ok {
		s.Capacity = v
	}
	if v, ok := a.Rates["link"]; ok {
		s.Link, s.LinkStreams = v, 0
	}
	if v, ok := a.Durs["rtt"]; ok {
		s.RTT, s.MinRTT = result.Seconds(v), result.Seconds(v)
	}
	for k, v := range a.Sizes {
		switch k {
		case "window":
			s.PeerWindow = v
		case "rmem":
			s.ReceiverRmemMax = v
		case "wmem":
			s.SenderWmemMax = v
		case "mss":
			s.MSS = v
		}
	}
	if a.Loss != nil {
		s.RetransRatio, s.Retransmits = *a.Loss, 0
		if *a.Loss > 0 {
			s.Retransmits = 1
		}
		if s.MSS == 0 {
			s.MSS = 1448
		}
	}
	switch {
	case a.Limit != "":
		s.LimitedBy = a.Limit
	case a.Has("stream") || s.LimitedBy == "" || s.Source == "assumed":
		s.LimitedBy = advisor.InferLimit(*s)
	}
	if s.Source == "" || s.Source == "assumed" {
		s.Source = "assumed"
	} else {
		s.Source += "; assumed " + strings.Join(streamKeys, ", ")
	}
}

// ReplicaFrom reads what plan replica takes from a saved run: the last
// `net stream` and the last `plan replica` summary in it (a plan's own
// stream figures unless a net stream run follows it), its log rates and
// engine; figures measured then cite the run. A run with neither is a
// usage error. The saved Reports are left as they were.
func ReplicaFrom(saved plan.Saved) (*result.ReplicaStream, []result.LogRate, string, error) {
	var s *result.ReplicaStream
	var logs []result.LogRate
	engine := ""
	from := func(src string) string {
		if src == "measured" {
			return saved.Measured()
		}
		return src
	}
	for _, r := range saved.Reports {
		if p := r.ReplicaPlan; p != nil {
			st := p.Stream
			st.Source = from(st.Source)
			s = &st
			logs, engine = slices.Clone(p.Log), p.Engine
			for i := range logs {
				logs[i].Source = from(logs[i].Source)
			}
		}
		if r.Stream != nil {
			if rs := advisor.ReplicaStreamOf(r.Stream, saved.Measured()); rs != nil {
				s = rs
			}
		}
	}
	if s == nil && logs == nil {
		return nil, nil, "", errext.Userf(nil, "--from %s: no stream and no replica plan in it: save one with `narrows net stream --to REPLICA --json > FILE` or `narrows plan replica --json > FILE`", saved.Name)
	}
	return s, logs, engine, nil
}
