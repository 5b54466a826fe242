package advisor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// Thresholds behind the replication verdicts.
const (
	// SmallQueue: a queue smaller than this, or than one second of log
	// generation, is a replica keeping up.
	SmallQueue = 1 << 20
	// MinGrowth: a queue must grow faster than this (bytes/s) and than
	// GrowthShare of the generation rate before it counts as growing, so
	// that the jitter of one poll is not called a trend.
	MinGrowth   = 64 << 10
	GrowthShare = 0.1
)

func mb(bytesPerSecond float64) string { return metric.FormatByteRate(bytesPerSecond) }

// dur formats a time the way a DBA reads it: "0 s", not "0 ns".
func dur(d time.Duration) string {
	if d == 0 {
		return "0 s"
	}
	return metric.FormatDuration(d)
}

func size(b int64) string { return metric.FormatBytes(b) }

func val[T any](p *T) (T, bool) {
	var zero T
	if p == nil {
		return zero, false
	}
	return *p, true
}

func secondsPtr(f float64) *result.Seconds {
	s := result.Seconds(time.Duration(f * float64(time.Second)))
	return &s
}

// ReplPoll fills in each replica's verdict, RPO, catch-up and redo times.
// It reads the poll only.
func ReplPoll(p *result.ReplPoll) {
	if p == nil {
		return
	}
	for i := range p.Replicas {
		replica(&p.Replicas[i], p.GenerationRate, words.ReplOf(p.Engine))
	}
}

// generation is the rate the replica must keep up with.
func generation(st *result.ReplicaState, poll *float64) (float64, bool) {
	if st.Generation != nil {
		return *st.Generation, true
	}
	return val(poll)
}

// rpo sets the RPO: what a failover now would lose, the log not yet sent
// to the replica, in bytes and in time: how long ago the primary wrote its
// first byte (UnsentAge, narrows' polls of the primary's position), else
// its bytes over the generation rate. The age is the time lost whatever
// the rate did meanwhile: a standby back from a 13 s outage, its 18.5 MiB
// not yet sent while the primary slowed under the catch-up, read "18.1 s
// of log" at that poll's rate. Of a silent replica it is unknown, like
// its lag: the log past what it last confirmed (Unconfirmed) bounds it,
// and that bound, counted from a confirmation older than the outage, read
// as twice the outage; so it is said as a bound, never as the RPO, in
// every output.
func rpo(st *result.ReplicaState, gen float64, genKnown bool) {
	b, ok := val(st.Unsent)
	if st.State == result.ReplicaSilent || !ok {
		return
	}
	st.RPOBytes = &b
	switch {
	case b == 0:
		st.RPOSeconds = secondsPtr(0)
	case st.UnsentAge != nil:
		st.RPOSeconds = secondsPtr(st.UnsentAge.D().Seconds())
	case genKnown && gen > 0:
		st.RPOSeconds = secondsPtr(float64(b) / gen)
	}
}

// catchUp is the time for every stage to drain what waits up to it,
// faster than the log arrives; false when some stage does not.
func catchUp(st *result.ReplicaState, gen, small float64) (float64, bool) {
	catch, behind := 0.0, 0.0
	for _, s := range []struct {
		queue *int64
		rate  *float64
	}{{st.Unsent, st.SendRate}, {st.Unwritten, st.WriteRate}, {st.Unflushed, st.FlushRate}, {st.Unreplayed, st.ReplayRate}} {
		q, has := val(s.queue)
		if !has {
			continue
		}
		behind += float64(q)
		if behind <= small {
			continue
		}
		r, hasRate := val(s.rate)
		if !hasRate || r <= gen {
			return 0, false
		}
		catch = max(catch, behind/(r-gen))
	}
	return catch, true
}

