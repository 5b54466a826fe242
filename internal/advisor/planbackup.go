package advisor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// BackupInput is what a backup plan is asked: the stage rates, measured or
// assumed, and the backups to plan.
type BackupInput struct {
	Stages result.BackupStages
	// Sizes are database sizes in bytes; Compressions "none" or a codec
	// whose rates Stages holds (lz4, zstd-3, gzip-6, ...).
	Sizes        []int64
	Compressions []string
	Engine       string // result.Engine*; "" is generic
	// Files is the backup files, processes or streams (see BackupPlan);
	// 0 is 1.
	Files int
	// CompressAt overrides the side the engine compresses on.
	CompressAt string
	RTO        time.Duration
	// IFI: SQL Server's Instant File Initialization is on (no zeroing of
	// the data files before a restore).
	IFI bool
	// SizeNote says where a size came from (the server's own accounting).
	SizeNote string
}

// A backup is a pipeline: the database host reads its files, one side
// compresses, the network carries, the backup host writes, all at once;
// a restore runs it backwards and decompresses on the database host. Each
// stage's rate is turned into database bytes per second (a stage that
// moves compressed bytes carries ratio times as much database), and the
// slowest stage sets the pace of the whole: that is the cell's bottleneck.
// What precedes or follows the copy (SQL Server zeroing its data files,
// PostgreSQL replaying WAL, recovery) is added where it can be known and
// named where it cannot.

// PlanBackup composes the plan. It fails only on a question it cannot
// answer: a compression with no figures, or no stage measured at all.
func PlanBackup(in BackupInput) (result.BackupPlan, error) {
	p := result.BackupPlan{Engine: in.Engine, Files: max(1, in.Files), Stages: in.Stages, RTO: result.Seconds(in.RTO),
		Cells: []result.BackupCell{}, Notes: []string{}}
	if p.Engine == "" {
		p.Engine = result.EngineGeneric
	}
	p.Streams, p.Threads = p.Files, p.Files
	p.CompressAt = result.CompressAtSource
	switch p.Engine {
	case result.EngineGeneric:
		if p.Files == 1 {
			p.Notes = append(p.Notes, "One stream reads, compresses and sends the whole backup, on one core.")
		} else {
			p.Notes = append(p.Notes, fmt.Sprintf("%d streams, each reading, compressing and sending its share on its own core.", p.Files))
		}
	case result.EnginePGBaseBackup:
		p.Threads = 1
		p.CompressAt = result.CompressAtTarget
		p.Notes = append(p.Notes,
			fmt.Sprintf("pg_basebackup sends one stream per tablespace (%s here) and compresses on one thread, on the machine it runs on (the backup host) unless told server-side (--compress=server-...; --compress-at source).", metric.Plural(int64(p.Files), "tablespace")),
			"pg_basebackup does not restore: the restore is modelled as copying the backup back, one stream per tablespace, decompressed on one thread.")
	case result.EnginePGBackRest:
		p.Notes = append(p.Notes, fmt.Sprintf("pgBackRest (and WAL-G) run process-max = %d processes, each reading, compressing (on the database host) and sending one file at a time; a restore runs as many.", p.Files))
	case result.EngineSQLServer:
		p.Notes = append(p.Notes, fmt.Sprintf("SQL Server writes one stream per backup file (%s), compressing on the database server.", metric.Plural(int64(p.Files), "file")))
		if in.IFI {
			p.Notes = append(p.Notes, "Instant File Initialization is on: the data files are not zeroed before a restore (the log file always is; it is not in this plan).")
		} else {
			p.Notes = append(p.Notes, "Without Instant File Initialization, SQL Server writes zeros over the data files before it restores into them: that is added to each restore, at the data path's write rate.")
		}
	default:
		return p, fmt.Errorf("unknown backup engine %q: use generic, pg_basebackup, pgbackrest or sqlserver", in.Engine)
	}
	if in.CompressAt != "" {
		p.CompressAt = in.CompressAt
	}
	switch p.Engine {
	case result.EngineGeneric:
		p.Notes = append(p.Notes, "A restore ends here when the files are in place; the database's own recovery (PostgreSQL's WAL replay, SQL Server's redo) comes after and is not in this plan.")
	case result.EnginePGBaseBackup, result.EnginePGBackRest:
		p.Notes = append(p.Notes, "A restore ends here when the files are in place; PostgreSQL then replays the WAL written during the backup, which depends on the write load and is not in this plan.")
	case result.EngineSQLServer:
		p.Notes = append(p.Notes, "A restore ends here when the pages are in place; SQL Server then runs recovery (redo and undo of the log backed up), which depends on the load and is not in this plan.")
	}
	if in.SizeNote != "" {
		p.Notes = append(p.Notes, in.SizeNote)
	}
	if p.Engine == result.EnginePGBaseBackup {
		if in.Stages.TargetWrite != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("pg_basebackup flushes the files it wrote before it exits (unless --no-sync): each backup includes writing what the backup host's page cache still holds then, what arrived in the last %s (Linux's vm.dirty_expire_centisecs default), at the backup path's write rate.", metric.FormatHours(DirtyExpire.Seconds())))
		} else {
			p.Notes = append(p.Notes, "pg_basebackup flushes the files it wrote before it exits (unless --no-sync): not in this plan, the backup path's write was not measured.")
		}
	}
	s := in.Stages
	var unmeasured []string
	for _, st := range []struct {
		name string
		ok   bool
	}{{"the data path's read", s.SourceRead != nil}, {"the data path's write", s.SourceWrite != nil},
		{"the backup path's write", s.TargetWrite != nil}, {"the backup path's read", s.TargetRead != nil},
		{"the network to the backup host", len(s.NetworkOut) > 0}, {"the network back", len(s.NetworkIn) > 0}} {
		if !st.ok {
			unmeasured = append(unmeasured, st.name)
		}
	}
	if len(unmeasured) > 0 {
		p.Notes = append(p.Notes, "Not measured, so never named as the limit: "+strings.Join(unmeasured, ", ")+".")
	}
	for _, dir := range []struct {
		rates []result.StreamRate
		what  string
	}{{s.NetworkOut, "to the backup host"}, {s.NetworkIn, "back"}} {
		if r := streamRate(dir.rates, p.Streams); r != nil && r.Streams != p.Streams {
			p.Notes = append(p.Notes, fmt.Sprintf("The network %s was measured with %s, not %d: the plan uses that figure.", dir.what, metric.Plural(int64(r.Streams), "stream"), p.Streams))
		}
	}
	for _, c := range s.Codecs {
		if c.CompressShare > 0 && c.CompressShare < BusyShare && slices.ContainsFunc(in.Compressions, func(n string) bool { return codec([]result.CodecRate{c}, n, c.Side) != nil }) {
			p.Notes = append(p.Notes, fmt.Sprintf("The %s was busy when %s was measured: its thread got %.0f%% of a core, so the plan compresses at %s a thread (%s on a core of its own); measure again when the host is as it will be during the backup.",
				sideWord(c.Side), c.Codec, 100*c.CompressShare, metric.FormatByteRate(c.CompressPerCore*got(c.CompressShare)), metric.FormatByteRate(c.CompressPerCore)))
		}
	}
	for _, c := range in.Compressions {
		for _, size := range in.Sizes {
			cell, err := planCell(p, in, c, size)
			if err != nil {
				return p, err
			}
			p.Cells = append(p.Cells, cell)
		}
	}
	return p, nil
}

