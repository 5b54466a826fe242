package result

// ReplicaPlan is `narrows plan replica`: will a replica keep up with the
// primary's log over one stream per database, with what margin, and what
// a farther site or a heavier load would change.
type ReplicaPlan struct {
	// Engine is the primary's (postgres, mysql, sqlserver), "" when the
	// log rate was given by hand.
	Engine string `json:"engine,omitempty"`
	// Log is the log generation, one entry per database for SQL Server
	// (each database ships its log over its own stream to each replica),
	// one for the server otherwise.
	Log    []LogRate     `json:"log"`
	Stream ReplicaStream `json:"stream"`
	// PeakDuration is how long a peak is planned to last (--peak).
	PeakDuration Seconds `json:"peak_duration_seconds"`
	// Verdict is the worst of the cases: VerdictKeepsUp,
	// VerdictFallsBehindAtPeak or VerdictFallsBehind; VerdictCannotJudge
	// when the log is too idle to judge a replica by (CannotJudge says why).
	Verdict     string `json:"verdict"`
	CannotJudge string `json:"cannot_judge,omitempty"`
	// Cases are one stream each (one per database for SQL Server).
	Cases []ReplicaCase `json:"cases"`
	// Link sets the streams together against the link: present with more
	// than one stream, when the link's rate is known.
	Link   *ReplicaCase  `json:"link,omitempty"`
	Window ReplicaWindow `json:"window"`
	// WhatIfs are the same plan at another RTT (--rtt) and with the log
	// rate multiplied.
	WhatIfs []ReplicaWhatIf `json:"what_ifs"`
	// Notes are what the model assumed and what it cannot know.
	Notes []string `json:"notes"`
}

// Verdicts of a replica plan.
const (
	VerdictKeepsUp           = "keeps_up"
	VerdictFallsBehindAtPeak = "falls_behind_at_peak"
	VerdictFallsBehind       = "falls_behind"
	// VerdictCannotJudge: the primary wrote too little log while it was
	// watched (or a rate of 0 was given) for any verdict to mean anything.
	VerdictCannotJudge = "cannot_judge"
)

// LogRate is how fast a primary generates log.
type LogRate struct {
	// Database is the SQL Server database; "" is the whole server
	// (PostgreSQL's WAL, MySQL's binary log are one stream per replica).
	Database string  `json:"database,omitempty"`
	Mean     float64 `json:"mean_bytes_per_second"`
	// Peak is the highest rate over one interval (a second);
	// PeakSustained the highest mean over PeakWindow (10 s), when the
	// watch was long enough to tell them apart.
	Peak          float64 `json:"peak_bytes_per_second"`
	PeakSustained float64 `json:"peak_sustained_bytes_per_second,omitempty"`
	PeakWindow    Seconds `json:"peak_sustained_window_seconds,omitempty"`
	// Samples are the rate of each interval, in order (bytes per second).
	Samples  []float64 `json:"samples_bytes_per_second,omitempty"`
	Interval Seconds   `json:"interval_seconds,omitempty"`
	Bytes    int64     `json:"bytes,omitempty"` // generated over the watch
	Watch    Seconds   `json:"watch_seconds,omitempty"`
	// Source is "measured", "assumed" or the file it was read from; What
	// says how it was read.
	Source string `json:"source"`
	What   string `json:"what,omitempty"`
}

// Limits of a stream, as the stream verdicts name them.
const (
	LimitWindow    = "window"
	LimitLink      = "link"
	LimitLoss      = "loss"
	LimitCPU       = "cpu"
	LimitCore      = "core"       // a core at an end was full, much of it packet work
	LimitHost      = "host"       // no network crossed: the agent is on this machine
	LimitPerStream = "per_stream" // N streams carried more, nothing in the stream's own figures says why
	LimitUnknown   = "unknown"
)