func replica(st *result.ReplicaState, pollGen *float64, w words.Repl) {
	gen, genKnown := generation(st, pollGen)
	unsent, hasUnsent := val(st.Unsent)
	unwritten, _ := val(st.Unwritten)
	unflushed, _ := val(st.Unflushed)
	unreplayed, hasUnreplayed := val(st.Unreplayed)
	small := int64(SmallQueue)
	if genKnown && int64(gen) > small {
		small = int64(gen)
	}
	growth := max(float64(MinGrowth), GrowthShare*gen)

	st.RPOBytes, st.RPOSeconds, st.CatchUp, st.RedoTime = nil, nil, nil, nil
	rpo(st, gen, genKnown)
	if rr, ok := val(st.ReplayRate); ok && hasUnreplayed {
		if unreplayed == 0 {
			st.RedoTime = secondsPtr(0)
		} else if rr > 0 {
			st.RedoTime = secondsPtr(float64(unreplayed) / rr)
		}
	}
	total := unsent + unwritten + unflushed + unreplayed
	if st.State != result.ReplicaSilent {
		// Nothing to catch up is caught up, whatever the rates; otherwise
		// it takes rates, and generation to set them against.
		if total <= small {
			st.CatchUp = secondsPtr(0)
		} else if c, ok := catchUp(st, gen, float64(small)); genKnown && ok {
			st.CatchUp = secondsPtr(c)
		}
	}

	sendRate, hasSend := val(st.SendRate)
	replayRate, hasReplay := val(st.ReplayRate)
	flushRate, hasFlush := val(st.FlushRate)
	behindWhat := func() string {
		parts := []string{}
		if hasUnsent {
			parts = append(parts, w.Unsent+" "+size(unsent))
		}
		if w.Unflushed != "" && (st.Unwritten != nil || st.Unflushed != nil) {
			parts = append(parts, w.Unflushed+" "+size(unwritten+unflushed))
		}
		if hasUnreplayed {
			parts = append(parts, w.Unreplayed+" "+size(unreplayed))
		}
		return strings.Join(parts, ", ")
	}
	set := func(code, text string) { st.VerdictCode, st.Verdict = code, text }
	switch {
	case st.State == result.ReplicaSilent:
		set(result.VerdictSilent, silentVerdict(st))
	case !hasUnsent && !hasUnreplayed:
		why := "no position figures for this replica in this poll"
		if st.EngineState == "startup" { // PostgreSQL's walsender before START_REPLICATION
			why += ": the primary lists its connection as starting up, not streaming (a standby starting, or a tool connected for replication that has not begun)"
		}
		set(result.VerdictUnknown, why)
	case st.IOThread != "" && st.IOThread != "Yes":
		// MySQL: nothing is fetched while the IO thread is off.
		set(result.VerdictSendQueue, fmt.Sprintf("%s queue growing: the IO thread is not running (%s), so nothing is fetched%s; %s %s",
			w.Send, st.IOThread, atGeneration(gen, genKnown), size(unsent), w.Unsent))
	case hasUnsent && unsent > small && genKnown && hasSend && gen-sendRate > growth && st.ReceiverOnDisk >= ReceiverDiskPolls:
		// PostgreSQL's walreceiver writes and flushes between its reads:
		// a standby's slow disk holds the network back and grows the
		// send queue on the primary, not the unflushed log.
		set(result.VerdictDisk, fmt.Sprintf("the standby's disk is the bottleneck: its walreceiver was waiting on its own disk (%s) at the last %d polls, and it reads the network only between its writes, "+
			"so the %s queue grows at %s (generation %s > %s %s): %s %s", st.ReceiverWait, st.ReceiverOnDisk, w.Send, mb(gen-sendRate), mb(gen), w.Send, mb(sendRate), size(unsent), w.Unsent))
	case hasUnsent && unsent > small && genKnown && hasSend && gen-sendRate > growth:
		who := senderOf(w)
		if st.ReceiverWait != "" && !strings.HasPrefix(st.ReceiverWait, "IO/") {
			who += "; the standby's walreceiver waits on the network (" + st.ReceiverWait + "), not on its disk"
		}
		set(result.VerdictSendQueue, fmt.Sprintf("%s queue growing at %s because generation %s > %s %s: %s %s (%s)",
			w.Send, mb(gen-sendRate), mb(gen), w.Send, mb(sendRate), size(unsent), w.Unsent, who))
	case st.Unflushed != nil && unwritten+unflushed > small && hasSend && hasFlush && sendRate-flushRate > growth && st.UnflushedGrowing >= DiskPolls:
		set(result.VerdictDisk, fmt.Sprintf("the standby's disk is the bottleneck: %s received but not flushed, growing at %s (received %s, flushed %s)",
			size(unwritten+unflushed), mb(sendRate-flushRate), mb(sendRate), mb(flushRate)))
	case st.SQLThread != "" && st.SQLThread != "Yes":
		set(result.VerdictReplay, fmt.Sprintf("%s is the bottleneck: the SQL thread is not running (%s); %s fetched but %s",
			w.Replay, st.SQLThread, size(unreplayed), w.Unreplayed))
	case hasUnreplayed && unreplayed > small && hasReplay && genKnown && gen-replayRate > growth:
		paused := ""
		if p, ok := val(st.ReplayPaused); ok && p {
			paused = " — replay is paused on the standby (pg_wal_replay_resume() resumes it)"
		}
		set(result.VerdictReplay, fmt.Sprintf("%s is the bottleneck: %s received but %s, growing at %s (%s %s, generation %s)%s",
			w.Replay, size(unreplayed), w.Unreplayed, mb(gen-replayRate), w.Replay, mb(replayRate), mb(gen), paused))
	case hasUnreplayed && unreplayed > small && hasReplay && replayRate == 0:
		set(result.VerdictReplay, fmt.Sprintf("%s is the bottleneck: %s received but %s and %s is not moving", w.Replay, size(unreplayed), w.Unreplayed, w.Replay))
	case total > small:
		if c, ok := val(st.CatchUp); ok {
			set(result.VerdictCatchingUp, fmt.Sprintf("catching up: %s behind (%s), caught up in about %s at current rates", size(total), behindWhat(), dur(c.D())))
		} else {
			set(result.VerdictCatchingUp, fmt.Sprintf("behind by %s (%s), not growing fast enough to call a trend", size(total), behindWhat()))
		}
	default:
		set(result.VerdictKeepingUp, fmt.Sprintf("keeping up: %s behind (%s)", size(total), behindWhat()))
	}
}

