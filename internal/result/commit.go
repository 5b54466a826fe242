package result

// Acknowledgement points of `narrows net commit`: when the agent answers
// a log block. They are the synchronous-commit settings of the engines:
// PostgreSQL's synchronous_commit remote_write (write) and on (flush),
// SQL Server's harden-on-secondary (flush), MySQL semi-sync AFTER_SYNC
// (the replica's receipt, written to its relay log: write).
const (
	AckReceive = "receive" // the block is read off the socket
	AckWrite   = "write"   // written to the agent's file (in its page cache)
	AckFlush   = "flush"   // made durable (FlushFdatasync or FlushDsync)
)

// How the agent makes a block durable with AckFlush.
const (
	FlushFdatasync = "fdatasync" // write, then fdatasync (PostgreSQL's wal_sync_method on Linux)
	FlushDsync     = "dsync"     // the file is opened O_DSYNC: each write returns durable
)

// Commit is the summary of `narrows net commit`: synchronous log shipping,
// emulated. The client sends log blocks on one connection; the agent
// writes each to its own file inside a directory its operator allowed and
// acknowledges it at Config.Ack. With one block in flight each block is a
// commit one session waits for; with more, the figures are the log
// throughput a bulk operation reaches with a synchronous replica.
type Commit struct {
	Config CommitConfig `json:"config"`
	// Connect is the TCP handshake of the connection the blocks travel on.
	Connect Seconds `json:"connect_seconds"`
	// Commits are the blocks acknowledged; Bytes their payload.
	Commits  int64   `json:"commits"`
	Bytes    int64   `json:"bytes"`
	Duration Seconds `json:"duration_seconds"`
	// Rate is commits acknowledged per second; BytesPerSecond the log
	// throughput.
	Rate           float64 `json:"commits_per_second"`
	BytesPerSecond float64 `json:"bytes_per_second"`
	// Latency is each block's, from the client's send to its
	// acknowledgement: the commit latency a synchronous replica adds.
	Latency Latencies `json:"commit_latency"`
	// Agent is what the agent timed of its own part, per block: its write
	// and its flush (absent for what the acknowledgement point skips).
	// With more than one block in flight, per batch: the blocks that
	// arrived while the last batch was written, written and flushed
	// together. With FlushDsync the write returns durable and is timed as
	// AgentFlush alone.
	AgentWrite *Latencies `json:"agent_write_latency,omitempty"`
	AgentFlush *Latencies `json:"agent_flush_latency,omitempty"`
	// Flushes is how many flushes the agent made: fewer than Commits when
	// it made several blocks durable at once (blocks that arrived while
	// it flushed, as a walreceiver does).
	Flushes int64 `json:"flushes,omitempty"`
	// Target is the agent's file system where it wrote (absent with
	// AckReceive).
	Target *Disk `json:"target,omitempty"`
	// KernelRTT is the kernel's smoothed RTT of the connection (TCP_INFO).
	KernelRTT      Seconds  `json:"kernel_rtt_seconds,omitempty"`
	KernelMinRTT   Seconds  `json:"kernel_min_rtt_seconds,omitempty"`
	Retransmits    int64    `json:"retransmits"`
	TCPUnavailable string   `json:"tcp_unavailable,omitempty"`
	CPU            CPU      `json:"cpu"`
	Notes          []string `json:"notes,omitempty"`
	Stopped        string   `json:"stopped,omitempty"`
}

// CommitConfig is what was asked for.
type CommitConfig struct {
	BlockBytes int64  `json:"block_bytes"`
	InFlight   int    `json:"in_flight"`
	Ack        string `json:"ack"`
	Flush      string `json:"flush,omitempty"` // with AckFlush
	// Path is the directory on the agent the file went in.
	Path     string  `json:"path,omitempty"`
	Duration Seconds `json:"duration_seconds"`
	Interval Seconds `json:"interval_seconds"`
}

// CommitInterval is the net commit part of an interval record: the
// blocks acknowledged in it and their latencies.
type CommitInterval struct {
	Commits        int64     `json:"commits"`
	Bytes          int64     `json:"bytes"`
	Rate           float64   `json:"commits_per_second"`
	BytesPerSecond float64   `json:"bytes_per_second"`
	Latency        Latencies `json:"commit_latency"`
}

// ProbeCommit names net commit's interval records.
const ProbeCommit = "commit"