// stage is one step of a pipeline in database bytes per second.
type stage struct {
	name string
	rate float64
}

// slowest is the stage that sets the pipeline's pace, among those
// measured, and the others within BottleneckMargin of it.
func slowest(stages []stage) (stage, []string, bool) {
	best, ok := stage{}, false
	for _, s := range stages {
		if s.rate > 0 && (!ok || s.rate < best.rate) {
			best, ok = s, true
		}
	}
	var also []string
	for _, s := range stages {
		if ok && s.rate > 0 && s.name != best.name && s.rate <= best.rate*(1+BottleneckMargin) && !slices.Contains(also, s.name) {
			also = append(also, s.name)
		}
	}
	return best, also, ok
}

// BottleneckMargin is how close two stages' rates must be for the plan
// to name both: a codec's rate on one machine moves by about a fifth when
// it is busy, and the one measured is a different process's than the
// backup tool's (pg_basebackup's gzip on the backup host set the pace at
// 0.78 of the rate the plan gave the line it named).
const BottleneckMargin = 0.25

// DirtyExpire is how long Linux lets a written page stay in the page
// cache before its flusher writes it (vm.dirty_expire_centisecs, 3000 by
// default): what a backup wrote in its last DirtyExpire is still to be
// written when it syncs.
const DirtyExpire = 30 * time.Second

