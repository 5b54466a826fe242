package result

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
)

// Probes of the db commands, as they appear in interval records.
const (
	ProbeDBPing = "db ping"
	ProbeRepl   = "db repl"
	ProbeDBLoad = "db load"
)

// Gap is a stretch of a run during which the connection was lost: no
// figures were measured in it, and none are invented for it.
type Gap struct {
	// Of says which connection: "primary", a replica's name, or "session".
	Of    string  `json:"of"`
	Start Seconds `json:"start_seconds"`
	// End is absent while the gap lasts.
	End    *Seconds `json:"end_seconds,omitempty"`
	Reason string   `json:"reason"`
	// Retries is how many reconnects failed before one succeeded.
	Retries int `json:"retries"`
}

// Connect is how long opening a database session took, phase by phase.
// The phases follow one another: setup, the failed attempts, TCP, TLS and
// login add up to the total.
type Connect struct {
	// Setup is the time before the first dial (the driver's own work;
	// PostgreSQL's name lookup).
	Setup Seconds `json:"setup_seconds"`
	// FailedAttempts are connections the driver opened and gave up before
	// the session's own (sslmode=prefer against a server without TLS).
	FailedAttempts []ConnectAttempt `json:"failed_attempts,omitempty"`
	TCP            Seconds          `json:"tcp_seconds"`
	TLS            Seconds          `json:"tls_seconds"` // 0 without TLS
	Login          Seconds          `json:"login_seconds"`
	Total          Seconds          `json:"total_seconds"`
	// TLSUsed says whether the session was encrypted.
	TLSUsed bool `json:"tls"`
}

// Parts names the connect's phases in order, each with its time, as one
// phrase: "driver setup 40 µs, TLS refused 4.30 ms (TCP 120 µs; the driver then
// opened a new connection), TCP 108 µs, no TLS, login 3.36 ms".
func (c Connect) Parts() string {
	d := func(s Seconds) string { return metric.FormatDuration(s.D()) }
	parts := []string{"driver setup " + d(c.Setup)}
	for _, a := range c.FailedAttempts {
		switch a.Outcome {
		case "tls_refused":
			parts = append(parts, fmt.Sprintf("TLS refused %s (TCP %s; the driver then opened a new connection)", d(a.Took), d(a.TCP)))
		case "tls_failed":
			parts = append(parts, fmt.Sprintf("failed TLS attempt %s (TCP %s)", d(a.Took), d(a.TCP)))
		case "no_tcp":
			parts = append(parts, fmt.Sprintf("failed dial %s", d(a.Took)))
		case "abandoned":
			parts = append(parts, fmt.Sprintf("attempt given up after TLS %s (TCP %s)", d(a.Took), d(a.TCP)))
		default:
			parts = append(parts, fmt.Sprintf("attempt given up %s (TCP %s)", d(a.Took), d(a.TCP)))
		}
	}
	parts = append(parts, "TCP "+d(c.TCP))
	if c.TLSUsed {
		parts = append(parts, "TLS "+d(c.TLS))
	} else {
		parts = append(parts, "no TLS")
	}
	return strings.Join(append(parts, "login "+d(c.Login)), ", ")
}

// ConnectAttempt is a connection attempt that did not become the session.
type ConnectAttempt struct {
	// Outcome: "tls_refused" (the server answered no to the request for
	// TLS), "tls_failed", "no_tcp", "abandoned" (given up after TLS, e.g.
	// a login over TLS the server refused) or "unexplained".
	Outcome string  `json:"outcome"`
	TCP     Seconds `json:"tcp_seconds"`
	// Took is the attempt from its dial to the next one's.
	Took Seconds `json:"seconds"`
}