func atGeneration(gen float64, known bool) string {
	if !known {
		return ""
	}
	return " while the source generates " + mb(gen)
}

// senderOf names what moves the log to the replica.
func senderOf(w words.Repl) string {
	if w.Send == "fetch" {
		return "the IO thread or the network"
	}
	return "the sender or the network"
}

// silentVerdict says how long a replica has been silent, why, and that
// its lag is therefore unknown.
func silentVerdict(st *result.ReplicaState) string {
	why := st.Silence
	if why == "" {
		why = st.EngineState
	}
	what := "replica silent"
	if g := st.Gap; g != nil {
		if why == result.SilenceUnreachable {
			// Only its own connection tells of it (MySQL): say what failed.
			what, why = "replica unreachable", g.Reason
		} else {
			why += ", and narrows cannot reach it (" + g.Reason + ")"
		}
	}
	s, ok := val(st.SilentFor)
	d := fmt.Sprintf("%.1f s", s.D().Seconds())
	if s.D() >= 10*time.Second {
		d = fmt.Sprintf("%.0f s", s.D().Seconds())
	}
	switch {
	case !ok:
		return fmt.Sprintf("%s: %s; its lag is unknown, not 0", what, why)
	case st.NeverHeard:
		return fmt.Sprintf("%s since narrows started (%s): %s; its lag is unknown, not 0", what, d, why)
	}
	return fmt.Sprintf("%s for %s: %s; its lag is unknown, not 0", what, d, why)
}

