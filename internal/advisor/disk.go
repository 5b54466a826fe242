package advisor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// Thresholds behind the disk findings.
const (
	// LogCommitSlow: a commit (log write + flush) p99 above this is felt
	// by every transaction; SSD-backed logs flush well under it.
	LogCommitSlow = 2 * time.Millisecond
	// LogFlushTooFast: media do not make data durable this fast; a flush
	// below it is a power-loss-protected cache or one that ignores flushes.
	LogFlushTooFast = 50 * time.Microsecond
	// LogWriteFlushTooFast is the same for a flush that also writes the
	// data out of the page cache (a pattern written through the cache, as
	// PostgreSQL writes its WAL): NAND programs a page in 200 µs or more,
	// so a write and its flush durable in under half that are a cache
	// answering. (An ext4 on a loop device over memory read 54 µs; this
	// machine's virtual disk 125-150 µs.)
	LogWriteFlushTooFast = 100 * time.Microsecond
	// DataReadSlow: random page reads one at a time slower than this at
	// the p99 make index lookups and nested loops crawl.
	DataReadSlow = 20 * time.Millisecond
	// SmallFile: a test file smaller than this can sit in a controller's or
	// SAN's cache, and random reads then measure the cache.
	SmallFile = 8 << 30
)

const tib = 1 << 40

func disk(d *result.Disk) []result.Finding {
	limited, d := cpuLimitedPatterns(d)
	place, cache := diskPlace(d)
	out := append(limited, place...)
	floor := floorPattern(d)
	if f, ok := logFloor(floor); ok {
		out = append(out, f)
	}
	out = append(out, logMore(d)...)
	out = append(out, customPatterns(d, floor)...)
	if f, ok := dataScaling(d); ok {
		out = append(out, f)
	}
	if f, ok := backupTime(d); ok {
		out = append(out, f)
	}
	return append(out, cache...)
}

// cpuLimitedPatterns takes out of d the patterns that a CPU limit (a
// container's) held narrows off the CPU during, in CPULimitTail of its
// periods or more: their latencies include the waits for the next period
// and their rates are the limit's, so nothing is concluded from them. It
// says so, naming them.
func cpuLimitedPatterns(d *result.Disk) ([]result.Finding, *result.Disk) {
	var names []string
	var worst result.DiskPattern
	kept := make([]result.DiskPattern, 0, len(d.Patterns))
	for _, p := range d.Patterns {
		if p.CPULimitCores > 0 && p.CPUThrottledShare >= CPULimitTail {
			names = append(names, p.Name)
			if p.CPUThrottledShare > worst.CPUThrottledShare {
				worst = p
			}
			continue
		}
		kept = append(kept, p)
	}
	if len(names) == 0 {
		return nil, d
	}
	where := "here"
	if d.Agent != "" {
		where = "on the agent's host"
	}
	share := fmt.Sprintf("%.0f%% of the limit's periods", 100*worst.CPUThrottledShare)
	if len(names) > 1 {
		share = fmt.Sprintf("up to %s, in %s", share, worst.Name)
	}
	c := *d
	c.Patterns = kept
	return []result.Finding{{Code: "disk.cpu_limited", Severity: "warning",
		Summary: fmt.Sprintf("Not the storage's figures: narrows runs %s under a CPU limit of %.3g of a core (its cgroup's quota), which held it off the CPU during %s (%s).",
			where, worst.CPULimitCores, strings.Join(names, ", "), share),
		Detail: "An I/O that completes while narrows is held off waits for the next period, so those patterns' latencies include the waits and their rates are the limit's: " +
			"nothing is concluded from them. A database in the same container meets the same limit. Measure the storage from a host or container without it.",
		Values: map[string]float64{"cpu_limit_cores": worst.CPULimitCores, "cpu_throttled_share": worst.CPUThrottledShare, "patterns": float64(len(names))}}}, &c
}