// DBPing is the summary of `narrows db ping`.
type DBPing struct {
	Config        DBPingConfig `json:"config"`
	Engine        string       `json:"engine"`
	ServerVersion string       `json:"server_version,omitempty"`
	Connect       Connect      `json:"connect"`
	Queries       int64        `json:"queries"`
	// Duration is the time spent measuring, gaps excluded.
	Duration Seconds `json:"duration_seconds"`
	Rate     float64 `json:"queries_per_second"`
	Latency
	// Network is what the path costs, measured apart from the queries.
	Network *NetworkSplit `json:"network,omitempty"`
	// KernelRTT is the kernel's smoothed RTT of the session's own
	// connection (TCP_INFO). With back-to-back queries TCP's ACKs ride on
	// the responses, so it includes server time: informational.
	KernelRTT      Seconds `json:"kernel_rtt_seconds,omitempty"`
	KernelMinRTT   Seconds `json:"kernel_min_rtt_seconds,omitempty"`
	TCPUnavailable string  `json:"tcp_unavailable,omitempty"`
	Gaps           []Gap   `json:"gaps"`
	Stopped        string  `json:"stopped,omitempty"`
}

// DBPingConfig is what was asked for.
type DBPingConfig struct {
	// Query is the SQL sent; a --request query is shown abbreviated.
	Query        string  `json:"query"`
	PayloadBytes int64   `json:"payload_bytes,omitempty"`
	Duration     Seconds `json:"duration_seconds,omitempty"`
	Count        int64   `json:"count,omitempty"`
	Interval     Seconds `json:"interval_seconds"`
	Queries      int64   `json:"queries_for_arithmetic"`
}

// NetworkSplit sets what the network costs against a query round trip.
//
// Without an agent the network's round trip is known only between two
// bounds measured on the way to the database itself: Low, the kernel's
// RTT of TCP handshakes to its port (the path and both kernels; no
// program wakes at either end), and High, a round trip through the
// server that does no work (PostgreSQL's empty query, MySQL's COM_PING:
// the path, both programs' wake-ups and the server's least work). An
// agent beside the database (`net rr` with requests the size of the
// query) measures it as the query travels, between the two.
type NetworkSplit struct {
	// Method is "agent_rr" when an agent measured the network, "bounds"
	// otherwise.
	Method string `json:"method"`
	// TCPConnect are handshakes to host:port, each right after an
	// unmeasured one: a handshake after an idle spell reads two to three
	// times a warm one on a VM, the cold code path and not the network.
	TCPConnectSamples int     `json:"tcp_connect_samples"`
	TCPConnectP50     Seconds `json:"tcp_connect_p50_seconds"`
	TCPConnectMin     Seconds `json:"tcp_connect_min_seconds"`
	// HandshakeRTTP50 is the kernel's RTT sample of those handshakes
	// (TCP_INFO right after connect; Linux).
	HandshakeRTTP50 Seconds `json:"tcp_handshake_rtt_p50_seconds,omitempty"`
	// LocalConnectMin is the fastest connect call to narrows' own
	// listener on loopback: what a connect call costs this machine
	// besides the path, taken off the connect calls where the kernel's
	// RTT cannot be read.
	LocalConnectMin Seconds `json:"local_connect_min_seconds,omitempty"`
	// EmptyRTTP50 is the p50 of the round trips that do no work on the
	// server, sent one after another once the queries are done.
	EmptyRoundTrips int64   `json:"empty_round_trips,omitempty"`
	EmptyRTTP50     Seconds `json:"empty_round_trip_p50_seconds,omitempty"`
	// The bounds, where each comes from ("tcp_handshake_rtt",
	// "tcp_connect_minus_local", "none", "slower_than_query", "slower_than_agent"; "empty_query", "com_ping",
	// "fastest_query"), and their shares of the query's p50.
	NetworkLow       Seconds `json:"network_rtt_low_seconds"`
	NetworkHigh      Seconds `json:"network_rtt_high_seconds"`
	LowFrom          string  `json:"network_rtt_low_from"`
	HighFrom         string  `json:"network_rtt_high_from"`
	NetworkShareLow  float64 `json:"network_share_low_ratio"`
	NetworkShareHigh float64 `json:"network_share_high_ratio"`
	// Agent figures, present with --to.
	Agent        string  `json:"agent,omitempty"`
	AgentRTTP50  Seconds `json:"agent_rtt_p50_seconds,omitempty"`
	AgentRTTs    int64   `json:"agent_round_trips,omitempty"`
	AgentRequest int64   `json:"agent_request_bytes,omitempty"`
	AgentError   string  `json:"agent_error,omitempty"`
	// AgentAboveHigh: the agent's round trip was longer than the high
	// bound, the database's own cheapest round trip, which the network
	// cannot exceed: the split takes the high bound.
	AgentAboveHigh bool `json:"agent_rtt_above_high_bound,omitempty"`
	// The split itself, present only when an agent measured the network.
	NetworkP50   *Seconds `json:"network_rtt_p50_seconds,omitempty"`
	ServerP50    *Seconds `json:"server_and_driver_p50_seconds,omitempty"`
	NetworkShare *float64 `json:"network_share_ratio,omitempty"`
	ServerShare  *float64 `json:"server_share_ratio,omitempty"`
	QueryRTTP50  Seconds  `json:"query_rtt_p50_seconds"`
	// Verdict is the advisor's: "network_dominates", "server_dominates",
	// "shared" or "cannot_tell"; BoundsVerdict what the bounds alone say
	// (the verdict without an agent).
	Verdict       string `json:"verdict,omitempty"`
	BoundsVerdict string `json:"bounds_verdict,omitempty"`
}

