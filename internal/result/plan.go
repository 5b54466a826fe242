package result

// Rate is one stage's rate in a plan, and where the figure came from.
type Rate struct {
	BytesPerSecond float64 `json:"bytes_per_second"`
	// Source is "measured", "assumed" (given by hand with --assume) or the
	// file a saved run was read from.
	Source string `json:"source"`
	// What says how it was measured, e.g. "sequential read 1 MiB QD8, /data".
	What string `json:"what,omitempty"`
}

// StreamRate is the network's rate with a number of parallel streams.
type StreamRate struct {
	Streams int `json:"streams"`
	Rate
}

// CodecRate is one codec's speed and ratio on one side.
type CodecRate struct {
	Codec string `json:"codec"` // lz4, zstd, gzip (with a level: zstd-3, gzip-6)
	Side  string `json:"side"`  // SideSource or SideTarget
	// CompressPerCore is uncompressed bytes taken in per second by one
	// core; DecompressPerCore uncompressed bytes given out.
	CompressPerCore   float64 `json:"compress_bytes_per_second_per_core"`
	DecompressPerCore float64 `json:"decompress_bytes_per_second_per_core"`
	// Ratio is uncompressed over compressed bytes (3 = a third of the size).
	Ratio float64 `json:"ratio"`
	// CompressShare and DecompressShare are the share of a core the
	// measuring thread got (its CPU time over wall time), 0 when not
	// known: well under 1, the host was busy, and a backup's one thread
	// there gets that much of the per-core rate.
	CompressShare   float64 `json:"compress_share_of_core,omitempty"`
	DecompressShare float64 `json:"decompress_share_of_core,omitempty"`
	// Sample says what was compressed: a path, or "synthetic".
	Sample string `json:"sample,omitempty"`
	Source string `json:"source"`
}

// Sides of a backup: the database host (where narrows runs) and the
// backup host (the agent).
const (
	SideSource = "source"
	SideTarget = "target"
)

// BackupStages are the rates a backup plan is composed from. A nil rate
// (or no network figure) is a stage that was not measured; the plan then
// cannot name it as the limit, and says so.
type BackupStages struct {
	SourceRead  *Rate        `json:"source_read,omitempty"`  // the data path, read by a backup
	SourceWrite *Rate        `json:"source_write,omitempty"` // the data path, written by a restore
	TargetWrite *Rate        `json:"target_write,omitempty"` // the backup path on the agent, written by a backup
	TargetRead  *Rate        `json:"target_read,omitempty"`  // the backup path, read by a restore
	NetworkOut  []StreamRate `json:"network_out,omitempty"`  // database host → backup host
	NetworkIn   []StreamRate `json:"network_in,omitempty"`   // backup host → database host
	Codecs      []CodecRate  `json:"codecs,omitempty"`
	SourceCores int          `json:"source_cores,omitempty"`
	TargetCores int          `json:"target_cores,omitempty"`
}

// Backup engines a plan can model.
const (
	EngineGeneric      = "generic"
	EnginePGBaseBackup = "pg_basebackup"
	EnginePGBackRest   = "pgbackrest"
	EngineSQLServer    = "sqlserver"
)

// Stages a cell can be limited by.
const (
	StageSourceDisk  = "source_disk"
	StageNetwork     = "network"
	StageTargetDisk  = "target_disk"
	StageCompress    = "compression_cpu"
	StageDecompress  = "decompression_cpu"
	StageUnmeasured  = "unmeasured" // no stage of the pipeline was measured
	StageCannotJudge = "cannot_judge"
	CompressionNone  = "none"
	CompressAtSource = SideSource
	CompressAtTarget = SideTarget
)

// BackupPlan is `narrows plan backup`: for each size and compression, how
// long a backup and a restore take and which stage limits each.
type BackupPlan struct {
	Engine string `json:"engine"`
	// Files is the backup files (SQL Server), processes (pgBackRest's
	// process-max) or streams the backup runs; Streams and Threads what
	// the engine makes of it.
	Files   int `json:"files"`
	Streams int `json:"streams"`
	Threads int `json:"compression_threads"`
	// CompressAt is the side that compresses (decompression is always on
	// the database host, where a restore writes).
	CompressAt string       `json:"compress_at"`
	RTO        Seconds      `json:"rto_seconds,omitempty"`
	Stages     BackupStages `json:"stages"`
	Cells      []BackupCell `json:"cells"`
	// Notes are the engine facts the model used and what it cannot know.
	Notes []string `json:"notes"`
}

// BackupCell is one size × compression.
type BackupCell struct {
	SizeBytes   int64  `json:"size_bytes"`
	Compression string `json:"compression"`
	// BackupBytes is what the backup holds (the size over the ratio).
	BackupBytes       int64   `json:"backup_bytes"`
	BackupSeconds     float64 `json:"backup_seconds"`
	RestoreSeconds    float64 `json:"restore_seconds"`
	BackupRate        float64 `json:"backup_bytes_per_second"`  // of database bytes
	RestoreRate       float64 `json:"restore_bytes_per_second"` // of database bytes
	BackupBottleneck  string  `json:"backup_bottleneck"`
	RestoreBottleneck string  `json:"restore_bottleneck"`
	// BackupAlso and RestoreAlso are the stages whose rates are within
	// the plan's margin of the bottleneck's: the measurements cannot tell
	// which of them sets the pace, and the plan names them all.
	BackupAlso  []string `json:"backup_bottleneck_also,omitempty"`
	RestoreAlso []string `json:"restore_bottleneck_also,omitempty"`
	// SyncSeconds is part of BackupSeconds: pg_basebackup flushes the
	// files it wrote before it exits (unless --no-sync), and what the
	// backup host's page cache still holds then is written at the backup
	// path's rate.
	SyncSeconds float64 `json:"final_sync_seconds,omitempty"`
	// CannotJudge says why the backup's time is not judged and what to
	// run instead; BackupSeconds is then the least it can take.
	CannotJudge string `json:"backup_cannot_judge,omitempty"`
	// ZeroingSeconds is part of RestoreSeconds: SQL Server without Instant
	// File Initialization writes zeros over the data files first.
	ZeroingSeconds float64 `json:"zeroing_seconds,omitempty"`
	// RTOMet is whether the restore fits the RTO, when one was given.
	RTOMet *bool `json:"rto_met,omitempty"`
}
