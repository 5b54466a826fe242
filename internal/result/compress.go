package result

// Compression is the compression probe's summary: how fast one core
// compresses and decompresses a sample with each codec a backup can use,
// and how small the sample gets.
type Compression struct {
	Sample CompressionSample `json:"sample"`
	Config CompressionConfig `json:"config"`
	// Cores is the logical CPUs of the host that measured.
	Cores  int           `json:"cores"`
	Codecs []CodecResult `json:"codecs"`
	// CPUTimeUnavailable says why rates per core are over wall time rather
	// than the measuring thread's CPU time (they then fall when the machine
	// is busy with something else).
	CPUTimeUnavailable string `json:"cpu_time_unavailable,omitempty"`
	// Stopped says why the run ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// CompressionConfig is what was asked for.
type CompressionConfig struct {
	Codecs []string `json:"codecs"`
	// Duration is the time measured for each codec and direction, at least
	// one whole pass over the sample when compressing.
	Duration Seconds `json:"duration_seconds"`
	// ChunkBytes is the size of each write into a compressor and of each
	// read out of a decompressor, as a backup feeds its buffers.
	ChunkBytes int64 `json:"chunk_bytes"`
	// Threads is the threads of the parallel run (1: per core only).
	Threads int `json:"threads"`
}

// Kinds of sample.
const (
	SampleSynthetic = "synthetic" // generated pages (see internal/probe/compress)
	SamplePath      = "path"      // read from the files under a directory
	SampleReceived  = "received"  // bytes a client sent to the agent
)

// CompressionSample says what was compressed.
type CompressionSample struct {
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
	// What is one line for a person: "synthetic database pages (seed 1)",
	// "64 MiB in 256 chunks of 212 files under /var/lib/postgresql/16/main".
	What string `json:"what"`
	Seed uint64 `json:"seed,omitempty"` // synthetic

	// With a path: the directory (or file) sampled, the regular files found
	// under it and their bytes, the files read from, and what was left out.
	Path       string `json:"path,omitempty"`
	FilesFound int    `json:"files_found,omitempty"`
	TreeBytes  int64  `json:"tree_bytes,omitempty"`
	FilesRead  int    `json:"files_read,omitempty"`
	// FilesUnreadable could not be opened or read (permissions, a file
	// removed meanwhile); DirsUnreadable could not be listed.
	FilesUnreadable int `json:"files_unreadable,omitempty"`
	DirsUnreadable  int `json:"dirs_unreadable,omitempty"`
	// SymlinksSkipped were not followed: a tablespace or pg_wal linked
	// from elsewhere is not in the sample.
	SymlinksSkipped int `json:"symlinks_skipped,omitempty"`
	// Truncated says the walk stopped at its limit of files.
	Truncated bool `json:"truncated,omitempty"`
}

// CodecResult is one codec at one level.
type CodecResult struct {
	Codec     string `json:"codec"`     // gzip-6, zstd-3, lz4
	Algorithm string `json:"algorithm"` // gzip, zstd, lz4
	Level     int    `json:"level"`
	// Implementation names the library and its setting, which are not the
	// C libraries a backup tool links (see the package documentation).
	Implementation string `json:"implementation"`
	// Ratio is the sample's bytes over CompressedBytes, one whole pass.
	Ratio           float64 `json:"ratio"`
	CompressedBytes int64   `json:"compressed_bytes"`
	// Compress and Decompress are one thread, as one backup process uses
	// one core; Parallel the same with several threads at once.
	Compress   CodecPass      `json:"compress"`
	Decompress CodecPass      `json:"decompress"`
	Parallel   *CodecParallel `json:"parallel,omitempty"`
	// Stopped says why this codec ended early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// CodecPass is one direction on one thread.
type CodecPass struct {
	// Bytes is uncompressed bytes: taken in by the compressor, or given out
	// by the decompressor.
	Bytes int64   `json:"bytes"`
	Wall  Seconds `json:"wall_seconds"`
	// CPU is the measuring thread's CPU time (absent where the platform
	// cannot say).
	CPU Seconds `json:"cpu_seconds,omitempty"`
	// PerCore is Bytes over CPU (over Wall without CPU).
	PerCore float64 `json:"bytes_per_second_per_core"`
	// CPUPercent is CPU over Wall: well below 100, the core was shared
	// with other work and Wall overstates the time the codec needed.
	CPUPercent float64 `json:"cpu_percent_of_core,omitempty"`
}

// CodecParallel is several threads compressing (then decompressing) the
// sample at once, each with its own compressor.
type CodecParallel struct {
	Threads int `json:"threads"`
	// Rates are all threads together over the wall time of the run.
	Compress        float64 `json:"compress_bytes_per_second"`
	Decompress      float64 `json:"decompress_bytes_per_second"`
	CompressBytes   int64   `json:"compress_bytes"`
	DecompressBytes int64   `json:"decompress_bytes"`
	CompressWall    Seconds `json:"compress_wall_seconds"`
	DecompressWall  Seconds `json:"decompress_wall_seconds"`
	// Scaling is the parallel compression rate over Threads times the
	// per-core rate: 1 is perfect, less is cores shared, memory bandwidth
	// or turbo clocks falling.
	Scaling float64 `json:"scaling"`
}

// CodecRates turns the figures into the plan's stage rates for one side
// (SideSource: the database host; SideTarget: the backup host). A codec
// cut short before it had both rates and a ratio is left out.
func (c *Compression) CodecRates(side, source string) []CodecRate {
	if c == nil {
		return nil
	}
	if source == "" {
		source = "measured"
	}
	sample := c.Sample.Kind
	if c.Sample.Path != "" {
		sample = c.Sample.Path
	}
	out := []CodecRate{}
	for _, r := range c.Codecs {
		if r.Ratio <= 0 || r.Compress.PerCore <= 0 || r.Decompress.PerCore <= 0 {
			continue
		}
		out = append(out, CodecRate{Codec: r.Codec, Side: side, CompressPerCore: r.Compress.PerCore,
			DecompressPerCore: r.Decompress.PerCore, Ratio: r.Ratio, Sample: sample, Source: source,
			CompressShare: min(1, r.Compress.CPUPercent/100), DecompressShare: min(1, r.Decompress.CPUPercent/100)})
	}
	return out
}