// LowFromText says in a few words what the low bound is.
func (n *NetworkSplit) LowFromText() string {
	d := func(s Seconds) string { return metric.FormatDuration(s.D()) }
	switch n.LowFrom {
	case "tcp_handshake_rtt":
		return fmt.Sprintf("kernel RTT of %d TCP handshakes, p50 %s (connect call p50 %s)", n.TCPConnectSamples, d(n.HandshakeRTTP50), d(n.TCPConnectP50))
	case "tcp_connect_minus_local":
		return fmt.Sprintf("fastest of %d TCP connect calls %s, less %s for one to a listener on this machine", n.TCPConnectSamples, d(n.TCPConnectMin), d(n.LocalConnectMin))
	case "slower_than_query":
		return fmt.Sprintf("none: TCP connects (fastest %s of %d) took longer than a query's round trip, so bound nothing here", d(n.TCPConnectMin), n.TCPConnectSamples)
	case "slower_than_agent":
		return fmt.Sprintf("none: the kernel's RTT of %d TCP handshakes (p50 %s) read above the agent's own round trip (%s), so bound nothing here", n.TCPConnectSamples, d(n.HandshakeRTTP50), d(n.AgentRTTP50))
	}
	return "none (no TCP handshakes: --tcp-probes 0)"
}

// HighFromText says in a few words what the high bound is.
func (n *NetworkSplit) HighFromText() string {
	d := func(s Seconds) string { return metric.FormatDuration(s.D()) }
	switch n.HighFrom {
	case "empty_query":
		return fmt.Sprintf("empty query p50 %s over %s round trips", d(n.EmptyRTTP50), metric.FormatCount(n.EmptyRoundTrips))
	case "com_ping":
		return fmt.Sprintf("COM_PING p50 %s over %s round trips", d(n.EmptyRTTP50), metric.FormatCount(n.EmptyRoundTrips))
	}
	return fmt.Sprintf("fastest query %s (no cheaper round trip on this engine)", d(n.NetworkHigh))
}

// Range is the bounds as "10.0–31.0 µs (22–69%)".
func (n *NetworkSplit) Range() string {
	return fmt.Sprintf("%s–%s (%.0f–%.0f%%)", metric.FormatDuration(n.NetworkLow.D()), metric.FormatDuration(n.NetworkHigh.D()),
		100*n.NetworkShareLow, 100*n.NetworkShareHigh)
}