func planCell(p result.BackupPlan, in BackupInput, compression string, size int64) (result.BackupCell, error) {
	s := in.Stages
	cell := result.BackupCell{SizeBytes: size, Compression: compression}
	ratio := 1.0
	var comp, decomp float64 // database bytes per second, all threads
	serverSide := p.Engine == result.EnginePGBaseBackup && p.CompressAt == result.CompressAtSource && compression != result.CompressionNone
	if compression != result.CompressionNone {
		c := codec(s.Codecs, compression, p.CompressAt)
		d := codec(s.Codecs, compression, result.SideSource)
		if c == nil || d == nil {
			side := p.CompressAt
			if c != nil {
				side = result.SideSource
			}
			return cell, fmt.Errorf("compression %s: no figures for it on the %s side: measure it (--compression) or give it with --assume", compression, sideWord(side))
		}
		ratio = c.Ratio
		cell.Compression = c.Codec // the level planned: "zstd" is zstd-3 when that was measured
		comp = c.CompressPerCore * got(c.CompressShare) * float64(threads(p.Threads, cores(s, p.CompressAt)))
		decomp = d.DecompressPerCore * got(d.DecompressShare) * float64(threads(p.Threads, s.SourceCores))
		if serverSide {
			// Only the least time is given: the codec on a core of its
			// own, however busy the host was when measured.
			comp = c.CompressPerCore * float64(threads(p.Threads, cores(s, p.CompressAt)))
		}
	}
	// The wire carries compressed bytes when the database host compresses.
	wireRatio := ratio
	if p.CompressAt == result.CompressAtTarget {
		wireRatio = 1
	}
	backup := []stage{{result.StageSourceDisk, rate(s.SourceRead, 1)}}
	if compression != result.CompressionNone {
		backup = append(backup, stage{result.StageCompress, comp})
	}
	backup = append(backup, stage{result.StageNetwork, streamBytes(s.NetworkOut, p.Streams) * wireRatio},
		stage{result.StageTargetDisk, rate(s.TargetWrite, ratio)})
	restore := []stage{{result.StageTargetDisk, rate(s.TargetRead, ratio)},
		{result.StageNetwork, streamBytes(s.NetworkIn, p.Streams) * ratio}}
	if compression != result.CompressionNone {
		restore = append(restore, stage{result.StageDecompress, decomp})
	}
	restore = append(restore, stage{result.StageSourceDisk, rate(s.SourceWrite, 1)})

	b, bAlso, okB := slowest(backup)
	r, rAlso, okR := slowest(restore)
	if !okB && !okR {
		return cell, errors.New("no stage of the backup was measured or assumed: nothing to plan from")
	}
	cell.BackupBytes = int64(math.Round(float64(size) / ratio))
	cell.BackupBottleneck, cell.RestoreBottleneck = result.StageUnmeasured, result.StageUnmeasured
	if okB {
		cell.BackupRate, cell.BackupBottleneck, cell.BackupAlso = b.rate, b.name, bAlso
		cell.BackupSeconds = float64(size) / b.rate
		if p.Engine == result.EnginePGBaseBackup && s.TargetWrite != nil && s.TargetWrite.BytesPerSecond > 0 {
			// pg_basebackup fsyncs every file it wrote before it exits;
			// what the flusher has not yet written is what arrived in the
			// last DirtyExpire (all of it, for a backup shorter than that).
			written := float64(cell.BackupBytes)
			dirty := min(written, written/cell.BackupSeconds*DirtyExpire.Seconds())
			cell.SyncSeconds = dirty / s.TargetWrite.BytesPerSecond
			cell.BackupSeconds += cell.SyncSeconds
			cell.BackupRate = float64(size) / cell.BackupSeconds
		}
		if serverSide {
			// The walsender reads, compresses and sends in one process,
			// one after another, at a pace the codec alone does not set:
			// issue 25 found a plan from the codec's rate at 0.30 of a
			// real server-side zstd backup on a quiet machine.
			// What the plan knows is the least it takes.
			cell.CannotJudge = fmt.Sprintf("cannot judge server-side compression: the server's walsender reads, compresses and sends in one process, at a pace the codec's own rate does not give; run pg_basebackup --compress=server-%s once and time it", pgCompressSpec(cell.Compression))
			cell.BackupBottleneck, cell.BackupAlso = result.StageCannotJudge, nil
		}
	}
	if okR {
		cell.RestoreRate, cell.RestoreBottleneck, cell.RestoreAlso = r.rate, r.name, rAlso
		cell.RestoreSeconds = float64(size) / r.rate
		if p.Engine == result.EngineSQLServer && !in.IFI && s.SourceWrite != nil && s.SourceWrite.BytesPerSecond > 0 {
			cell.ZeroingSeconds = float64(size) / s.SourceWrite.BytesPerSecond
			cell.RestoreSeconds += cell.ZeroingSeconds
			cell.RestoreRate = float64(size) / cell.RestoreSeconds
		}
		if in.RTO > 0 {
			met := cell.RestoreSeconds <= in.RTO.Seconds()
			cell.RTOMet = &met
		}
	}
	return cell, nil
}