func dbping(r *result.DBPing) []result.Finding {
	if r.Queries == 0 {
		return nil
	}
	q := r.Config.Queries
	waiting := float64(q) * r.Mean.D().Seconds()
	f := result.Finding{Code: "db.round_trip_time", Severity: "info",
		Summary: fmt.Sprintf("A report that issues %s queries spends %.2f s on round trips (%s each on average, %s queries/s in one session).",
			metric.FormatCount(q), waiting, metric.FormatDuration(r.Mean.D()), metric.FormatCount(int64(r.Rate+0.5))),
		Detail: "That is the time one session spends waiting for answers to trivial queries, before any real work: " +
			"a chatty report or ORM page pays it for every query it sends one after another. Fewer, larger queries, or an application server closer to the database, are the cure.",
		Values: map[string]float64{"queries": float64(q), "round_trip_seconds": waiting, "queries_per_second": r.Rate}}
	out := []result.Finding{f}
	if n := r.Network; n != nil && r.P50 > 0 {
		out = append(out, networkShare(r, n))
	}
	c := r.Connect
	if c.Total > 0 {
		cf := result.Finding{Code: "db.connect_time", Severity: "info",
			Summary: fmt.Sprintf("Opening a session took %s: %s.", metric.FormatDuration(c.Total.D()), c.Parts()),
			Values:  map[string]float64{"connect_seconds": c.Total.D().Seconds()}}
		var d []string
		for _, a := range c.FailedAttempts {
			if a.Outcome == "tls_refused" {
				d = append(d, fmt.Sprintf("The server refused TLS: the driver asked for it first (sslmode=prefer, the default) and then connected again without it, %s of the %s. Set sslmode=disable to skip the attempt, or enable TLS on the server.",
					metric.FormatDuration(a.Took.D()), metric.FormatDuration(c.Total.D())))
				break
			}
		}
		if c.Total.D() > 20*r.P50.D() {
			d = append(d, fmt.Sprintf("A new session costs as much as %.0f queries: an application that connects per request should use a connection pool.", float64(c.Total)/float64(r.P50)))
		}
		cf.Detail = strings.Join(d, " ")
		out = append(out, cf)
	}
	if f, ok := tail("db.tail", "queries", r.Latency,
		"A chatty session feels the tail: look for CPU power saving or contention on the server or the client, a busy virtual switch, or a congested hop."); ok {
		out = append(out, f)
	}
	if len(r.Gaps) > 0 {
		out = append(out, gapFinding(r.Gaps, 0))
	}
	return out
}

// Shares of the query round trip beyond which one side dominates.
const (
	networkDominates = 0.7
	serverDominates  = 0.3
)

// What each bound is, in words.
var (
	lowFrom = map[string]string{"tcp_handshake_rtt": "the kernel's RTT of TCP handshakes to the server's port",
		"tcp_connect_minus_local": "TCP connect calls to the server's port, less one to a listener on this machine",
		"none":                    "no TCP handshakes were made, --tcp-probes 0",
		"slower_than_query":       "none: TCP connects here took longer than a whole query round trip (a filter inspecting new connections, or an emulator), so they bound nothing",
		"slower_than_agent":       "none: the TCP handshakes read slower than the agent's own round trips across the path (each, spaced out, may wake an idle CPU the back-to-back queries keep awake), so they bound nothing"}
	highFrom = map[string]string{"empty_query": "an empty query's round trip", "com_ping": "a COM_PING round trip",
		"fastest_query": "the fastest query, for this engine has no cheaper round trip"}
)