// Repl is the summary of `narrows db repl`.
type Repl struct {
	Config ReplConfig `json:"config"`
	Engine string     `json:"engine"`
	Polls  int64      `json:"polls"`
	// Last is the last poll that reached the primary: the state at the end.
	Last *ReplPoll `json:"last,omitempty"`
	// Run is the whole run, replica by replica: what the last poll alone
	// cannot say (a stage that stalled and recovered, a silence that ended).
	Run  *ReplRun `json:"run,omitempty"`
	Gaps []Gap    `json:"gaps"`
	// QueriesPerPoll is narrows' own load on the primary (each replica
	// named with --replica-dsn gets one more, on that replica).
	QueriesPerPoll int     `json:"queries_per_poll"`
	Duration       Seconds `json:"duration_seconds"`
	Stopped        string  `json:"stopped,omitempty"`
}

// ReplRun sums up every poll of a db repl run.
type ReplRun struct {
	// Generation over the polls that had a rate (SQL Server: the busiest
	// database's, per poll).
	PeakGeneration *float64 `json:"peak_log_generation_bytes_per_second,omitempty"`
	MeanGeneration *float64 `json:"mean_log_generation_bytes_per_second,omitempty"`
	// PrimaryUnreachable is the time the primary could not be polled.
	PrimaryUnreachable Seconds      `json:"primary_unreachable_seconds"`
	Replicas           []ReplicaRun `json:"replicas"`
}

// ReplicaRun is one replica (and database, for SQL Server) over the run.
// Each poll's figures stand for the interval that ends with it.
type ReplicaRun struct {
	Name     string `json:"replica"`
	Database string `json:"database,omitempty"`
	Polls    int    `json:"polls"`
	// Stages are the queues as the polls saw them, in stage order (send,
	// write, flush, replay: the Prometheus stage labels).
	Stages []StageRun `json:"stages"`
	// Verdicts is the time spent in each verdict, in the fixed order of
	// Verdicts; only those that occurred.
	Verdicts []VerdictTime `json:"verdicts"`
	// LongestSilence is the longest the replica went unheard, and when
	// that silence began (seconds into the run; negative when it began
	// before narrows started).
	LongestSilence      *Seconds `json:"longest_silence_seconds,omitempty"`
	LongestSilenceStart *Seconds `json:"longest_silence_start_seconds,omitempty"`
	// WorstRPO is the largest RPO a poll found, and when.
	WorstRPO        *int64   `json:"worst_rpo_bytes,omitempty"`
	WorstRPOSeconds *Seconds `json:"worst_rpo_seconds,omitempty"`
	WorstRPOAt      *Seconds `json:"worst_rpo_at_seconds,omitempty"`
}

// StageRun is one stage's queue over the run.
type StageRun struct {
	Stage   string  `json:"stage"`
	Worst   int64   `json:"worst_bytes"`
	WorstAt Seconds `json:"worst_at_seconds"`
	Mean    float64 `json:"mean_bytes"`
	// Samples is the number of polls that had this figure.
	Samples int `json:"samples"`
}

// VerdictTime is the time one verdict held, and its words at the poll
// where the replica was furthest behind under it.
type VerdictTime struct {
	Verdict string  `json:"verdict"`
	Seconds Seconds `json:"seconds"`
	Polls   int     `json:"polls"`
	First   Seconds `json:"first_at_seconds"`
	Worst   string  `json:"worst"`
}

// ReplConfig is what was asked for.
type ReplConfig struct {
	Interval    Seconds  `json:"interval_seconds"`
	Duration    Seconds  `json:"duration_seconds,omitempty"`
	Replicas    []string `json:"replicas"`
	SilentAfter Seconds  `json:"silent_after_seconds"`
	Prometheus  bool     `json:"prometheus"`
}