// got is the share of a core a backup's thread gets on a host as busy as
// it was when the codec was measured: the per-core rate is over the
// thread's CPU time, which on a busy host is a fraction of the wall time
// it took (on the testbed's 2 cores at a load of 11, pg_basebackup's gzip
// on the backup host ran at a third of narrows' per-core figure and left
// a 400 Mbit/s line 64% idle). Unknown (0) is a whole core; less than a
// tenth is taken as a tenth, a reading too small to plan on.
func got(share float64) float64 {
	if share <= 0 || share >= 1 {
		return 1
	}
	return max(share, 0.1)
}

// BusyShare is the share of a core below which the plan says the host was
// busy when its codecs were measured.
const BusyShare = 0.8

// pgCompressSpec is a codec as pg_basebackup's --compress names it:
// "gzip:6", "zstd:3", "lz4".
func pgCompressSpec(codec string) string {
	name, level, ok := strings.Cut(codec, "-")
	if !ok {
		return name
	}
	return name + ":" + level
}

// rate is a disk stage in database bytes per second (0: not measured).
func rate(r *result.Rate, ratio float64) float64 {
	if r == nil {
		return 0
	}
	return r.BytesPerSecond * ratio
}

// streamRate is the network figure for n streams: the one measured with
// the most streams not above n, else the fewest measured.
func streamRate(rates []result.StreamRate, n int) *result.StreamRate {
	var best *result.StreamRate
	for i := range rates {
		r := &rates[i]
		switch {
		case best == nil:
			best = r
		case r.Streams <= n && (best.Streams > n || r.Streams > best.Streams):
			best = r
		case r.Streams > n && best.Streams > n && r.Streams < best.Streams:
			best = r
		}
	}
	return best
}

func streamBytes(rates []result.StreamRate, n int) float64 {
	if r := streamRate(rates, n); r != nil {
		return r.BytesPerSecond
	}
	return 0
}

// codec finds a codec's figures on one side; "zstd" matches "zstd-3".
func codec(cs []result.CodecRate, name, side string) *result.CodecRate {
	for i := range cs {
		c := &cs[i]
		if c.Side == side && (c.Codec == name || strings.HasPrefix(c.Codec, name+"-") && !slices.ContainsFunc(cs, func(o result.CodecRate) bool { return o.Side == side && o.Codec == name })) {
			return c
		}
	}
	return nil
}

// threads is how many cores the compression gets: its threads, at most the
// cores there are (0: not known, the threads).
func threads(n, cores int) int {
	if cores > 0 {
		return max(1, min(n, cores))
	}
	return max(1, n)
}

func cores(s result.BackupStages, side string) int {
	if side == result.SideTarget {
		return s.TargetCores
	}
	return s.SourceCores
}

func sideWord(side string) string {
	if side == result.SideTarget {
		return "backup host (agent)"
	}
	return "database host"
}

// LimitedBy names a cell's bottleneck with the stages the measurements
// cannot tell from it: "the network or compression (CPU), within 25%".
func LimitedBy(stage string, also []string) string {
	w := words.Stages(stage, also)
	if len(also) == 0 {
		return w
	}
	return fmt.Sprintf("%s (within %.0f%% of each other: either may set the pace)", w, 100*BottleneckMargin)
}