// networkShare says which side of a query's round trip dominates, and
// sets the split's verdict. Without an agent it judges by the bounds: it
// says the network dominates only when even its least share does, the
// server only when even the network's most share is small, and that it
// cannot tell when the bounds straddle a line.
func networkShare(r *result.DBPing, n *result.NetworkSplit) result.Finding {
	const (
		netAdvice    = "a shorter path, a better virtual NIC or switch, or moving the application next to the database will help; the server will not."
		serverAdvice = "a faster network will not help much. Look at the server's CPU and scheduling, middleware (a pooler, a proxy), TLS, or the client machine."
	)
	d := metric.FormatDuration
	f := result.Finding{Code: "db.network_share", Severity: "info",
		Values: map[string]float64{"network_share_low_ratio": n.NetworkShareLow, "network_share_high_ratio": n.NetworkShareHigh,
			"network_rtt_low_seconds": n.NetworkLow.D().Seconds(), "network_rtt_high_seconds": n.NetworkHigh.D().Seconds()}}
	low := fmt.Sprintf("%s (%s: the path and both kernels, no program at either end)", d(n.NetworkLow.D()), lowFrom[n.LowFrom])
	high := fmt.Sprintf("%s (%s: the path, both programs' wake-ups and the server's least work)", d(n.NetworkHigh.D()), highFrom[n.HighFrom])
	lo, hi := n.NetworkShareLow, n.NetworkShareHigh
	var bounds string
	switch {
	case lo >= networkDominates:
		n.BoundsVerdict = "network_dominates"
		bounds = fmt.Sprintf("Even the least the network can take, %s, is %.0f%% of the round trip: the network dominates: %s", low, 100*lo, netAdvice)
	case hi <= serverDominates:
		n.BoundsVerdict = "server_dominates"
		bounds = fmt.Sprintf("Even the most the network can take, %s, is %.0f%% of the round trip: the server and the driver dominate: %s", high, 100*hi, serverAdvice)
	case lo >= serverDominates && hi <= networkDominates:
		n.BoundsVerdict = "shared"
		bounds = fmt.Sprintf("Network and server share the time: the network takes at least %s and at most %s.", low, high)
	default:
		n.BoundsVerdict = "cannot_tell"
		bounds = fmt.Sprintf("From here narrows cannot tell which dominates: the network takes at least %s and at most %s.", low, high)
		if hi < networkDominates {
			bounds += fmt.Sprintf(" At most %.0f%%: the network does not dominate.", 100*hi)
		}
		if lo > serverDominates {
			bounds += fmt.Sprintf(" At least %.0f%%: the server and driver do not dominate.", 100*lo)
		}
		bounds += " An agent beside the database (--to HOST, where `narrows serve` runs) measures the network as the query travels it."
	}
	if n.NetworkP50 != nil {
		share := *n.NetworkShare
		f.Summary = fmt.Sprintf("Of a %s query round trip (p50), the network takes %s (%.0f%%) and the server and driver %s (%.0f%%).",
			d(r.P50.D()), d(n.NetworkP50.D()), 100*share, d(n.ServerP50.D()), 100*(*n.ServerShare))
		f.Values["network_share_ratio"], f.Values["network_rtt_p50_seconds"] = share, n.NetworkP50.D().Seconds()
		f.Values["server_and_driver_p50_seconds"] = n.ServerP50.D().Seconds()
		how := fmt.Sprintf("measured by net rr through the agent at %s, %s round trips", n.Agent, metric.FormatCount(n.AgentRTTs))
		if n.AgentAboveHigh {
			how = fmt.Sprintf("at most %s, %s, for net rr through the agent at %s read more, %s: its programs woke slower than the database's",
				d(n.NetworkHigh.D()), highFrom[n.HighFrom], n.Agent, d(n.AgentRTTP50.D()))
		}
		switch {
		case share >= networkDominates:
			n.Verdict, f.Detail = "network_dominates", "The network dominates ("+how+"): "+netAdvice
		case share <= serverDominates:
			n.Verdict, f.Detail = "server_dominates", "The server and the driver dominate (network "+how+"): "+serverAdvice
		default:
			n.Verdict, f.Detail = "shared", "Network and server share the time (network "+how+")."
		}
		f.Detail += fmt.Sprintf(" Without the agent narrows reads the network between %s.", n.Range())
		return f
	}
	f.Summary = fmt.Sprintf("Of a %s query round trip (p50), the network takes between %s and %s (%.0f–%.0f%%), the server and driver the rest.",
		d(r.P50.D()), d(n.NetworkLow.D()), d(n.NetworkHigh.D()), 100*lo, 100*hi)
	n.Verdict, f.Detail = n.BoundsVerdict, bounds
	if n.AgentError != "" {
		f.Detail += " The agent could not be measured: " + n.AgentError + "."
	}
	return f
}

// gapFinding counts the gaps; one still open counts up to end, the end of
// the run, when it is known (0: not counted).
func gapFinding(gaps []result.Gap, end result.Seconds) result.Finding {
	var lost time.Duration
	retries, open := 0, 0
	var of []string
	for _, g := range gaps {
		switch {
		case g.End != nil:
			lost += g.End.D() - g.Start.D()
		case end > g.Start:
			lost += end.D() - g.Start.D()
		}
		if g.End == nil {
			open++
		}
		retries += g.Retries
		if !slices.Contains(of, g.Of) {
			of = append(of, g.Of)
		}
	}
	what := "The connection was"
	switch {
	case len(of) > 1:
		what = "Connections (" + strings.Join(of, ", ") + ") were"
	case of[0] == "primary":
		what = "The connection to the primary was"
	case of[0] != "session":
		what = "The connection to " + of[0] + " was"
	}
	still := ""
	if open > 0 {
		still = fmt.Sprintf(", %d still lost at the end", open)
	}
	return result.Finding{Code: "db.connection_lost", Severity: "warning",
		Summary: fmt.Sprintf("%s lost %d time(s), %s in all (%d reconnects failed%s): those stretches have no figures (see gaps), none were carried over.",
			what, len(gaps), dur(lost), retries, still),
		Detail: "First reason: " + gaps[0].Reason,
		Values: map[string]float64{"gaps": float64(len(gaps)), "gap_seconds": lost.Seconds()}}
}