// ReplPoll is one look at the primary and its replicas: the payload of a
// db repl interval record, and the last one in the summary.
type ReplPoll struct {
	At     time.Time `json:"at"`
	Engine string    `json:"engine"`
	// Primary figures.
	LogPosition string `json:"log_position,omitempty"` // LSN, binlog file:pos
	// LogBytes is the log position as a byte offset (PostgreSQL: the LSN;
	// MySQL: from the first binary log still on the source).
	LogBytes       *int64         `json:"log_bytes,omitempty"`
	GenerationRate *float64       `json:"log_generation_bytes_per_second,omitempty"`
	Replicas       []ReplicaState `json:"replicas"`
	// Gap is set when the primary could not be polled: then there are no
	// figures at all in this record.
	Gap *Gap `json:"gap,omitempty"`
	// PollTime is how long the poll's queries took.
	PollTime Seconds `json:"poll_seconds"`
}

// Replica stage states.
const (
	ReplicaStreaming = "streaming"
	ReplicaSilent    = "silent"
	ReplicaStopped   = "stopped" // MySQL: a replication thread is not running
)

// SilenceUnreachable is the Silence of a replica narrows reads only through
// its own connection (MySQL), when that connection is lost.
const SilenceUnreachable = "narrows cannot reach it"

// Verdict codes of a replica, a fixed set (also Prometheus label values).
const (
	VerdictKeepingUp  = "keeping_up"
	VerdictCatchingUp = "catching_up"
	VerdictSendQueue  = "send_queue_growing"
	VerdictDisk       = "standby_disk_bottleneck"
	VerdictReplay     = "replay_bottleneck"
	VerdictSilent     = "silent"
	VerdictUnknown    = "unknown"
)

// Verdicts lists every verdict code.
var Verdicts = []string{VerdictKeepingUp, VerdictCatchingUp, VerdictSendQueue, VerdictDisk, VerdictReplay, VerdictSilent, VerdictUnknown}