// ReplicaStream is one stream's capacity to the replica's host and what
// held it, the figures a model at another RTT needs.
type ReplicaStream struct {
	Capacity  float64 `json:"capacity_bytes_per_second"`
	LimitedBy string  `json:"limited_by"` // Limit*
	RTT       Seconds `json:"rtt_seconds,omitempty"`
	MinRTT    Seconds `json:"min_rtt_seconds,omitempty"`
	// PeerWindow is the receive window the replica's host advertised (the
	// window the stream had).
	PeerWindow   int64   `json:"peer_window_bytes,omitempty"`
	MSS          int64   `json:"mss_bytes,omitempty"`
	Retransmits  int64   `json:"retransmits"`
	RetransRatio float64 `json:"retransmit_ratio"`
	// Link is what N parallel streams carried: the link, as far as a
	// test can fill it; 0 when not measured.
	Link        float64 `json:"link_bytes_per_second,omitempty"`
	LinkStreams int     `json:"link_streams,omitempty"`
	// The TCP buffer maxima of the two ends (Linux net.ipv4.tcp_rmem and
	// tcp_wmem, third field): the receiver is the replica's host (the
	// agent), the sender the primary's (where narrows ran). 0: not known.
	ReceiverRmemMax int64  `json:"receiver_tcp_rmem_max_bytes,omitempty"`
	SenderWmemMax   int64  `json:"sender_tcp_wmem_max_bytes,omitempty"`
	ReceiverOS      string `json:"receiver_os,omitempty"`
	SenderOS        string `json:"sender_os,omitempty"`
	// The same settings' first two fields (min, default), when known.
	ReceiverRmemLow []int64 `json:"receiver_tcp_rmem_min_default_bytes,omitempty"`
	SenderWmemLow   []int64 `json:"sender_tcp_wmem_min_default_bytes,omitempty"`
	SameHost        bool    `json:"same_host,omitempty"`
	Source          string  `json:"source"`
}

// ReplicaCase is one stream (or the link, for the sum of the streams)
// against its log rate.
type ReplicaCase struct {
	Database string  `json:"database,omitempty"`
	Mean     float64 `json:"log_mean_bytes_per_second"`
	Peak     float64 `json:"log_peak_bytes_per_second"`
	Capacity float64 `json:"capacity_bytes_per_second"`
	// Headroom is capacity ÷ log rate: 2 carries twice the log, under 1
	// falls behind. Absent when no log is generated.
	HeadroomMean *float64 `json:"headroom_at_mean_ratio,omitempty"`
	HeadroomPeak *float64 `json:"headroom_at_peak_ratio,omitempty"`
	Verdict      string   `json:"verdict"`
	// Growth is how fast the send queue grows at the peak (peak −
	// capacity), GrowthMean at the mean when that too is above capacity.
	Growth     float64 `json:"send_queue_growth_bytes_per_second"`
	GrowthMean float64 `json:"send_queue_growth_at_mean_bytes_per_second,omitempty"`
	// RPO is the unsent log at the end of a peak of the plan's duration,
	// in bytes and as the age of the oldest unsent byte (bytes ÷ peak).
	RPOBytes   int64   `json:"rpo_bytes"`
	RPOSeconds float64 `json:"rpo_seconds"`
	// CatchUp is how long the queue takes to drain after the peak, at the
	// mean rate: RPO ÷ (capacity − mean); absent when it never does.
	CatchUp      *float64 `json:"catch_up_seconds,omitempty"`
	CatchUpNever bool     `json:"catch_up_never,omitempty"`
}