func repl(r *result.Repl) []result.Finding {
	var out []result.Finding
	w := words.ReplOf(r.Engine)
	if r.Last != nil {
		ReplPoll(r.Last)
		for _, st := range r.Last.Replicas {
			name := st.Name
			if st.Database != "" {
				name += " / " + st.Database
			}
			f := result.Finding{Code: "repl." + st.VerdictCode, Severity: "info", Summary: fmt.Sprintf("%s: %s.", name, st.Verdict),
				Values: map[string]float64{}}
			if st.VerdictCode != result.VerdictKeepingUp && st.VerdictCode != result.VerdictCatchingUp {
				f.Severity = "warning"
			}
			var d []string
			if b, ok := val(st.Unconfirmed); ok && st.State == result.ReplicaSilent {
				// Unknown, like its lag: bounded by what it has not confirmed.
				f.Values["unconfirmed_bytes"] = float64(b)
				d = append(d, fmt.Sprintf("Its RPO is unknown while it is silent: it has not confirmed the last %s of log (a failover to it would lose at most that).", size(b)))
			}
			if b, ok := val(st.RPOBytes); ok {
				f.Values["rpo_bytes"] = float64(b)
				lose := "would lose"
				if s, ok := val(st.RPOSeconds); ok {
					f.Values["rpo_seconds"] = s.D().Seconds()
					if st.UnsentAge != nil && b > 0 {
						d = append(d, fmt.Sprintf("A failover now %s %s of log: what the primary wrote in the last %s.", lose, size(b), dur(s.D())))
					} else {
						d = append(d, fmt.Sprintf("A failover now %s %s of log, %s of generation at the current rate (RPO = %s bytes ÷ generation rate).", lose, size(b), dur(s.D()), rpoOf(&st, w)))
					}
				} else {
					d = append(d, fmt.Sprintf("A failover now %s %s of log (no generation rate to turn it into time).", lose, size(b)))
				}
			}
			if b, ok := val(st.SlotRetained); ok && b > SmallQueue {
				d = append(d, fmt.Sprintf("Its slot %s keeps %s of WAL on the primary.", st.Slot, size(b)))
			}
			if s, ok := val(st.CatchUp); ok {
				f.Values["catch_up_seconds"] = s.D().Seconds()
				if s > 0 {
					d = append(d, fmt.Sprintf("At current rates it catches up in %s.", metric.FormatDuration(s.D())))
				}
			} else if st.VerdictCode != result.VerdictSilent && st.VerdictCode != result.VerdictUnknown && st.VerdictCode != result.VerdictKeepingUp {
				d = append(d, "At current rates it does not catch up.")
			}
			if s, ok := val(st.RedoTime); ok && s > 0 {
				f.Values["redo_seconds"] = s.D().Seconds()
				d = append(d, fmt.Sprintf("Replaying what it holds takes %s at its %s rate: that much is added to a failover's recovery time.", metric.FormatDuration(s.D()), w.Replay))
			}
			if o, ok := val(st.ClockOffset); ok && abs(o.D()) >= time.Second {
				d = append(d, fmt.Sprintf("Its clock is %s the primary's: a lag figured as the primary's now() − reply_time, or the standby's now() − pg_last_xact_replay_timestamp(), is off by that much (narrows' figures are not).", clockWords(o.D())))
			}
			if st.SecondsBehindNull || st.SecondsBehind != nil {
				sbm := "NULL"
				if s, ok := val(st.SecondsBehind); ok {
					sbm = fmt.Sprintf("%.0f s", s.D().Seconds())
				}
				d = append(d, "Seconds_Behind_Source reads "+sbm+": it counts only what the replica has already fetched, so it cannot see log the IO thread has not fetched — judge by the unfetched bytes.")
			}
			f.Detail = strings.Join(d, " ")
			out = append(out, f)
		}
		if len(r.Last.Replicas) == 0 {
			out = append(out, result.Finding{Code: "repl.no_replicas", Severity: "warning",
				Summary: "No replica is connected to this primary, and none was seen during the run."})
		}
	}
	if r.Run != nil {
		out = append(out, replRun(r, w)...)
	}
	// The primary's session lost leaves no figures at all; a replica's own
	// session (--replica-dsn) lost leaves the primary's figures of it, and
	// "those stretches have no figures" of those was false beside rows
	// that have them.
	var primary, own []result.Gap
	for _, g := range r.Gaps {
		if g.Of == "primary" {
			primary = append(primary, g)
		} else {
			own = append(own, g)
		}
	}
	if len(primary) > 0 {
		f := gapFinding(primary, r.Duration)
		f.Code = "repl.connection_lost"
		out = append(out, f)
	}
	if len(own) > 0 {
		f := gapFinding(own, r.Duration)
		f.Code = "repl.connection_lost"
		names := []string{}
		for _, g := range own {
			if !slices.Contains(names, g.Of) {
				names = append(names, g.Of)
			}
		}
		lost, still := f.Values["gap_seconds"], ""
		if n := openGaps(own); n > 0 {
			still = fmt.Sprintf(", %d still lost at the end", n)
		}
		f.Summary = fmt.Sprintf("narrows' own session to %s (--replica-dsn) was lost %d time(s), %s in all (%d reconnects failed%s): what only the standby tells (whether replay is paused, its clock) is missing there; the rows keep what the primary tells of it.",
			strings.Join(names, ", "), len(own), dur(time.Duration(lost*float64(time.Second))), retriesOf(own), still)
		out = append(out, f)
	}
	return out
}