// ReplicaState is one replica (and, for SQL Server, one database) at one
// poll. A figure the engine does not give, or that was not measurable in
// this poll, is absent, never zero.
type ReplicaState struct {
	Name     string `json:"replica"`
	Database string `json:"database,omitempty"`
	State    string `json:"state"`
	// EngineState is the engine's own word (walsender state, IO/SQL
	// thread states, synchronization_state_desc).
	EngineState string `json:"engine_state,omitempty"`
	SyncState   string `json:"sync_state,omitempty"`
	// ClientAddr is where the replica connects to the primary from
	// (PostgreSQL client_addr; "local" for a Unix socket).
	ClientAddr string `json:"client_addr,omitempty"`
	// Slot is the physical replication slot it uses (PostgreSQL), and
	// SlotRetained the WAL the primary keeps for it (current − restart_lsn).
	Slot         string `json:"slot,omitempty"`
	SlotRetained *int64 `json:"slot_retained_bytes,omitempty"`

	// Bytes waiting at each stage. PostgreSQL: unsent = current WAL −
	// sent; unwritten = sent − write; unflushed = write − flush;
	// unreplayed = flush − replay. MySQL/MariaDB: unsent = binary log
	// the IO thread has not fetched; unreplayed = fetched, not applied.
	// SQL Server: unsent = log_send_queue_size, unreplayed = redo_queue_size.
	Unsent     *int64 `json:"unsent_bytes,omitempty"`
	Unwritten  *int64 `json:"unwritten_bytes,omitempty"`
	Unflushed  *int64 `json:"unflushed_bytes,omitempty"`
	Unreplayed *int64 `json:"unreplayed_bytes,omitempty"`
	// UnsentAge is how long ago the primary wrote the first byte of the
	// log not yet sent, from narrows' own polls of its position
	// (interpolated between two): the time a failover now would lose.
	// Absent when that log is older than narrows' polls, or where the
	// engine tells the unsent log as a size only (SQL Server).
	UnsentAge *Seconds `json:"unsent_age_seconds,omitempty"`

	// Generation is the log generation rate of this replica's database
	// (SQL Server: 'Log Bytes Flushed/sec'); elsewhere see the poll's.
	Generation *float64 `json:"log_generation_bytes_per_second,omitempty"`

	// Rates at which each stage moved the log in the last interval.
	SendRate   *float64 `json:"send_bytes_per_second,omitempty"`
	WriteRate  *float64 `json:"write_bytes_per_second,omitempty"`
	FlushRate  *float64 `json:"flush_bytes_per_second,omitempty"`
	ReplayRate *float64 `json:"replay_bytes_per_second,omitempty"`

	// PostgreSQL's own lag times (NULL when caught up and idle: absent).
	WriteLag  *Seconds `json:"write_lag_seconds,omitempty"`
	FlushLag  *Seconds `json:"flush_lag_seconds,omitempty"`
	ReplayLag *Seconds `json:"replay_lag_seconds,omitempty"`
	// LastReply is the time since the standby last reported (PostgreSQL
	// reply_time), on one clock: the standby's own (clock_timestamp() read
	// through --replica-dsn), or narrows' (when it saw reply_time change).
	// Absent until one of them can tell.
	LastReply *Seconds `json:"last_reply_age_seconds,omitempty"`
	// ClockOffset is the standby's clock minus the primary's, measured
	// through --replica-dsn (PostgreSQL).
	ClockOffset *Seconds `json:"clock_offset_seconds,omitempty"`
	// SilentFor is how long a silent replica has not been heard from; with
	// NeverHeard, narrows has not heard from it at all, and SilentFor is
	// the time it has watched.
	SilentFor  *Seconds `json:"silent_for_seconds,omitempty"`
	NeverHeard bool     `json:"never_heard,omitempty"`
	// Silence says why a silent replica is silent, in words
	// (SilenceUnreachable: only its own connection tells of it, and that
	// is lost).
	Silence string `json:"silence,omitempty"`
	// Unconfirmed is, for a silent replica, the log the primary has
	// generated past the furthest position the replica is known to hold
	// (its last flush reported to the primary, its slot's restart_lsn, or
	// its own receive position): what a failover to it now would lose at
	// most. Its RPO is unknown (RPOBytes absent): it may hold more.
	Unconfirmed *int64 `json:"unconfirmed_bytes,omitempty"`
	// UnflushedGrowing is how many polls in a row the log the standby
	// received but has not flushed grew (PostgreSQL): one poll of it is a
	// burst (a standby catching up after an outage), not yet a slow disk.
	UnflushedGrowing int `json:"unflushed_growing_polls,omitempty"`
	// ReplayPaused is read on a PostgreSQL standby given --replica-dsn.
	ReplayPaused *bool `json:"replay_paused,omitempty"`
	// ReceiverWait is what the standby's walreceiver waited on at this
	// poll, as type/event (PostgreSQL, with --replica-dsn): IO/... is its
	// own disk, Activity/WalReceiverMain the network. ReceiverOnDisk is
	// how many polls in a row it waited on its disk.
	ReceiverWait   string `json:"receiver_wait,omitempty"`
	ReceiverOnDisk int    `json:"receiver_on_disk_polls,omitempty"`

	// MySQL/MariaDB.
	SecondsBehind     *Seconds `json:"seconds_behind_source_seconds,omitempty"`
	SecondsBehindNull bool     `json:"seconds_behind_source_null,omitempty"`
	IOThread          string   `json:"io_thread,omitempty"`
	SQLThread         string   `json:"sql_thread,omitempty"`
	LastError         string   `json:"last_error,omitempty"`

	// SQL Server.
	SecondaryLag *Seconds `json:"secondary_lag_seconds,omitempty"`

	// Positions, for checking against the server by hand.
	Positions map[string]string `json:"positions,omitempty"`

	// What the advisor concluded from this poll.
	Verdict     string   `json:"verdict,omitempty"`
	VerdictCode string   `json:"verdict_code,omitempty"`
	RPOBytes    *int64   `json:"rpo_bytes,omitempty"`
	RPOSeconds  *Seconds `json:"rpo_seconds,omitempty"`
	CatchUp     *Seconds `json:"catch_up_seconds,omitempty"`
	RedoTime    *Seconds `json:"redo_seconds,omitempty"`

	// Gap is set when this replica's own connection (--replica-dsn) is lost.
	Gap *Gap `json:"gap,omitempty"`
}