// backupPlan turns a plan into findings: the largest backup's answer, the
// RTO verdict, and the what-ifs that would change the answer most.
func backupPlan(p *result.BackupPlan) []result.Finding {
	if len(p.Cells) == 0 {
		return nil
	}
	var out []result.Finding
	// The largest size, without compression if planned, else the first.
	big := p.Cells[0]
	for _, c := range p.Cells {
		if c.SizeBytes > big.SizeBytes || c.SizeBytes == big.SizeBytes && c.Compression == result.CompressionNone {
			big = c
		}
	}
	out = append(out, result.Finding{Code: "plan.backup_largest", Severity: "info",
		Summary: fmt.Sprintf("%s (%s): backup %s; restore %s, limited by %s.",
			metric.FormatDecimalBytes(big.SizeBytes), big.Compression, backupWords(big),
			metric.FormatHours(big.RestoreSeconds), LimitedBy(big.RestoreBottleneck, big.RestoreAlso)),
		Values: map[string]float64{"size_bytes": float64(big.SizeBytes), "backup_seconds": big.BackupSeconds, "restore_seconds": big.RestoreSeconds}})
	if p.RTO > 0 {
		var missed []result.BackupCell
		for _, c := range p.Cells {
			if c.RTOMet != nil && !*c.RTOMet {
				missed = append(missed, c)
			}
		}
		if len(missed) > 0 {
			m := missed[0]
			for _, c := range missed {
				if c.SizeBytes < m.SizeBytes {
					m = c
				}
			}
			out = append(out, result.Finding{Code: "plan.rto_missed", Severity: "warning",
				Summary: fmt.Sprintf("A restore of %s (%s) takes %s, past the RTO of %s: %s limits it.",
					metric.FormatDecimalBytes(m.SizeBytes), m.Compression, metric.FormatHours(m.RestoreSeconds), metric.FormatHours(p.RTO.D().Seconds()), words.Stage(m.RestoreBottleneck)),
				Values: map[string]float64{"size_bytes": float64(m.SizeBytes), "restore_seconds": m.RestoreSeconds, "rto_seconds": p.RTO.D().Seconds()}})
		}
	}
	out = append(out, whatIfs(p, big)...)
	// What the plan cannot judge is said once, with what to run instead.
	for _, c := range p.Cells {
		if c.CannotJudge != "" {
			out = append(out, result.Finding{Code: "plan.backup_cannot_judge", Severity: "info",
				Summary: fmt.Sprintf("%s with %s compressed on the database server: at least %s; %s.",
					metric.FormatDecimalBytes(c.SizeBytes), c.Compression, metric.FormatHours(c.BackupSeconds), c.CannotJudge),
				Values: map[string]float64{"size_bytes": float64(c.SizeBytes), "backup_least_seconds": c.BackupSeconds}})
			break
		}
	}
	return out
}

// backupWords is a cell's backup: "42.0 s, limited by the network" (with
// the final sync when it counts), or what cannot be judged and the least
// it takes.
func backupWords(c result.BackupCell) string {
	if c.CannotJudge != "" {
		return fmt.Sprintf("at least %s (%s)", metric.FormatHours(c.BackupSeconds), c.CannotJudge)
	}
	w := fmt.Sprintf("%s, limited by %s", metric.FormatHours(c.BackupSeconds), LimitedBy(c.BackupBottleneck, c.BackupAlso))
	if c.SyncSeconds >= 0.05*c.BackupSeconds {
		w += fmt.Sprintf(", %s of it the final sync", metric.FormatHours(c.SyncSeconds))
	}
	return w
}

