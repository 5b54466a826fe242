package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/lograte"
	"github.com/narrows/narrows/internal/probe/stream"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
)

// replicaPlanFlags are `narrows plan replica`'s questions. The log rate comes
// from the primary (--dsn), a saved run (--from) or by hand (--log-rate,
// --assume); the stream from the agent on the replica's host (--to), a
// saved run or by hand: the later overriding the earlier.
type replicaPlanFlags struct {
	to, dsn, watch, peak, rtt, stage, from string
	streams                                int
	logFactor                              float64
	json                                   bool
	logRates, assume                       multiFlag
	agent                                  agentFlags
}

func planReplica(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan replica")
	var rf replicaPlanFlags
	fs.StringVar(&rf.to, "to", "", "measure one stream through this agent (`narrows serve` on the replica's host): HOST or HOST:PORT")
	rf.agent.register(fs)
	fs.StringVar(&rf.dsn, "dsn", "", "read the log rate on the primary for --watch (PostgreSQL: pg_current_wal_lsn(); MySQL/MariaDB: the binary logs; SQL Server: each database's Log Bytes Flushed/sec); NARROWS_DSN is read when no rate is given otherwise")
	fs.StringVar(&rf.watch, "watch", "60s", "with --dsn: how long to read the log rate (its mean, and its peak second)")
	fs.Var(&rf.logRates, "log-rate", "the log rate by hand instead: MEAN or MEAN,PEAK (e.g. 5MB/s or 3MB/s,8MB/s); SQL Server, per database and repeatable: Sales=3MB/s,8MB/s")
	fs.StringVar(&rf.peak, "peak", "10m", "how long a peak lasts: the RPO is the send queue at its end")
	fs.StringVar(&rf.rtt, "rtt", "", "what if the replica were this far away (a DR site), e.g. 80ms: one stream's capacity at that RTT")
	fs.Float64Var(&rf.logFactor, "log-factor", advisor.DefaultLogFactor, "what if the log rate were this many times higher (1: no such what-if)")
	fs.StringVar(&rf.stage, "stage-duration", "5s", "with --to: how long to measure the stream (and the N streams)")
	fs.IntVar(&rf.streams, "streams", 4, "with --to: the parallel streams measured after one, for the link the databases share (1: one stream only)")
	fs.StringVar(&rf.from, "from", "", "re-plan from a saved run: the JSON lines of `narrows net stream --json` (to the replica's host) and/or of an earlier `plan replica --json`")
	fs.Var(&rf.assume, "assume", "figures given by hand (repeatable, comma-separated): stream=2MB/s (one stream's capacity), rtt=40ms, window=80KB (the peer's), "+
		"limit=window|link|loss|cpu, loss=0.1% (bytes sent again), mss=1448, link=100Mbit/s (N streams), rmem=6MiB (the replica host's tcp_rmem maximum), wmem=4MiB (the primary's tcp_wmem maximum), log=5MB/s, peak=8MB/s")
	fs.BoolVar(&rf.json, "json", false, "write JSON lines instead of a table")
	var htmlPath string
	htmlFlag(fs, &htmlPath)
	if err := parse(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	peakFor, err := positiveDuration("--peak", rf.peak)
	if err != nil {
		return err
	}
	in := advisor.ReplicaInput{PeakDuration: peakFor, LogFactor: rf.logFactor}
	if rf.rtt != "" {
		if in.RTT, err = positiveDuration("--rtt", rf.rtt); err != nil {
			return err
		}
	}
	if math.IsNaN(rf.logFactor) || rf.logFactor < 0 || rf.logFactor > 1000 {
		return usagef("--log-factor %v: use 1 (none) to 1000", rf.logFactor)
	}
	if rf.logFactor <= 1 {
		in.LogFactor = 1
	}
	given, err := logRatesOf(rf.logRates)
	if err != nil {
		return err
	}
	assumed, err := assumptions(rf.assume)
	if err != nil {
		return err
	}
	if rf.to == "" && (set["stage-duration"] || set["streams"]) {
		return usagef("plan replica: --stage-duration and --streams are for measuring through an agent: give --to AGENT too")
	}
	if rf.dsn == "" && set["watch"] {
		return usagef("plan replica: --watch is how long to read the primary: give --dsn too")
	}
	var stream *result.ReplicaStream
	target := "assumed"
	if rf.from != "" {
		target = rf.from
		if stream, in.Log, in.Engine, err = replicaFrom(rf.from); err != nil {
			return err
		}
	}
	// What is measured, checked before anything runs.
	raw := rf.dsn
	if raw == "" && len(given) == 0 && len(in.Log) == 0 && !assumed.hasLog() {
		raw = env.Getenv("NARROWS_DSN")
	}
	var dsn *dbconn.DSN
	var watch time.Duration
	if raw != "" {
		if dsn, err = dbconn.Parse(raw); err != nil {
			return usagef("plan replica: --dsn: %v", err)
		}
		if watch, err = positiveDuration("--watch", rf.watch); err != nil {
			return err
		}
		if watch < 2*time.Second {
			return usagef("--watch %s: watch at least 2s (the rate is read every second)", rf.watch)
		}
		target = dsn.Redacted
	}
	var stage time.Duration
	if rf.to != "" {
		if stage, err = positiveDuration("--stage-duration", rf.stage); err != nil {
			return err
		}
		if rf.streams < 1 || rf.streams > 128 {
			return usagef("--streams %d: use 1 to 128", rf.streams)
		}
	}
	if dsn == nil && len(given) == 0 && len(in.Log) == 0 && !assumed.hasLog() {
		return usagef("plan replica: give the log rate: read it on the primary (--dsn), from a saved run (--from), or by hand (--log-rate 5MB/s)")
	}
	if rf.to == "" && stream == nil && !assumed.has("stream") {
		return usagef("plan replica: give one stream's capacity: measure it through an agent on the replica's host (--to), read it --from a saved `net stream --json`, or --assume stream=2MB/s,rtt=40ms")
	}

	var steps []planStep
	if dsn != nil {
		steps = append(steps, planStep{fmt.Sprintf("the log on the primary (%s), every second for %s", dsn.Redacted, metric.FormatDuration(watch)), func(ctx context.Context) error {
			res, err := lograte.Run(ctx, dsn, lograte.Config{Interval: time.Second, Duration: watch})
			if err != nil {
				return dbErr(err, dsn)
			}
			in.Log, in.Engine = res.Logs, res.Engine
			in.Notes = append(in.Notes, res.Notes...)
			return nil
		}})
	}
	var software string
	var unauth bool
	if rf.to != "" {
		what := "one stream to the agent"
		if rf.streams > 1 {
			what += fmt.Sprintf(", then %d", rf.streams)
		}
		steps = append(steps, planStep{what, func(ctx context.Context) error {
			s, sw, ua, err := rf.measureStream(ctx, env, stage)
			software, unauth = sw, ua
			if s != nil {
				stream = s
			}
			return err
		}})
		target = rf.to
	}
	for i, st := range steps {
		fmt.Fprintf(env.Stderr, "narrows plan replica: step %d of %d: %s\n", i+1, len(steps), st.what)
		if err := st.run(ctx); err != nil {
			if ctx.Err() != nil {
				return errInterrupted
			}
			return err
		}
	}
	if len(given) > 0 {
		in.Log = given
	}
	if stream == nil {
		stream = &result.ReplicaStream{Source: "assumed"}
	}
	in.Stream = *stream
	if err := assumed.apply(&in); err != nil {
		return err
	}
	plan, err := advisor.PlanReplica(in)
	if err != nil {
		return usagef("plan replica: %v", err)
	}
	rep := result.NewReport("plan replica", target, tool(), env.Now())
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.ReplicaPlan = &plan
	return finish(ctx, withHTML(output(env, rf.json), htmlPath), rep, nil)
}

// measureStream measures one stream to the agent (and N, for the link),
// forward: from the primary, where narrows runs, to the replica's host.
func (rf replicaPlanFlags) measureStream(ctx context.Context, env Env, d time.Duration) (*result.ReplicaStream, string, bool, error) {
	opts, err := rf.agent.options(env, "--to", rf.to)
	if err != nil {
		return nil, "", false, err
	}
	sess, err := connect(ctx, opts)
	if err != nil {
		return nil, "", false, err
	}
	defer sess.Close()
	n := rf.streams
	if most := sess.Limits.MaxDataConns; most > 0 && n > most {
		n = most
	}
	res, err := stream.Run(ctx, sess, stream.Config{Direction: wire.Forward, Streams: n, Duration: d, Interval: time.Second, Block: 128 << 10},
		func(result.Interval) {})
	rs := advisor.ReplicaStreamOf(res, "measured")
	if err != nil {
		var r *client.Refusal
		if errors.As(err, &r) {
			return rs, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: %w", err)
		}
		if rs == nil || ctx.Err() != nil || errors.Is(err, client.ErrMisbehaved) {
			return rs, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: the stream to %s: %w", rf.to, err)
		}
		// One stream ran; the N streams did not.
		fmt.Fprintf(env.Stderr, "narrows plan replica: the %d streams were not measured: %v\n", n, err)
	}
	if rs == nil {
		return nil, sess.Software, !sess.Authenticated, fmt.Errorf("plan replica: the stream to %s carried nothing", rf.to)
	}
	return rs, sess.Software, !sess.Authenticated, nil
}

// logRatesOf reads --log-rate: [DATABASE=]MEAN[,PEAK].
func logRatesOf(vals []string) ([]result.LogRate, error) {
	var out []result.LogRate
	named := 0
	for _, v := range vals {
		db, rates := "", v
		if name, rest, ok := strings.Cut(v, "="); ok {
			db, rates = strings.TrimSpace(name), rest
			if db == "" {
				return nil, usagef("--log-rate %q: the database's name is missing before =", v)
			}
			named++
		}
		meanS, peakS, hasPeak := strings.Cut(rates, ",")
		mean, err := metric.ParseRate(meanS)
		if err != nil {
			return nil, usagef("--log-rate %q: %v", v, err)
		}
		peak := mean
		if hasPeak {
			if peak, err = metric.ParseRate(peakS); err != nil {
				return nil, usagef("--log-rate %q: the peak: %v", v, err)
			}
			if peak < mean {
				return nil, usagef("--log-rate %q: the peak %s is below the mean %s: give MEAN,PEAK", v, metric.FormatByteRate(peak), metric.FormatByteRate(mean))
			}
		}
		for _, o := range out {
			if o.Database == db {
				return nil, usagef("--log-rate %q: %s is given twice", v, dbWord(db))
			}
		}
		out = append(out, result.LogRate{Database: db, Mean: mean, Peak: peak, Source: "assumed"})
	}
	if named > 0 && named < len(out) {
		return nil, usagef("--log-rate: name every database (Sales=3MB/s) or none")
	}
	return out, nil
}

func dbWord(db string) string {
	if db == "" {
		return "the server's rate"
	}
	return "database " + db
}

// replicaAssumptions are --assume's figures, read and checked.
type replicaAssumptions struct {
	keys  []string
	rates map[string]float64 // stream, link, log, peak (B/s)
	durs  map[string]time.Duration
	sizes map[string]int64 // window, rmem, wmem, mss
	limit string
	loss  *float64
}

func (a replicaAssumptions) has(k string) bool {
	for _, x := range a.keys {
		if x == k {
			return true
		}
	}
	return false
}

func (a replicaAssumptions) hasLog() bool { return a.has("log") }

var limits = []string{result.LimitWindow, result.LimitLink, result.LimitLoss, result.LimitCPU}

func assumptions(vals []string) (replicaAssumptions, error) {
	a := replicaAssumptions{rates: map[string]float64{}, durs: map[string]time.Duration{}, sizes: map[string]int64{}}
	names := []string{"stream", "rtt", "window", "limit", "loss", "mss", "link", "rmem", "wmem", "log", "peak"}
	as, err := plan.ParseAssume(vals, names, "stream=2MB/s,rtt=40ms")
	if err != nil {
		return a, usagef("%v", err)
	}
	for _, v := range as {
		var err error
		switch v.Name {
		case "stream", "link", "log", "peak":
			a.rates[v.Name], err = v.Rate()
		case "rtt":
			a.durs[v.Name], err = v.Duration(false)
		case "window", "rmem", "wmem":
			a.sizes[v.Name], err = v.Size(1, 1<<40)
		case "mss":
			var n int
			n, err = v.Count(88, 65535)
			a.sizes[v.Name] = int64(n)
		case "limit":
			a.limit, err = v.Word(limits...)
		case "loss":
			var p float64
			p, err = v.Share()
			a.loss = &p
		}
		if err != nil {
			return a, usagef("%v", err)
		}
		a.keys = append(a.keys, v.Name)
	}
	if a.has("peak") && !a.has("log") {
		return a, usagef("--assume: peak=RATE goes with log=RATE (the mean)")
	}
	if a.has("log") && a.has("peak") && a.rates["peak"] < a.rates["log"] {
		return a, usagef("--assume: the peak %s is below the mean %s", metric.FormatByteRate(a.rates["peak"]), metric.FormatByteRate(a.rates["log"]))
	}
	return a, nil
}

// apply sets the assumed figures over what was measured or read.
func (a replicaAssumptions) apply(in *advisor.ReplicaInput) error {
	if a.has("log") {
		peak := a.rates["log"]
		if a.has("peak") {
			peak = a.rates["peak"]
		}
		in.Log = []result.LogRate{{Mean: a.rates["log"], Peak: peak, Source: "assumed"}}
	}
	s := &in.Stream
	var streamKeys []string
	for _, k := range a.keys {
		if k != "log" && k != "peak" {
			streamKeys = append(streamKeys, k)
		}
	}
	if len(streamKeys) == 0 {
		return nil
	}
	if v, ok := a.rates["stream"]; ok {
		s.Capacity = v
	}
	if v, ok := a.rates["link"]; ok {
		s.Link, s.LinkStreams = v, 0
	}
	if v, ok := a.durs["rtt"]; ok {
		s.RTT, s.MinRTT = result.Seconds(v), result.Seconds(v)
	}
	for k, v := range a.sizes {
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
	if a.loss != nil {
		s.RetransRatio, s.Retransmits = *a.loss, 0
		if *a.loss > 0 {
			s.Retransmits = 1
		}
		if s.MSS == 0 {
			s.MSS = 1448
		}
	}
	switch {
	case a.limit != "":
		s.LimitedBy = a.limit
	case a.has("stream") || s.LimitedBy == "" || s.Source == "assumed":
		s.LimitedBy = advisor.InferLimit(*s)
	}
	if s.Source == "" || s.Source == "assumed" {
		s.Source = "assumed"
	} else {
		s.Source += "; assumed " + strings.Join(streamKeys, ", ")
	}
	return nil
}

// replicaFrom reads a saved run: the last `net stream` and the last `plan
// replica` summary in it (a plan's own stream figures unless a net stream
// run follows it).
func replicaFrom(path string) (*result.ReplicaStream, []result.LogRate, string, error) {
	var s *result.ReplicaStream
	var logs []result.LogRate
	engine := ""
	from := func(src string) string {
		if src == "measured" {
			return "measured (" + path + ")"
		}
		return src
	}
	err := savedSummaries(path, func(r *result.Report) {
		if p := r.ReplicaPlan; p != nil {
			st := p.Stream
			st.Source = from(st.Source)
			s = &st
			logs, engine = p.Log, p.Engine
			for i := range logs {
				logs[i].Source = from(logs[i].Source)
			}
		}
		if r.Stream != nil {
			if rs := advisor.ReplicaStreamOf(r.Stream, "measured ("+path+")"); rs != nil {
				s = rs
			}
		}
	})
	if err != nil {
		return nil, nil, "", err
	}
	if s == nil && logs == nil {
		return nil, nil, "", usagef("--from %s: no stream and no replica plan in it: save one with `narrows net stream --to REPLICA --json > FILE` or `narrows plan replica --json > FILE`", path)
	}
	return s, logs, engine, nil
}