func patternsOf(d *result.Disk, profile string) []result.DiskPattern {
	var ps []result.DiskPattern
	for _, p := range d.Patterns {
		if p.Profile == profile && p.IOs > 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// memoryBacked says the filesystem lives in RAM: its figures are memory's.
func memoryBacked(d *result.Disk) bool { return d.Filesystem == "tmpfs" || d.Filesystem == "ramfs" }

// diskPlace: when the figures are not the disk's (first), and a cache
// that may stand in front of it (last).
func diskPlace(d *result.Disk) (out, cache []result.Finding) {
	if memoryBacked(d) {
		out = append(out, result.Finding{Code: "disk.memory_backed", Severity: "warning",
			Summary: fmt.Sprintf("%s is on %s: these figures are memory, not a disk.", d.Path, d.Filesystem),
			Detail:  "Measure the directory that holds the database's data or log files; a database on a RAM filesystem loses everything at a reboot."})
	}
	if !d.Direct {
		why := "--buffered asked for the " + d.CacheWord()
		if d.DirectUnavailable != "" {
			why = d.DirectUnavailable
		}
		out = append(out, result.Finding{Code: "disk.buffered", Severity: "warning",
			Summary: "Measured through the " + d.CacheWord() + ", not straight to the device: " + why + ".",
			Detail: "Reads may be served from memory and writes land in memory until flushed, so IOPS and MB/s can overstate the device. " +
				"The log figures still include the flush to the device. Databases that use " + d.DirectWord() + " (InnoDB, SQL Server, Oracle) see the device's own figures."})
	}
	reads := false
	for _, p := range d.Patterns {
		reads = reads || p.RW == "randread" || p.RW == "mix" || p.RW == "read"
	}
	if !d.Device && d.FileBytes < SmallFile && reads && !memoryBacked(d) {
		cache = append(cache, result.Finding{Code: "disk.small_test_file", Severity: "info",
			Summary: fmt.Sprintf("The test file is %s: a RAID controller or SAN cache of that size can serve the reads.", metric.FormatBytes(d.FileBytes)),
			Detail:  "To measure the disks behind a cache, use --size larger than the cache (e.g. --size 32G on a SAN volume), and a --duration long enough to get past it.",
			Values:  map[string]float64{"file_bytes": float64(d.FileBytes)}})
	}
	return out, cache
}

// floorPattern is the pattern that shows the flush under every commit:
// the smallest log write followed by fdatasync (a commit record is a few
// KiB), else one committer of a custom pattern; nil if none ran.
func floorPattern(d *result.Disk) *result.DiskPattern {
	var best *result.DiskPattern
	for _, p := range patternsOf(d, result.ProfileLog) {
		if p.Sync == result.SyncFdatasync && (best == nil || p.BlockBytes < best.BlockBytes) {
			best = &p
		}
	}
	if best == nil {
		for _, p := range patternsOf(d, result.ProfileCustom) {
			if p.Sync != result.SyncNone && p.Threads == 1 {
				best = &p
				break
			}
		}
	}
	return best
}

// logFloor: the flush under every commit, read from floorPattern's pick.
func logFloor(best *result.DiskPattern) (result.Finding, bool) {
	if best == nil || best.P50 <= 0 {
		return result.Finding{}, false
	}
	p50, p99 := best.P50.D(), best.P99.D()
	perSec, perSecP99 := 1/p50.Seconds(), 1/p99.Seconds()
	f := result.Finding{Code: "disk.log_commit_floor", Severity: "info",
		Summary: fmt.Sprintf("Every commit waits for its log flush: %s took %s at the median, %s at p99 — at most %s commits/s for one session (%s/s at the p99).",
			best.Name, metric.FormatDuration(p50), metric.FormatDuration(p99), metric.FormatCount(int64(perSec+0.5)), metric.FormatCount(int64(perSecP99+0.5))),
		Detail: "A session that commits after each change (autocommit, an OLTP row, a document posting) cannot commit faster than the log device flushes, whatever the CPU: " +
			"SQL Server shows the wait as WRITELOG, PostgreSQL as WALSync, MySQL with innodb_flush_log_at_trx_commit=1 as log flush time. " +
			"Concurrent sessions share flushes (group commit), so the server as a whole can do more; one session cannot. Batch work into fewer commits, or put the log on storage that flushes faster.",
		Values: map[string]float64{"commit_p50_seconds": p50.Seconds(), "commit_p99_seconds": p99.Seconds(),
			"single_session_commits_per_second": perSec, "single_session_commits_per_second_at_p99": perSecP99}}
	if best.FlushLatency != nil {
		f.Values["flush_p50_seconds"] = best.FlushLatency.P50.D().Seconds()
		f.Values["flush_p99_seconds"] = best.FlushLatency.P99.D().Seconds()
	}
	if p99 > LogCommitSlow {
		f.Severity = "warning"
		f.Summary += fmt.Sprintf(" Slow for a transaction log (p99 over %s).", metric.FormatDuration(LogCommitSlow))
	}
	return f, true
}

// logMore: the tail, the sync method, and flushes too fast to be true.
func logMore(d *result.Disk) []result.Finding {
	var out []result.Finding
	logs := patternsOf(d, result.ProfileLog)
	type key struct {
		block int64
		sync  string
	}
	byKey := map[key]result.DiskPattern{}
	var sizes []int64
	for _, p := range logs {
		byKey[key{p.BlockBytes, p.Sync}] = p
		sizes = append(sizes, p.BlockBytes)
	}
	slices.Sort(sizes)
	// The tail, on the worst pattern.
	var worst *result.DiskPattern
	for _, p := range logs {
		if p.P50 > 0 && p.P999.D() > time.Millisecond && float64(p.P999) > 10*float64(p.P50) && (worst == nil || p.P999 > worst.P999) {
			worst = &p
		}
	}
	if worst != nil {
		out = append(out, result.Finding{Code: "disk.log_tail", Severity: "warning",
			Summary: fmt.Sprintf("1 in 1,000 commits (%s) waited %s or more, %.0f× the median %s.",
				worst.Name, metric.FormatDuration(worst.P999.D()), float64(worst.P999)/float64(worst.P50), metric.FormatDuration(worst.P50.D())),
			Detail: "Users feel these stalls as the occasional slow save. Look for other writers on the same device, a full write cache, garbage collection in the SSD, or a throttled cloud volume.",
			Values: map[string]float64{"commit_p99_9_seconds": worst.P999.D().Seconds(), "p99_9_to_p50_ratio": float64(worst.P999) / float64(worst.P50)}})
	}
	// fdatasync against O_DSYNC, at the smallest size that has both.
	for _, bs := range slices.Compact(sizes) {
		fd, ok1 := byKey[key{bs, result.SyncFdatasync}]
		ds, ok2 := byKey[key{bs, result.SyncDsync}]
		if !ok1 || !ok2 || fd.P50 <= 0 || ds.P50 <= 0 {
			continue
		}
		ratio := float64(fd.P50) / float64(ds.P50)
		faster, slower, by := ds, fd, ratio
		if ratio < 1 {
			faster, slower, by = fd, ds, 1/ratio
		}
		out = append(out, result.Finding{Code: "disk.log_sync_method", Severity: "info",
			Summary: fmt.Sprintf("%s commits at %s (p50), %s at %s: %.2f× apart.",
				faster.Name, metric.FormatDuration(faster.P50.D()), slower.Name, metric.FormatDuration(slower.P50.D()), by),
			Detail: "SQL Server writes its log write-through (as O_DSYNC); PostgreSQL's wal_sync_method picks between fdatasync (its Linux default) and open_datasync (O_DSYNC); " +
				"MySQL's innodb_flush_method O_DSYNC does the same for InnoDB. Where one is clearly faster on this storage, that setting is worth testing.",
			Values: map[string]float64{"fdatasync_commit_p50_seconds": fd.P50.D().Seconds(), "dsync_commit_p50_seconds": ds.P50.D().Seconds()}})
		break
	}
	// Flushes faster than media.
	if d.Direct && !memoryBacked(d) {
		for _, p := range logs {
			limit := LogFlushTooFast
			if p.ThroughCache {
				limit = LogWriteFlushTooFast
			}
			if p.FlushLatency != nil && p.FlushLatency.P50 > 0 && p.FlushLatency.P50.D() < limit {
				out = append(out, result.Finding{Code: "disk.log_flush_fast", Severity: "info",
					Summary: fmt.Sprintf("A flush took only %s at the median: that is a write cache answering, not the media.", metric.FormatDuration(p.FlushLatency.P50.D())),
					Detail: "Safe when the cache survives a power cut (an enterprise SSD with power-loss protection, a battery-backed controller); " +
						"if not, or if a hypervisor acknowledges flushes it has not done (e.g. a virtual disk with cache=unsafe), a crash can lose committed transactions. Check before trusting commits to it.",
					Values: map[string]float64{"flush_p50_seconds": p.FlushLatency.P50.D().Seconds()}})
				break
			}
		}
	}
	return out
}

// customPatterns reads each --profile custom pattern in a DBA's words, so
// that every shape a person asks for is explained (the profiles' findings
// read their own patterns only); floor is the one logFloor already read.
func customPatterns(d *result.Disk, floor *result.DiskPattern) []result.Finding {
	var out []result.Finding
	for _, p := range patternsOf(d, result.ProfileCustom) {
		if floor != nil && p.Name == floor.Name || p.P50 <= 0 {
			continue
		}
		p50, p99 := metric.FormatDuration(p.P50.D()), metric.FormatDuration(p.P99.D())
		f := result.Finding{Code: "disk.custom_pattern", Severity: "info",
			Values: map[string]float64{"iops": p.IOPS, "bytes_per_second": p.Throughput,
				"latency_p50_seconds": p.P50.D().Seconds(), "latency_p99_seconds": p.P99.D().Seconds()}}
		rate := fmt.Sprintf("%s IOPS (%s)", metric.FormatCount(int64(p.IOPS+0.5)), metric.FormatByteRate(p.Throughput))
		inFlight := fmt.Sprintf("%d in flight", p.QueueDepth*p.Threads)
		switch {
		case p.Sync != result.SyncNone:
			each := p.FlushRate / float64(p.Threads)
			who := "one committer"
			if p.Threads > 1 {
				who = fmt.Sprintf("%d committers at once", p.Threads)
			}
			f.Summary = fmt.Sprintf("%s: %s made %s commits/s (%s)", p.Name, who, metric.FormatCount(int64(p.FlushRate+0.5)), metric.FormatByteRate(p.Throughput))
			if p.Threads > 1 {
				f.Summary += fmt.Sprintf(", %s/s each", metric.FormatCount(int64(each+0.5)))
			}
			f.Summary += fmt.Sprintf("; a commit waited %s at the median, %s at p99.", p50, p99)
			f.Detail = "Each thread writes and waits until the write is durable before the next, as a session commits; several at once show how the storage serves flushes side by side. " +
				"A database shares one flush between concurrent commits (group commit), so the server can do more; one session cannot commit faster than its flushes."
			f.Values["commits_per_second"], f.Values["commits_per_second_per_session"] = p.FlushRate, each
		case p.RW == "mix" && p.Read != nil && p.Write != nil:
			f.Summary = fmt.Sprintf("%s: %s, %s; reads p50 %s (p99 %s), writes p50 %s (p99 %s).", p.Name, rate, inFlight,
				metric.FormatDuration(p.Read.P50.D()), metric.FormatDuration(p.Read.P99.D()), metric.FormatDuration(p.Write.P50.D()), metric.FormatDuration(p.Write.P99.D()))
			f.Detail = "Reads and writes at random, as lookups and a checkpoint's page writes share a data volume. " + writesMean(d)
		case p.RW == "read" || p.RW == "randread":
			f.Summary = fmt.Sprintf("%s: %s, %s; each read p50 %s, p99 %s.", p.Name, rate, inFlight, p50, p99)
			f.Detail = "One read in flight is what one session's page reads get (an index lookup, a nested loop); more in flight is what many sessions, read-ahead or parallel scans get."
			if p.RW == "read" {
				f.Detail = "Sequential reads are what a full scan, a backup or a replica's seeding gets; more in flight is what read-ahead and parallel workers add."
			}
		default:
			f.Summary = fmt.Sprintf("%s: %s, %s; each write p50 %s, p99 %s.", p.Name, rate, inFlight, p50, p99)
			f.Detail = "Writes with no flush, as a checkpoint or background writer writes data pages and flushes them later, in bulk. " + writesMean(d)
		}
		out = append(out, f)
	}
	return out
}

// writesMean says what a write with no flush after it measures here.
func writesMean(d *result.Disk) string {
	if !d.Direct {
		return "They are durable only once flushed; buffered, a write only copies into the " + d.CacheWord() + ", so this is memory's rate until the cache fills."
	}
	return "They are durable only once flushed; a device with a write cache may take them faster than its media can."
}

// dataScaling: what one session gets against what a busy server gets.
func dataScaling(d *result.Disk) (result.Finding, bool) {
	byQD := map[int]result.DiskPattern{}
	for _, p := range patternsOf(d, result.ProfileData) {
		if p.RW == "randread" && p.Threads == 1 {
			byQD[p.QueueDepth] = p
		}
	}
	one, ok := byQD[1]
	if !ok {
		return result.Finding{}, false
	}
	f := result.Finding{Code: "disk.data_random_reads", Severity: "info",
		Values: map[string]float64{"qd1_iops": one.IOPS, "qd1_latency_p50_seconds": one.P50.D().Seconds(), "qd1_latency_p99_seconds": one.P99.D().Seconds()}}
	f.Summary = fmt.Sprintf("Random %s page reads: one at a time %s IOPS (p50 %s, p99 %s)",
		metric.FormatBytes(one.BlockBytes), metric.FormatCount(int64(one.IOPS+0.5)), metric.FormatDuration(one.P50.D()), metric.FormatDuration(one.P99.D()))
	deepest := one
	for _, qd := range []int{8, 32} {
		if p, ok := byQD[qd]; ok {
			f.Summary += fmt.Sprintf("; %d in flight %s IOPS", qd, metric.FormatCount(int64(p.IOPS+0.5)))
			f.Values[fmt.Sprintf("qd%d_iops", qd)] = p.IOPS
			deepest = p
		}
	}
	f.Summary += "."
	f.Detail = "One session reading pages one after another (an index lookup, a nested loop, a PostgreSQL index scan) gets the first figure; " +
		"a busy server with many sessions, or read-ahead and parallel scans, get the deeper ones."
	if deepest.QueueDepth > 1 && one.IOPS > 0 {
		scale := deepest.IOPS / one.IOPS
		f.Values["scaling_ratio"] = scale
		if scale < 1.5 {
			f.Detail += fmt.Sprintf(" Here %d in flight gave only %.1f× one at a time: the storage (or its queue in the hypervisor) serves one request at a time, so concurrency will not buy throughput.", deepest.QueueDepth, scale)
		} else {
			f.Detail += fmt.Sprintf(" Here %d in flight gave %.1f× one at a time: the storage has parallelism that only concurrent I/O uses.", deepest.QueueDepth, scale)
		}
	}
	if one.P99.D() > DataReadSlow {
		f.Severity = "warning"
		f.Summary += fmt.Sprintf(" Slow: 1%% of page reads took over %s.", metric.FormatDuration(DataReadSlow))
	}
	return f, true
}

// backupTime: MB/s as the hours a DBA plans around.
func backupTime(d *result.Disk) (result.Finding, bool) {
	var rd, wr float64
	for _, p := range patternsOf(d, result.ProfileBackup) {
		switch p.RW {
		case "read":
			rd = p.Throughput
		case "write":
			wr = p.Throughput
		}
	}
	if rd <= 0 && wr <= 0 {
		return result.Finding{}, false
	}
	f := result.Finding{Code: "disk.backup_time", Severity: "info", Values: map[string]float64{}}
	var parts []string
	if rd > 0 {
		parts = append(parts, fmt.Sprintf("reading 1 TiB at %s takes %s", metric.FormatByteRate(rd), hoursMinutes(tib/rd)))
		f.Values["read_bytes_per_second"], f.Values["read_seconds_per_tib"] = rd, tib/rd
	}
	if wr > 0 {
		parts = append(parts, fmt.Sprintf("writing it at %s %s", metric.FormatByteRate(wr), hoursMinutes(tib/wr)))
		f.Values["write_bytes_per_second"], f.Values["write_seconds_per_tib"] = wr, tib/wr
	}
	f.Summary = "Backup and restore: " + parts[0]
	if len(parts) > 1 {
		f.Summary += "; " + parts[1]
	}
	f.Summary += "."
	f.Detail = "A full backup reads every data file at the first rate (or at the backup target's write rate, if slower: run narrows disk --path on the backup volume too); " +
		"a restore, or seeding a replica, writes the data files at the second, before the log is replayed. Compression trades CPU for fewer bytes written."
	return f, true
}

func hoursMinutes(seconds float64) string {
	if math.IsInf(seconds, 0) || math.IsNaN(seconds) {
		return "forever"
	}
	m := int64(math.Round(seconds / 60))
	switch {
	case m < 1:
		return "under a minute"
	case m < 60:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}