// whatIfs re-plans the largest cell with the changes a DBA can make: more
// files (where more streams were measured), and each other compression.
func whatIfs(p *result.BackupPlan, big result.BackupCell) []result.Finding {
	in := BackupInput{Stages: p.Stages, Sizes: []int64{big.SizeBytes}, Engine: p.Engine, Files: p.Files, CompressAt: p.CompressAt,
		RTO: p.RTO.D(), IFI: p.Engine == result.EngineSQLServer && !slices.ContainsFunc(p.Cells, func(c result.BackupCell) bool { return c.ZeroingSeconds > 0 })}
	var out []result.Finding
	if p.Engine != result.EnginePGBaseBackup {
		most := 0
		for _, r := range p.Stages.NetworkOut {
			most = max(most, r.Streams)
		}
		if most > p.Files {
			alt := in
			alt.Files, alt.Compressions = most, []string{big.Compression}
			if q, err := PlanBackup(alt); err == nil && len(q.Cells) == 1 {
				c := q.Cells[0]
				if c.BackupSeconds < 0.9*big.BackupSeconds || c.RestoreSeconds < 0.9*big.RestoreSeconds {
					out = append(out, result.Finding{Code: "plan.more_files", Severity: "info",
						Summary: fmt.Sprintf("With %d files: backup %s (limited by %s), restore %s (limited by %s).",
							most, metric.FormatHours(c.BackupSeconds), words.Stage(c.BackupBottleneck), metric.FormatHours(c.RestoreSeconds), words.Stage(c.RestoreBottleneck)),
						Values: map[string]float64{"files": float64(most), "backup_seconds": c.BackupSeconds, "restore_seconds": c.RestoreSeconds}})
				}
			}
		}
	}
	for _, c := range p.Cells {
		if c.SizeBytes != big.SizeBytes || c.Compression == big.Compression {
			continue
		}
		if c.BackupSeconds < 0.9*big.BackupSeconds || c.RestoreSeconds < 0.9*big.RestoreSeconds || c.CannotJudge != "" {
			slower := func(t, than float64) string {
				if t > than*1.1 {
					return ", slower"
				}
				return ""
			}
			bw := fmt.Sprintf("%s (limited by %s%s)", metric.FormatHours(c.BackupSeconds), LimitedBy(c.BackupBottleneck, c.BackupAlso), slower(c.BackupSeconds, big.BackupSeconds))
			if c.CannotJudge != "" {
				bw = fmt.Sprintf("at least %s (%s)", metric.FormatHours(c.BackupSeconds), c.CannotJudge)
			}
			out = append(out, result.Finding{Code: "plan.compression", Severity: "info",
				Summary: fmt.Sprintf("With %s: backup %s, restore %s (limited by %s%s), %s stored.",
					c.Compression, bw,
					metric.FormatHours(c.RestoreSeconds), LimitedBy(c.RestoreBottleneck, c.RestoreAlso), slower(c.RestoreSeconds, big.RestoreSeconds),
					metric.FormatDecimalBytes(c.BackupBytes)),
				Values: map[string]float64{"backup_seconds": c.BackupSeconds, "restore_seconds": c.RestoreSeconds, "backup_bytes": float64(c.BackupBytes)}})
		}
	}
	return out
}

// DiskStages reads the sequential read and write of a disk run (the
// backup profile's 1 MiB at QD8, or any sequential pattern: the fastest
// of each) as the rates a backup reads and a restore writes at.
func DiskStages(d *result.Disk, source string) (read, write *result.Rate) {
	if d == nil {
		return nil, nil
	}
	for _, p := range d.Patterns {
		if p.Stopped != "" || p.Throughput <= 0 || p.Sync != result.SyncNone {
			continue
		}
		r := &result.Rate{BytesPerSecond: p.Throughput, Source: source, What: p.Name + ", " + d.Path}
		switch {
		case p.RW == "read" && (read == nil || r.BytesPerSecond > read.BytesPerSecond):
			read = r
		case p.RW == "write" && (write == nil || r.BytesPerSecond > write.BytesPerSecond):
			write = r
		}
	}
	return read, write
}

// NetworkStages reads a stream run's receiver throughput by direction
// and streams: forward (the client, on the database host, sending to the
// agent on the backup host) is a backup's way, reverse a restore's.
func NetworkStages(s *result.Stream, source string) (out, in []result.StreamRate) {
	if s == nil {
		return nil, nil
	}
	for _, r := range s.Runs {
		if r.Stopped != "" || r.Throughput <= 0 {
			continue
		}
		sr := result.StreamRate{Streams: r.Streams, Rate: result.Rate{BytesPerSecond: r.Throughput / 8, Source: source,
			What: "net stream"}}
		switch r.Direction {
		case "forward":
			out = append(out, sr)
		case "reverse":
			in = append(in, sr)
		}
	}
	return out, in
}

// ScaleToSample carries the agent's codec figures, measured on the
// synthetic pages, over to the database's own sample: the ratio is the
// sample's (it is the data's, whoever compresses it), and each speed moves
// from the pages to the sample as it did on this host. here are this
// host's figures on the pages, sample its figures on the sample.
func ScaleToSample(far, here, sample []result.CodecRate) []result.CodecRate {
	find := func(cs []result.CodecRate, name string) *result.CodecRate {
		for i := range cs {
			if cs[i].Codec == name && cs[i].Side == result.SideSource {
				return &cs[i]
			}
		}
		return nil
	}
	out := make([]result.CodecRate, 0, len(far))
	for _, f := range far {
		h, s := find(here, f.Codec), find(sample, f.Codec)
		if h != nil && s != nil && h.CompressPerCore > 0 && h.DecompressPerCore > 0 {
			f.CompressPerCore *= s.CompressPerCore / h.CompressPerCore
			f.DecompressPerCore *= s.DecompressPerCore / h.DecompressPerCore
			f.Ratio = s.Ratio
			f.Sample = s.Sample + " (scaled from synthetic pages on the agent)"
		}
		out = append(out, f)
	}
	return out
}
