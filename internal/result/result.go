package result

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/narrows/narrows/internal/metric"
)

// Schema names this version of the JSON records. A change that removes or
// renames a field bumps it; adding a field does not.
const Schema = "narrows/v1"

// Record types: the "type" of each JSON line.
const (
	TypeInterval = "interval"
	TypeSummary  = "summary"
)

// Seconds is a time.Duration that is float seconds in JSON.
type Seconds time.Duration

// MarshalJSON writes seconds with nanosecond precision.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads float seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Seconds(math.Round(f * float64(time.Second)))
	return nil
}

// D is the value as a time.Duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }

// Tool identifies the narrows build that produced a record.
type Tool struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Protocol int    `json:"protocol"`
}

// Report is the summary record that ends every run.
type Report struct {
	Schema  string `json:"schema"`
	Type    string `json:"type"`
	Command string `json:"command"`
	Narrows Tool   `json:"narrows"`
	Target  string `json:"target"`
	Agent   string `json:"agent_software,omitempty"`
	// Unauthenticated is true when the agent proved nothing (the client's
	// --insecure against an agent without a secret): the figures could
	// have come from anything listening at the target.
	Unauthenticated bool      `json:"unauthenticated,omitempty"`
	StartedAt       time.Time `json:"started_at"`
	// Partial is true when the run stopped early; Error says why. What was
	// measured until then is still reported.
	Partial bool    `json:"partial"`
	Error   string  `json:"error,omitempty"`
	Stream  *Stream `json:"stream,omitempty"`
	RR      *RR     `json:"rr,omitempty"`
	DBPing  *DBPing `json:"db_ping,omitempty"` // db.go
	Repl    *Repl   `json:"repl,omitempty"`
	DBLoad  *DBLoad `json:"db_load,omitempty"`
	Disk    *Disk   `json:"disk,omitempty"` // disk.go
	// Commit is `narrows net commit` (commit.go).
	Commit *Commit `json:"commit,omitempty"`
	// BackupPlan is `narrows plan backup` (plan.go).
	BackupPlan *BackupPlan `json:"backup_plan,omitempty"`
	// SyncPlan is `narrows plan sync` (plansync.go).
	SyncPlan *SyncPlan `json:"sync_plan,omitempty"`
	// ReplicaPlan is `narrows plan replica` (planreplica.go).
	ReplicaPlan *ReplicaPlan `json:"replica_plan,omitempty"`
	// ChattyPlan is `narrows plan chatty` (planchatty.go).
	ChattyPlan *ChattyPlan `json:"chatty_plan,omitempty"`
	// Doctor is `narrows doctor` (doctor.go).
	Doctor *Doctor `json:"doctor,omitempty"`
	// Loaded is `narrows net rr --under-load` (loaded.go).
	Loaded *Loaded `json:"loaded,omitempty"`
	// MTU is `narrows net mtu` (mtu.go).
	MTU *MTU `json:"mtu,omitempty"`
	// Host is `narrows host`: what each end's machine adds (host.go).
	Host *Host `json:"host,omitempty"`
	// Watch is `narrows watch` (watch.go).
	Watch *Watch `json:"watch,omitempty"`
	// Fleet is `narrows fleet disk`: one test on many agents at once.
	Fleet *Fleet `json:"fleet,omitempty"`
	// FleetNet is `narrows fleet net`: a stream to every agent at once
	// (fleetnet.go).
	FleetNet *FleetNet `json:"fleet_net,omitempty"`
	// FleetWatch is `narrows fleet watch`: many links watched by one
	// process (fleetwatch.go).
	FleetWatch *FleetWatch `json:"fleet_watch,omitempty"`
	// Facts are this host's; AgentFacts the agent's host, when it told
	// them (facts.go).
	Facts      *Facts    `json:"facts,omitempty"`
	AgentFacts *Facts    `json:"agent_facts,omitempty"`
	Findings   []Finding `json:"findings"`
}

// NewReport starts a Report for a command.
func NewReport(command, target string, tool Tool, started time.Time) *Report {
	return &Report{Schema: Schema, Type: TypeSummary, Command: command, Narrows: tool, Target: target,
		StartedAt: started.UTC(), Findings: []Finding{}}
}

// Finding is one conclusion the advisor drew, in words a DBA can act on.
type Finding struct {
	Code     string `json:"code"`     // stable identifier, e.g. "stream.window_limited"
	Severity string `json:"severity"` // info, warning
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
	// Values are the figures behind the finding, names with unit suffixes.
	Values map[string]float64 `json:"values,omitempty"`
	// About is what the measurement it came from was about, in words
	// (words.About): doctor sets it on its verdicts, where findings of
	// many steps stand side by side.
	About string `json:"about,omitempty"`
	// Hosts are the fleet's hosts it names, as given (fleet.outlier,
	// fleetnet.weak_path, fleetnet.slow_replica): the rows a report marks.
	Hosts []string `json:"hosts,omitempty"`
}