// DBLoad is the summary of `narrows db load`.
type DBLoad struct {
	Config   DBLoadConfig `json:"config"`
	Engine   string       `json:"engine"`
	Table    string       `json:"table"`
	Rows     int64        `json:"rows"`
	LogBytes int64        `json:"log_bytes"`
	// PayloadBytes is what narrows sent; LogBytes what the server logged.
	PayloadBytes int64 `json:"payload_bytes"`
	// Duration is the time the load ran with at least one session
	// connected.
	Duration Seconds `json:"duration_seconds"`
	Rate     float64 `json:"log_bytes_per_second"`
	// Measure says how log bytes were counted: "wal_lsn", "binlog_position",
	// "log_bytes_flushed" or "payload" (the server gave no log position).
	Measure string `json:"measure"`
	// Commits are the transactions narrows committed, all sessions
	// together: each is ONE INSERT of RowsPerCommit rows
	// (CommitPayloadBytes of payload), committed on its own.
	// CommitLatency times each from sending the INSERT to the server's
	// answer: the round trip, the insert, the log flush and, with a
	// synchronous replica, the replica's acknowledgement. What a
	// committing session waits, for commits of that size.
	Commits            int64      `json:"commits"`
	RowsPerCommit      int64      `json:"rows_per_commit"`
	CommitPayloadBytes int64      `json:"commit_payload_bytes"`
	CommitLatency      *Latencies `json:"commit_latency,omitempty"`
	// Sessions are each session's own figures; the log is the server's,
	// shared by all, so it is counted for the whole only.
	Sessions []LoadSession `json:"sessions"`
	Dropped  bool          `json:"table_dropped"`
	Gaps     []Gap         `json:"gaps"`
	Stopped  string        `json:"stopped,omitempty"`
}

// CommitRows is what one commit inserts: "1 row of 1000 B", "100 rows of
// 1000 B (97.7 KiB)".
func CommitRows(rows, rowBytes int64) string {
	if rows == 1 {
		return "1 row of " + metric.FormatBytes(rowBytes)
	}
	return fmt.Sprintf("%s of %s (%s)", metric.Plural(rows, "row"), metric.FormatBytes(rowBytes), metric.FormatBytes(rows*rowBytes))
}

// LoadSession is one db load session: its own connection and commits.
type LoadSession struct {
	Session       int        `json:"session"`
	Rows          int64      `json:"rows"`
	PayloadBytes  int64      `json:"payload_bytes"`
	PayloadRate   float64    `json:"payload_bytes_per_second"`
	Commits       int64      `json:"commits"`
	CommitLatency *Latencies `json:"commit_latency,omitempty"`
}

// DBLoadConfig is what was asked for.
type DBLoadConfig struct {
	Rate     float64 `json:"rate_bytes_per_second"`
	Duration Seconds `json:"duration_seconds,omitempty"`
	Interval Seconds `json:"interval_seconds"`
	RowBytes int64   `json:"row_bytes"`
	Sessions int     `json:"sessions"`
	// RowsPerCommit is what --rows-per-commit asked; 0: narrows chose.
	RowsPerCommit int64 `json:"rows_per_commit,omitempty"`
}

// LoadInterval is the payload of a db load interval record: all sessions
// together.
type LoadInterval struct {
	LogBytes int64   `json:"log_bytes"`
	Rate     float64 `json:"log_bytes_per_second"`
	Rows     int64   `json:"rows"`
	// Commits in the interval and the p50 and p99 of their latency.
	Commits   int64    `json:"commits,omitempty"`
	CommitP50 *Seconds `json:"commit_latency_p50_seconds,omitempty"`
	CommitP99 *Seconds `json:"commit_latency_p99_seconds,omitempty"`
	Gap       *Gap     `json:"gap,omitempty"`
}