// ReplicaWindow is the window a stream needs for the peak at the path's
// RTT, and the settings that give it.
type ReplicaWindow struct {
	Rate   float64 `json:"rate_bytes_per_second"` // the busiest stream's peak
	RTT    Seconds `json:"rtt_seconds"`
	BDP    int64   `json:"bdp_bytes"`
	Margin float64 `json:"margin_ratio"`
	Needed int64   `json:"window_bytes"` // BDP × margin
	// PayloadRatio is the share of a socket buffer the kernel advertises
	// as window; Buffer = Needed ÷ PayloadRatio, the tcp_rmem / tcp_wmem
	// maximum both ends need.
	PayloadRatio float64 `json:"payload_ratio"`
	Buffer       int64   `json:"buffer_bytes"`
	// WindowsLevel is the least Windows receive window auto-tuning level
	// that allows the window: normal (the default) or experimental.
	WindowsLevel string `json:"windows_autotuning_level"`
	// Tuning is each end's setting against the buffer, with the command
	// that raises it where it is too small.
	Tuning          []Tuning `json:"tuning"`
	ReceiverEnough  *bool    `json:"receiver_enough,omitempty"`
	SenderEnough    *bool    `json:"sender_enough,omitempty"`
	ReceiverRmemMax int64    `json:"receiver_tcp_rmem_max_bytes,omitempty"`
	SenderWmemMax   int64    `json:"sender_tcp_wmem_max_bytes,omitempty"`
}

// ReplicaBound is one limit on a stream's rate in a what-if.
type ReplicaBound struct {
	Limit    string  `json:"limit"` // window, loss, link, cpu
	Capacity float64 `json:"capacity_bytes_per_second"`
	// Formula says how it was reckoned, with the figures.
	Formula string `json:"formula"`
	// Applies is false for a bound shown but not used (loss, when the
	// measured stream beat the formula at its own RTT).
	Applies bool `json:"applies"`
}

// ReplicaWhatIf is the plan under one change.
type ReplicaWhatIf struct {
	What      string  `json:"what"`                 // "rtt 80ms", "log ×2"
	RTT       Seconds `json:"rtt_seconds"`          // the RTT planned
	LogFactor float64 `json:"log_factor,omitempty"` // the log rate multiplied by
	Capacity  float64 `json:"capacity_bytes_per_second"`
	LimitedBy string  `json:"limited_by"`
	// Window is the window the window bound used, and WindowFrom where it
	// came from ("the peer window the stream had", "the receiver's
	// tcp_rmem maximum × 0.5", ...).
	Window     int64          `json:"window_bytes,omitempty"`
	WindowFrom string         `json:"window_from,omitempty"`
	Bounds     []ReplicaBound `json:"bounds"`
	Verdict    string         `json:"verdict"`
	Cases      []ReplicaCase  `json:"cases"`
	Link       *ReplicaCase   `json:"link,omitempty"`
}

// Tuning states of a setting against what a window needs.
const (
	TuningEnough  = "enough"  // the current setting allows it: no command
	TuningRaise   = "raise"   // too small: Command raises it
	TuningUnknown = "unknown" // not known here: Check reads it, IfBelow raises it
)

// Tuning is one host's setting that bounds a stream's window, against
// what the window needs. A Command only ever raises: every number in it is
// at least the current one, and there is none when the current setting is
// enough or not known.
type Tuning struct {
	Host    string `json:"host"`              // the replica's host, the primary
	OS      string `json:"os,omitempty"`      // linux, windows; "" not known
	Setting string `json:"setting,omitempty"` // net.ipv4.tcp_rmem, autotuninglevel
	// Current is the setting as read ("4096 131072 6291456"); "" not known.
	Current string `json:"current,omitempty"`
	// CurrentMax is the largest buffer the current setting allows; 0 not known.
	CurrentMax int64  `json:"current_max_bytes,omitempty"`
	Needed     int64  `json:"needed_bytes"` // the maximum the window needs
	Status     string `json:"status"`
	Command    string `json:"command,omitempty"`
	// Check reads a setting not known here; IfBelow is what to run when
	// it reads below Needed.
	Check   string `json:"check,omitempty"`
	IfBelow string `json:"if_below,omitempty"`
	Note    string `json:"note,omitempty"`
}