// Latency is a distribution of round-trip times.
type Latency struct {
	Min  Seconds `json:"rtt_min_seconds"`
	Mean Seconds `json:"rtt_mean_seconds"`
	P50  Seconds `json:"rtt_p50_seconds"`
	P90  Seconds `json:"rtt_p90_seconds"`
	P99  Seconds `json:"rtt_p99_seconds"`
	P999 Seconds `json:"rtt_p99_9_seconds"`
	Max  Seconds `json:"rtt_max_seconds"`
}

// LatencyOf reads a histogram. (Latency and Latencies differ only in
// their JSON names, so one serves the other.)
func LatencyOf(h *metric.Histogram) Latency { return Latency(LatenciesOf(h)) }

// Latencies is a distribution of the latencies of operations that are not
// network round trips: I/Os (narrows disk) and commits (narrows db load).
type Latencies struct {
	Min  Seconds `json:"latency_min_seconds"`
	Mean Seconds `json:"latency_mean_seconds"`
	P50  Seconds `json:"latency_p50_seconds"`
	P90  Seconds `json:"latency_p90_seconds"`
	P99  Seconds `json:"latency_p99_seconds"`
	P999 Seconds `json:"latency_p99_9_seconds"`
	Max  Seconds `json:"latency_max_seconds"`
}

// LatencyQuantiles are the quantiles Latencies holds, by the names an
// objective gives them (--slo p99=2ms).
var LatencyQuantiles = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999}

// Quantile is the one of LatencyQuantiles l holds (0 for another).
func (l Latencies) Quantile(q float64) Seconds {
	switch q {
	case 0.5:
		return l.P50
	case 0.9:
		return l.P90
	case 0.99:
		return l.P99
	case 0.999:
		return l.P999
	}
	return 0
}

// LatenciesOf reads a histogram.
func LatenciesOf(h *metric.Histogram) Latencies {
	return Latencies{
		Min: Seconds(h.Min()), Mean: Seconds(h.Mean()), P50: Seconds(h.Quantile(0.5)), P90: Seconds(h.Quantile(0.9)),
		P99: Seconds(h.Quantile(0.99)), P999: Seconds(h.Quantile(0.999)), Max: Seconds(h.Max()),
	}
}

// Interval is one interval record, streamed while a probe runs.
type Interval struct {
	Schema string  `json:"schema"`
	Type   string  `json:"type"`
	Probe  string  `json:"probe"`
	Start  Seconds `json:"start_seconds"`
	End    Seconds `json:"end_seconds"`

	// stream
	Phase      string       `json:"phase,omitempty"`
	Direction  string       `json:"direction,omitempty"`
	Streams    int          `json:"streams,omitempty"`
	Bytes      int64        `json:"bytes,omitempty"`
	Throughput float64      `json:"throughput_bits_per_second,omitempty"`
	TCP        *TCPInterval `json:"tcp,omitempty"`

	// rr
	RoundTrips    int64    `json:"round_trips,omitempty"`
	RoundTripRate float64  `json:"round_trips_per_second,omitempty"`
	RTT           *Latency `json:"rtt,omitempty"`

	// db ping (RTT above), db repl, db load: see db.go
	Queries   int64         `json:"queries,omitempty"`
	QueryRate float64       `json:"queries_per_second,omitempty"`
	Gap       *Gap          `json:"gap,omitempty"`
	Repl      *ReplPoll     `json:"repl,omitempty"`
	Load      *LoadInterval `json:"load,omitempty"`

	// disk: see disk.go
	Disk *DiskInterval `json:"disk,omitempty"`

	// net commit: see commit.go
	Commit *CommitInterval `json:"commit,omitempty"`

	// watch: see watch.go
	Watch *WatchInterval `json:"watch,omitempty"`

	// fleet watch: see fleetwatch.go
	FleetWatch *FleetWatchInterval `json:"fleet_watch,omitempty"`
}

// NewInterval starts an interval record.
func NewInterval(probe string, start, end time.Duration) Interval {
	return Interval{Schema: Schema, Type: TypeInterval, Probe: probe, Start: Seconds(start), End: Seconds(end)}
}

// TCPInterval is the sender's TCP state in one interval (several streams:
// RTTs averaged, windows and retransmits summed).
type TCPInterval struct {
	RTT          Seconds `json:"rtt_seconds"`
	RTTVar       Seconds `json:"rtt_var_seconds"`
	MinRTT       Seconds `json:"min_rtt_seconds"`
	CwndBytes    int64   `json:"cwnd_bytes"`
	Retransmits  int64   `json:"retransmits"`
	DeliveryRate float64 `json:"delivery_rate_bits_per_second"`
}