func openGaps(gaps []result.Gap) int {
	n := 0
	for _, g := range gaps {
		if g.End == nil {
			n++
		}
	}
	return n
}

func retriesOf(gaps []result.Gap) int {
	n := 0
	for _, g := range gaps {
		n += g.Retries
	}
	return n
}

// rpoOf names the bytes an RPO counts.
func rpoOf(_ *result.ReplicaState, w words.Repl) string { return w.Unsent }

// DiskPolls is how many polls in a row the standby's unflushed log must
// grow before its disk is named the bottleneck: the first poll after an
// outage receives a burst faster than any disk flushes it.
const DiskPolls = 2

// ReceiverDiskPolls is how many polls in a row a PostgreSQL standby's
// walreceiver must be seen waiting on its own disk before the disk is
// named for a growing send queue. Each poll is one sample of an instant:
// a walreceiver on its disk 30% of the time would be seen there at two
// polls in a row 9% of the time, at three 2.7%. (One whose disk holds the
// stream waited on it in 94 of 94 samples: repl/standby-disk-slow.)
const ReceiverDiskPolls = 3

func abs(d time.Duration) time.Duration { return max(d, -d) }

// clockWords says how far a clock is from the primary's.
func clockWords(d time.Duration) string {
	if d < 0 {
		return metric.FormatDuration(-d) + " behind"
	}
	return metric.FormatDuration(d) + " ahead of"
}

// replRun is what the run held that its last poll does not show: a replica
// that spent time in any verdict but keeping up is told, with the words of
// its worst moment.
func replRun(r *result.Repl, w words.Repl) []result.Finding {
	var out []result.Finding
	for _, rr := range r.Run.Replicas {
		now := ""
		if r.Last != nil {
			if i := slices.IndexFunc(r.Last.Replicas, func(st result.ReplicaState) bool { return st.Name == rr.Name && st.Database == rr.Database }); i >= 0 {
				now = r.Last.Replicas[i].VerdictCode
			}
		}
		var bad []string
		var badTime result.Seconds
		for _, v := range rr.Verdicts {
			// Catching up is on its way; the verdict it ended in has its
			// own finding.
			if v.Verdict == result.VerdictKeepingUp || v.Verdict == result.VerdictCatchingUp || v.Verdict == now {
				continue
			}
			badTime += v.Seconds
			bad = append(bad, fmt.Sprintf("%s for %s from %.1f s (at worst: %s)", w.Verdict(v.Verdict), dur(v.Seconds.D()), v.First.D().Seconds(), v.Worst))
		}
		if len(bad) == 0 {
			continue
		}
		name := rr.Name
		if rr.Database != "" {
			name += " / " + rr.Database
		}
		f := result.Finding{Code: "repl.run", Severity: "warning",
			Summary: fmt.Sprintf("%s spent %s of the %s run not keeping up, which the last poll does not show: %s.", name, dur(badTime.D()), dur(r.Duration.D()), strings.Join(bad, "; ")),
			Values:  map[string]float64{"not_keeping_up_seconds": badTime.D().Seconds()}}
		var d []string
		for _, s := range rr.Stages {
			if s.Worst > SmallQueue {
				d = append(d, fmt.Sprintf("%s %s at %.1f s (mean %s)", w.Stage(s.Stage), size(s.Worst), s.WorstAt.D().Seconds(), size(int64(s.Mean))))
			}
		}
		if len(d) > 0 {
			f.Detail = "Worst queues: " + strings.Join(d, ", ") + "."
		}
		if l, ok := val(rr.LongestSilence); ok {
			f.Values["longest_silence_seconds"] = l.D().Seconds()
		}
		out = append(out, f)
	}
	return out
}

