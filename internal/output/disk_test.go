package output_test

import (
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

func us(f float64) result.Seconds { return result.Seconds(f * float64(time.Microsecond)) }

func lat(p50, p90, p99, p999, max float64) result.Latencies {
	return result.Latencies{Min: us(p50 * 0.6), Mean: us(p50 * 1.05), P50: us(p50), P90: us(p90), P99: us(p99), P999: us(p999), Max: us(max)}
}

// diskFixture is a fixed run on an SSD-backed ext4 volume: a few patterns
// of each profile, two interval records, and the advisor's findings.
func diskFixture() ([]result.Interval, *result.Report) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rep := result.NewReport("disk", "/var/lib/postgresql", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	sec := result.Seconds(3 * time.Second)
	w, f := lat(21, 25, 40, 80, 900), lat(410, 520, 1900, 4800, 9000)
	d := &result.Disk{
		Config: result.DiskConfig{Profiles: []string{"data", "log", "backup"}, Duration: sec, Interval: result.Seconds(time.Second),
			FileBytes: 1 << 30, Engine: "auto", Seed: 1},
		Path: "/var/lib/postgresql", Filesystem: "ext4", FileBytes: 1 << 30, Engine: "io_uring", Direct: true, Layout: result.Seconds(1800 * time.Millisecond),
		Patterns: []result.DiskPattern{
			{Profile: "data", Name: "randread 8 KiB QD1", RW: "randread", BlockBytes: 8192, QueueDepth: 1, Threads: 1, Sync: "none",
				Duration: sec, IOs: 36_000, Bytes: 36_000 * 8192, IOPS: 12_000, Throughput: 98_304_000, Latencies: lat(80, 95, 140, 400, 2100), CPU: 21},
			{Profile: "data", Name: "randread 8 KiB QD32", RW: "randread", BlockBytes: 8192, QueueDepth: 32, Threads: 1, Sync: "none",
				Duration: sec, IOs: 390_000, Bytes: 390_000 * 8192, IOPS: 130_000, Throughput: 1_064_960_000, Latencies: lat(240, 290, 420, 900, 5000), CPU: 88},
			{Profile: "data", Name: "mix 70/30 8 KiB QD8", RW: "mix", ReadPercent: 70, BlockBytes: 8192, QueueDepth: 8, Threads: 1, Sync: "none",
				Duration: sec, IOs: 180_000, Bytes: 180_000 * 8192, IOPS: 60_000, Throughput: 491_520_000, Latencies: lat(120, 150, 260, 700, 3000), CPU: 55,
				Read:  &result.DiskDirection{IOs: 126_000, IOPS: 42_000, Throughput: 344_064_000, Latencies: lat(115, 140, 240, 650, 3000)},
				Write: &result.DiskDirection{IOs: 54_000, IOPS: 18_000, Throughput: 147_456_000, Latencies: lat(130, 170, 300, 800, 2900)}},
			{Profile: "log", Name: "write 4 KiB + fdatasync", RW: "write", BlockBytes: 4096, QueueDepth: 1, Threads: 1, Sync: "fdatasync",
				Duration: sec, IOs: 6_900, Bytes: 6_900 * 4096, IOPS: 2_300, Throughput: 9_420_800, Latencies: lat(431, 545, 1940, 4880, 9100),
				Flushes: 6_900, FlushRate: 2_300, WriteLatency: &w, FlushLatency: &f, CPU: 9},
			{Profile: "log", Name: "write 4 KiB O_DSYNC", RW: "write", BlockBytes: 4096, QueueDepth: 1, Threads: 1, Sync: "dsync",
				Duration: sec, IOs: 7_500, Bytes: 7_500 * 4096, IOPS: 2_500, Throughput: 10_240_000, Latencies: lat(395, 500, 1700, 4100, 8000),
				Flushes: 7_500, FlushRate: 2_500, CPU: 7},
			{Profile: "backup", Name: "read 1 MiB QD8", RW: "read", BlockBytes: 1 << 20, QueueDepth: 8, Threads: 1, Sync: "none",
				Duration: sec, IOs: 3_000, Bytes: 3_000 << 20, IOPS: 1_000, Throughput: 1_048_576_000, Latencies: lat(7900, 8100, 8400, 10700, 11400), CPU: 8},
			{Profile: "backup", Name: "write 1 MiB QD8", RW: "write", BlockBytes: 1 << 20, QueueDepth: 8, Threads: 1, Sync: "none",
				Duration: result.Seconds(1200 * time.Millisecond), IOs: 600, Bytes: 600 << 20, IOPS: 500, Throughput: 524_288_000,
				Latencies: lat(15000, 17000, 21000, 30000, 31000), CPU: 4, Stopped: "interrupted"},
		},
	}
	rep.Disk = d
	rep.Partial, rep.Error = true, "interrupted"
	rep.Findings = advisor.Advise(rep)
	iv1 := result.NewInterval("disk", 0, time.Second)
	iv1.Disk = &result.DiskInterval{Profile: "data", Pattern: "randread 8 KiB QD1", IOs: 12_000, Bytes: 12_000 * 8192, IOPS: 12_000,
		ByteRate: 98_304_000, Latency: lat(80, 95, 140, 400, 2100)}
	iv2 := result.NewInterval("disk", time.Second, 2*time.Second)
	iv2.Disk = &result.DiskInterval{Profile: "log", Pattern: "write 4 KiB + fdatasync", IOs: 2_300, Bytes: 2_300 * 4096, IOPS: 2_300,
		ByteRate: 9_420_800, Latency: lat(431, 545, 1940, 4880, 9100), FlushLatency: &f}
	return []result.Interval{iv1, iv2}, rep
}

// diskCustomFixture is a custom run of four committers on ext4 (a name
// longer than any column) and one of buffered random writes.
func diskCustomFixture() ([]result.Interval, *result.Report) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rep := result.NewReport("disk", "/var/lib/postgresql", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	sec := result.Seconds(2 * time.Second)
	w, f := lat(103, 283, 3330, 20300, 80900), lat(164, 389, 2090, 4980, 44100)
	commit := lat(348, 783, 4830, 21900, 81200)
	rep.Disk = &result.Disk{
		Config: result.DiskConfig{Profiles: []string{"custom"}, Duration: sec, Interval: result.Seconds(time.Second), FileBytes: 64 << 20, Engine: "auto", Seed: 1},
		Path:   "/var/lib/postgresql", Filesystem: "ext4", FileBytes: 64 << 20, Engine: "io_uring", Direct: true, Layout: result.Seconds(83 * time.Millisecond),
		Patterns: []result.DiskPattern{
			{Profile: "custom", Name: "randwrite 4 KiB + fdatasync ×4 threads", RW: "randwrite", BlockBytes: 4096, QueueDepth: 1, Threads: 4, Sync: "fdatasync",
				Duration: sec, IOs: 13_222, Bytes: 13_222 * 4096, IOPS: 6_611, Throughput: 27_079_000, Latencies: commit,
				Flushes: 13_222, FlushRate: 6_611, WriteLatency: &w, FlushLatency: &f, CPU: 59},
		},
	}
	rep.Findings = advisor.Advise(rep)
	iv := result.NewInterval("disk", 0, time.Second)
	iv.Disk = &result.DiskInterval{Profile: "custom", Pattern: "randwrite 4 KiB + fdatasync ×4 threads", IOs: 7_423, Bytes: 7_423 * 4096, IOPS: 7_423,
		ByteRate: 30_404_608, Latency: commit, FlushLatency: &f}
	return []result.Interval{iv}, rep
}
