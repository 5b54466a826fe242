package result

import "github.com/narrows/narrows/internal/metric"

// Disk is the summary of `narrows disk`.
type Disk struct {
	Config DiskConfig `json:"config"`
	// Path is the directory whose filesystem was measured (or the block
	// device, with Device).
	Path   string `json:"path"`
	Device bool   `json:"device,omitempty"`
	// Agent is where it ran when not here: the address of the agent
	// (`narrows serve`) that measured its own storage (`disk --to`).
	Agent      string `json:"agent,omitempty"`
	Filesystem string `json:"filesystem,omitempty"` // e.g. ext4, xfs, tmpfs; empty when unknown
	// FileBytes is the size of the test file (or of the device region read).
	FileBytes int64 `json:"file_bytes"`
	// Engine is io_uring (Linux), iocp (Windows: overlapped I/O on an I/O
	// completion port) or portable (a pool of threads doing pread and
	// pwrite); EngineNote says why the system's own was not used.
	Engine     string `json:"engine"`
	EngineNote string `json:"engine_note,omitempty"`
	// Direct is true when the cache was bypassed (O_DIRECT; Windows:
	// FILE_FLAG_NO_BUFFERING); DirectUnavailable says why not when it was
	// wanted. IO names the mechanisms in the system's own words.
	Direct            bool    `json:"direct"`
	DirectUnavailable string  `json:"direct_unavailable,omitempty"`
	IO                *DiskIO `json:"io,omitempty"`
	// Layout is the time taken to write the test file before measuring.
	Layout   Seconds       `json:"layout_seconds,omitempty"`
	Patterns []DiskPattern `json:"patterns"`
}

// DiskIO names how the I/O was done, in the words of the system that did
// it. Records made before it was kept have none: they are Linux's
// (O_DIRECT, RWF_DSYNC, fdatasync, the page cache).
type DiskIO struct {
	// Direct is the system's open flag that bypasses the cache, used when
	// Disk.Direct is true: O_DIRECT, or FILE_FLAG_NO_BUFFERING.
	Direct string `json:"direct"`
	// Dsync is what made each write of a dsync pattern durable on its
	// own: RWF_DSYNC (O_DSYNC for one write), O_SYNC, or
	// FILE_FLAG_WRITE_THROUGH (SQL Server's log).
	Dsync string `json:"dsync"`
	// Flush is the call after each write of a fdatasync pattern:
	// fdatasync, fsync, or FlushFileBuffers.
	Flush string `json:"flush"`
	// Cache is what buffered I/O goes through: the page cache, or
	// Windows' system file cache.
	Cache string `json:"cache"`
}

// DirectWord is the name of the flag that bypasses the cache, for text
// that names it.
func (d *Disk) DirectWord() string {
	if d.IO != nil && d.IO.Direct != "" {
		return d.IO.Direct
	}
	return "O_DIRECT"
}

// CacheWord is the name of the cache buffered I/O goes through.
func (d *Disk) CacheWord() string {
	if d.IO != nil && d.IO.Cache != "" {
		return d.IO.Cache
	}
	return "page cache"
}

// DiskConfig is what was asked for.
type DiskConfig struct {
	Profiles  []string `json:"profiles"`
	Duration  Seconds  `json:"duration_seconds"` // for each pattern
	Interval  Seconds  `json:"interval_seconds"`
	FileBytes int64    `json:"file_bytes"`
	Buffered  bool     `json:"buffered"`
	Engine    string   `json:"engine"` // auto, io_uring, iocp or portable
	Seed      uint64   `json:"seed"`
}

// Disk profiles.
const (
	ProfileData   = "data"
	ProfileLog    = "log"
	ProfileBackup = "backup"
	ProfileCustom = "custom"
)

// Sync modes of a write pattern.
const (
	SyncNone      = "none"
	SyncFdatasync = "fdatasync" // each write followed by fdatasync
	SyncDsync     = "dsync"     // each write durable on its own (O_DSYNC)
)

// DiskPattern is the summary of one pattern (one line of a profile).
type DiskPattern struct {
	Profile     string `json:"profile"`
	Name        string `json:"name"` // e.g. "randread 8 KiB QD8"
	RW          string `json:"rw"`   // read, write, randread, randwrite, mix
	ReadPercent int    `json:"read_percent,omitempty"`
	BlockBytes  int64  `json:"block_bytes"`
	QueueDepth  int    `json:"queue_depth"` // outstanding I/Os per thread
	Threads     int    `json:"threads"`
	Sync        string `json:"sync"` // none, fdatasync, dsync
	// ThroughCache: this pattern wrote through the cache (Disk.IO.Cache)
	// though the run bypassed it: the log's fdatasync patterns on Linux,
	// written as PostgreSQL and MySQL write their log there.
	ThroughCache bool `json:"through_cache,omitempty"`

	Duration   Seconds `json:"duration_seconds"`
	IOs        int64   `json:"ios"`
	Bytes      int64   `json:"bytes"`
	IOPS       float64 `json:"iops"`
	Throughput float64 `json:"bytes_per_second"`
	// The latency of each I/O, from the system call that submitted it to
	// its completion. With fdatasync it is a whole commit: the write and
	// then its flush; with dsync the write, which returns once durable.
	Latencies
	// Histogram is the latencies' histogram, kept when asked for (a
	// fleet's hosts: merged, the fleet's true percentiles).
	Histogram *metric.Sparse `json:"histogram,omitempty"`
	// Read and Write split a mix.
	Read  *DiskDirection `json:"read,omitempty"`
	Write *DiskDirection `json:"write,omitempty"`
	// With a sync mode: flushes completed (each write made durable), and
	// with fdatasync the write and the flush timed apart.
	Flushes      int64      `json:"flushes,omitempty"`
	FlushRate    float64    `json:"flushes_per_second,omitempty"`
	WriteLatency *Latencies `json:"write_latency,omitempty"`
	FlushLatency *Latencies `json:"flush_latency,omitempty"`

	// CPU is what narrows used while the pattern ran, in percent of one core.
	CPU            float64 `json:"cpu_percent_of_core,omitempty"`
	CPUUnavailable string  `json:"cpu_unavailable,omitempty"`
	// CPULimitCores is the CPU limit narrows ran under (its cgroup's
	// quota ÷ period: a container's or a service's), absent with none;
	// CPUThrottledShare the share of the limit's periods during the
	// pattern in which it used up its quota and was held off the CPU.
	CPULimitCores     float64 `json:"cpu_limit_cores,omitempty"`
	CPUThrottledShare float64 `json:"cpu_throttled_share,omitempty"`
	// Stopped says why the pattern ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// DiskDirection is the read or the write side of a mix.
type DiskDirection struct {
	IOs        int64   `json:"ios"`
	IOPS       float64 `json:"iops"`
	Throughput float64 `json:"bytes_per_second"`
	Latencies
}

// DiskInterval is the disk part of an interval record.
type DiskInterval struct {
	Profile  string  `json:"profile"`
	Pattern  string  `json:"pattern"`
	IOs      int64   `json:"ios"`
	Bytes    int64   `json:"bytes"`
	IOPS     float64 `json:"iops"`
	ByteRate float64 `json:"bytes_per_second"`
	// Latency is the pattern's headline latency (a whole commit for log
	// patterns); FlushLatency the fdatasync alone.
	Latency      Latencies  `json:"latency"`
	FlushLatency *Latencies `json:"flush_latency,omitempty"`
}