func dbload(r *result.DBLoad) []result.Finding {
	if r.Duration == 0 {
		return nil
	}
	f := result.Finding{Code: "load.rate", Severity: "info",
		Summary: fmt.Sprintf("Generated %s of log in %s = %s (asked for %s), %s rows into %s.", metric.FormatDecimalBytes(r.LogBytes), metric.FormatDuration(r.Duration.D()),
			mb(r.Rate), mb(r.Config.Rate), metric.FormatCount(r.Rows), r.Table),
		Values: map[string]float64{"log_bytes_per_second": r.Rate, "target_bytes_per_second": r.Config.Rate}}
	if r.Measure == "payload" {
		f.Detail = "The server did not tell this user its log position, so the rate counts the bytes narrows inserted; the log is somewhat larger."
	}
	out := []result.Finding{f}
	if c := r.CommitLatency; c != nil && r.Commits > 0 && c.P50 > 0 {
		// A session that commits one transaction at a time waits this long
		// for each: the figure a synchronous replica or a slow log disk
		// raises, and the ceiling on one session's commit rate, for
		// commits of this size.
		what := result.CommitRows(r.RowsPerCommit, r.Config.RowBytes)
		cf := result.Finding{Code: "load.commit_latency", Severity: "info",
			Summary: fmt.Sprintf("Each commit, one INSERT of %s, took %s at p50 (p99 %s) over %s commits: one session committing such commits one at a time can commit at most %s times a second.",
				what, metric.FormatDuration(c.P50.D()), metric.FormatDuration(c.P99.D()), metric.FormatCount(r.Commits), metric.FormatCount(int64(1/c.P50.D().Seconds()))),
			Detail: "Each commit is timed from sending the INSERT to the server's answer: the round trip to the server, the insert, the log flush and, with a synchronous replica, the round trip to the replica and its flush.",
			Values: map[string]float64{"commit_latency_p50_seconds": c.P50.D().Seconds(), "commit_latency_p99_seconds": c.P99.D().Seconds(), "commits_per_second_one_session": 1 / c.P50.D().Seconds(),
				"rows_per_commit": float64(r.RowsPerCommit), "commit_payload_bytes": float64(r.CommitPayloadBytes)}}
		if r.Config.RowsPerCommit == 0 && r.RowsPerCommit > 1 && len(r.Sessions) > 0 {
			cf.Detail += fmt.Sprintf(" narrows sized the commit to the rate (here %.0f commits a second per session): at another rate a commit holds other rows, and its latency is that of a larger or smaller INSERT; --rows-per-commit 1 times the smallest commit.",
				float64(r.Commits)/float64(len(r.Sessions))/r.Duration.D().Seconds())
		}
		out = append(out, cf)
	}
	if r.Rate < 0.9*r.Config.Rate && r.Stopped == "" {
		bf := result.Finding{Code: "load.below_target", Severity: "warning",
			Summary: fmt.Sprintf("The server took only %.0f%% of the asked rate: its log writes or CPU, or this client, set the limit.", 100*r.Rate/r.Config.Rate),
			Values:  map[string]float64{"achieved_ratio": r.Rate / r.Config.Rate}}
		if len(r.Sessions) == 1 {
			bf.Detail = "One session inserts one commit at a time: --sessions N runs N at once, each on its own connection."
		}
		out = append(out, bf)
	}
	if !r.Dropped {
		out = append(out, result.Finding{Code: "load.table_left", Severity: "warning",
			Summary: fmt.Sprintf("The scratch table %s could not be dropped: drop it by hand (DROP TABLE %s), or run db load again, which replaces it.", r.Table, r.Table)})
	}
	if len(r.Gaps) > 0 {
		out = append(out, gapFinding(r.Gaps, 0))
	}
	return out
}
