package result

// Database engines a synchronous-replica plan models.
const (
	SyncPostgres  = "postgres"
	SyncSQLServer = "sqlserver"
	SyncMySQL     = "mysql"
)

// Figure is one time a plan is composed from, and where it came from.
type Figure struct {
	Seconds Seconds `json:"seconds"`
	// Source is "measured", "measured on the agent", "assumed" (given by
	// hand with --assume) or "measured (FILE)" for a saved run.
	Source string `json:"source"`
	// What says how it was measured, e.g. "8 KiB write + fdatasync p50, /pg/wal".
	What string `json:"what,omitempty"`
}

// SyncParts are the figures a synchronous-replica plan is composed from;
// nil is a part that was neither measured nor given.
type SyncParts struct {
	// CommitNow is a small commit's latency today, as one session waits
	// for it (the statement's round trip, its execution, the local log
	// flush), without a synchronous replica.
	CommitNow *Figure `json:"commit_now,omitempty"`
	// LocalFlush is one small log write made durable on the primary's log
	// path (8 KiB write + fdatasync, as PostgreSQL on Linux flushes).
	LocalFlush *Figure `json:"local_flush,omitempty"`
	// RTT is one round trip to the replica's host.
	RTT *Figure `json:"rtt,omitempty"`
	// RemoteFlush is the replica's side of one block: its write and its
	// flush; RemoteWrite its write alone.
	RemoteFlush *Figure `json:"remote_flush,omitempty"`
	RemoteWrite *Figure `json:"remote_write,omitempty"`
	// RemoteFlushCheck is a second measure of the replica's log flush in
	// the same run (the disk test's 8 KiB write + fdatasync on the agent,
	// where net commit measured RemoteFlush): when the two disagree the
	// plan concludes from neither.
	RemoteFlushCheck *Figure `json:"remote_flush_check,omitempty"`
	// RemoteCommit is a whole remote acknowledgement measured at once: a
	// block sent, written and flushed on the replica's host, and acknowledged
	// (`narrows net commit --ack flush`, one block in flight); RemoteReceipt
	// the same up to the write (`--ack write`). Where they are known they
	// are used instead of RTT + RemoteFlush (and RTT + RemoteWrite).
	RemoteCommit  *Figure `json:"remote_commit,omitempty"`
	RemoteReceipt *Figure `json:"remote_receipt,omitempty"`
	// Throughput is the log a bulk operation can ship to a synchronous
	// replica (`net commit --ack flush --in-flight N`, or one stream).
	Throughput *Rate `json:"throughput,omitempty"`
}

// SyncPlan is `narrows plan sync`: what a synchronous replica costs each
// commit, by engine, and a maintenance operation's time.
type SyncPlan struct {
	Parts   SyncParts    `json:"parts"`
	Engines []SyncEngine `json:"engines"`
	// Operation is given with --op-log and --op-time.
	Operation *SyncOperation `json:"operation,omitempty"`
	Notes     []string       `json:"notes"`
}

// SyncEngine is one engine's synchronous commit.
type SyncEngine struct {
	Engine string `json:"engine"`
	// Setting is what makes the replica synchronous, in the engine's words.
	Setting string `json:"setting"`
	// Formula is how the commit latency was composed, in words.
	Formula string `json:"formula"`
	// AddedSeconds is what a synchronous replica adds to each commit.
	AddedSeconds float64 `json:"added_commit_latency_seconds"`
	// CommitNowSeconds is a commit today (0 when unknown); Predicted the
	// commit with the synchronous replica.
	CommitNowSeconds              float64 `json:"commit_latency_now_seconds,omitempty"`
	PredictedCommitLatencySeconds float64 `json:"predicted_commit_latency_seconds"`
	CommitsPerSecondNow           float64 `json:"commits_per_second_now,omitempty"`
	PredictedCommitsPerSecond     float64 `json:"predicted_commits_per_second"`
	// Missing names the parts this engine's figure lacked (then it is
	// not predicted).
	Missing []string `json:"missing,omitempty"`
}

// SyncOperation is a maintenance operation (an index rebuild, a bulk
// load) that writes LogBytes of log and takes AloneSeconds without a
// replica.
type SyncOperation struct {
	LogBytes     int64   `json:"log_bytes"`
	AloneSeconds float64 `json:"alone_seconds"`
	// ThroughputBytesPerSecond is the log's crossing rate the times are
	// composed with (SyncParts.Throughput).
	ThroughputBytesPerSecond float64 `json:"throughput_bytes_per_second"`
	// ShipSeconds is LogBytes over the throughput.
	ShipSeconds float64 `json:"ship_seconds"`
	// AsyncSeconds is the operation with an asynchronous replica (the
	// primary waits for nothing); AsyncBehindSeconds how long after it
	// returned the replica has all its log (the RPO then), and
	// AsyncBehindBytes the log not yet shipped when it returned.
	AsyncSeconds       float64 `json:"async_seconds"`
	AsyncBehindSeconds float64 `json:"async_behind_seconds"`
	AsyncBehindBytes   int64   `json:"async_behind_bytes"`
	// SyncSeconds is the operation with a synchronous replica: no faster
	// than its log crosses (the larger of AloneSeconds and ShipSeconds);
	// SyncAtWorstSeconds if none of the shipping overlaps its own work
	// (AloneSeconds + ShipSeconds).
	SyncSeconds        float64 `json:"predicted_sync_seconds"`
	SyncAtWorstSeconds float64 `json:"predicted_sync_at_worst_seconds"`
	// LimitedBy is "log shipping" or "the operation itself".
	LimitedBy string `json:"limited_by"`
}
