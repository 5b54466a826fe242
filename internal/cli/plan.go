package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/compress"
	"github.com/narrows/narrows/internal/probe/dbsize"
	"github.com/narrows/narrows/internal/result"
)

// planFlags are `narrows plan backup`'s questions; the stages come from a
// measurement (--to), a saved run (--from) or by hand (--assume), the
// later overriding the earlier.
type planFlags struct {
	sizes, compressions, engine, compressAt, rto, from, dsn string
	html                                                    string
	files                                                   int
	ifi, json, sizeSet                                      bool
	assume                                                  multiFlag
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func planBackup(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "plan backup")
	var pf planFlags
	fs.StringVar(&pf.sizes, "size", "100GB,1TB,10TB", "database sizes to plan, decimal as DBAs quote them (100GB = 10^11 bytes; GiB/TiB for binary)")
	fs.StringVar(&pf.dsn, "dsn", "", "read the database's size from the server (PostgreSQL: every database of the cluster; MySQL: every table; SQL Server: the database's files) and plan that size too (or set NARROWS_DSN)")
	fs.StringVar(&pf.compressions, "compression", "", "compressions to plan: none, lz4, zstd, gzip (or with a level: zstd-3); default: none and every codec measured")
	fs.StringVar(&pf.engine, "engine", result.EngineGeneric, "how the backup runs: generic, pg_basebackup, pgbackrest (also WAL-G) or sqlserver")
	fs.IntVar(&pf.files, "files", 1, "backup files (SQL Server), processes (pgBackRest process-max) or tablespaces (pg_basebackup): the streams")
	fs.StringVar(&pf.compressAt, "compress-at", "", "where the backup compresses: source (the database host) or target (the backup host); default: the engine's")
	fs.BoolVar(&pf.ifi, "ifi", false, "SQL Server: Instant File Initialization is on (no zeroing of data files before a restore)")
	fs.StringVar(&pf.rto, "rto", "", "the recovery time objective to judge each restore by, e.g. 4h")
	fs.StringVar(&pf.from, "from", "", "re-plan from a saved run: the JSON lines of an earlier `plan backup --json`")
	fs.Var(&pf.assume, "assume", "a stage rate given by hand (repeatable), e.g. network=117MB/s, network@4=450MB/s, disk=1GB/s, "+
		"target-write=200MB/s, cores=8, zstd-3.compress=400MB/s,zstd-3.decompress=1.2GB/s,zstd-3.ratio=4 (a codec's three figures)")
	fs.BoolVar(&pf.json, "json", false, "write JSON lines instead of a table")
	htmlFlag(fs, &pf.html)
	var mf measureFlags
	fs.StringVar(&mf.to, "to", "", "measure the stages through this agent (`narrows serve` on the backup host): HOST or HOST:PORT")
	mf.agent.register(fs)
	fs.StringVar(&mf.dataPath, "data-path", "", "with --to: the directory of the database's files here, read by a backup and written by a restore")
	fs.StringVar(&mf.backupPath, "backup-path", "", "with --to: the directory on the agent the backup lands in (inside its --disk-path)")
	fs.StringVar(&mf.stage, "stage-duration", "5s", "with --to: how long to measure each stage")
	fs.StringVar(&mf.diskSize, "disk-size", "1G", "with --to: the test file on each side; larger than any cache in front of the disks")
	fs.StringVar(&mf.sample, "sample", "", "with --to: measure compression on a sample read from this directory (the database's data directory, read only, a bounded amount spread over its files) instead of synthetic database pages")
	fs.IntVar(&mf.streams, "streams", 0, "with --to: the parallel streams to measure besides one (default: --files, at least 4)")
	if err := parse(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { pf.sizeSet = pf.sizeSet || f.Name == "size" })
	assumed, err := readAssume(pf.assume, backupAssumeNames, "network=117MB/s,disk=1GB/s", applyBackupAssume)
	if err != nil {
		return err
	}
	in, err := pf.input()
	if err != nil {
		return err
	}
	if pf.from != "" {
		var saved *result.BackupPlan
		if saved, err = planFrom(pf.from); err != nil {
			return err
		}
		in.Stages = saved.Stages
		// The sizes planned then, the database's own among them, unless
		// asked anew: a re-plan that dropped the one size read from the
		// server answered a different question.
		if !pf.sizeSet && pf.dsn == "" && env.Getenv("NARROWS_DSN") == "" {
			in.Sizes, in.SizeNote = savedSizes(saved)
		}
	}
	if err := pf.dbSize(ctx, env, &in); err != nil {
		return err
	}
	target := "assumed"
	var software string
	var unauth bool
	switch {
	case mf.to != "":
		if mf.streams < 0 || mf.streams > 128 {
			return usagef("--streams %d: use 1 to 128", mf.streams)
		}
		codecs, err := planCodecs(pf.compressions)
		if err != nil {
			return err
		}
		if software, unauth, err = mf.measure(ctx, env, in.Files, codecs, &in.Stages); err != nil {
			return err
		}
		target = mf.to
	case mf.dataPath != "" || mf.backupPath != "":
		return usagef("plan backup: --data-path and --backup-path are measured through an agent: give --to AGENT too")
	case pf.from != "":
		target = pf.from
	}
	if err := applyBackupAssume(&in.Stages, assumed); err != nil {
		return err
	}
	if pf.from == "" && len(pf.assume) == 0 && mf.to == "" {
		return usagef("plan backup: give the stage rates: measure them through an agent (--to AGENT), read them --from a saved run, or --assume them (e.g. --assume network=117MB/s)")
	}
	// Figures given by hand with none for the network would plan a
	// backup across a line of infinite speed, and name a disk as the
	// limit of a transfer nothing says the line can carry: say less.
	if pf.from == "" && mf.to == "" && len(in.Stages.NetworkOut) == 0 && len(in.Stages.NetworkIn) == 0 {
		return usagef("plan backup: no figure for the network, so no time can be told: add --assume network=RATE (e.g. network=117MB/s), or measure it through an agent (--to AGENT)")
	}
	return planFinish(ctx, env, pf, in, target, software, unauth)
}

// planFinish composes the plan and writes it.
func planFinish(ctx context.Context, env Env, pf planFlags, in advisor.BackupInput, target, software string, unauth bool) error {
	if pf.compressions == "" {
		in.Compressions = []string{result.CompressionNone}
		for _, c := range in.Stages.Codecs {
			if !slices.Contains(in.Compressions, c.Codec) {
				in.Compressions = append(in.Compressions, c.Codec)
			}
		}
	}
	plan, err := advisor.PlanBackup(in)
	if err != nil {
		return usagef("plan backup: %v", err)
	}
	rep := result.NewReport("plan backup", target, tool(), env.Now())
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.BackupPlan = &plan
	return finish(ctx, withHTML(output(env, pf.json), pf.html), rep, nil)
}

// input reads the questions: sizes, compressions, engine, files, RTO.
func (pf planFlags) input() (advisor.BackupInput, error) {
	in := advisor.BackupInput{Engine: pf.engine, Files: pf.files, IFI: pf.ifi}
	switch pf.engine {
	case result.EngineGeneric, result.EnginePGBaseBackup, result.EnginePGBackRest, result.EngineSQLServer:
	case "walg", "wal-g":
		in.Engine = result.EnginePGBackRest
	default:
		return in, usagef("--engine %q: use generic, pg_basebackup, pgbackrest (also WAL-G) or sqlserver", pf.engine)
	}
	if pf.files < 1 || pf.files > 128 {
		return in, usagef("--files %d: use 1 to 128", pf.files)
	}
	switch pf.compressAt {
	case "", result.CompressAtSource, result.CompressAtTarget:
		in.CompressAt = pf.compressAt
	default:
		return in, usagef("--compress-at %q: use source (the database host) or target (the backup host)", pf.compressAt)
	}
	for _, s := range strings.Split(pf.sizes, ",") {
		n, err := metric.ParseStorageSize(s)
		if err != nil {
			return in, usagef("--size: %v", err)
		}
		in.Sizes = append(in.Sizes, n)
	}
	if pf.compressions != "" {
		for _, c := range strings.Split(pf.compressions, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != result.CompressionNone && !knownCodec(c) {
				return in, usagef("--compression %q: use none, lz4, zstd or gzip, with a level if you like (zstd-3, gzip-6)", c)
			}
			in.Compressions = append(in.Compressions, c)
		}
	}
	if pf.rto != "" {
		d, err := positiveDuration("--rto", pf.rto)
		if err != nil {
			return in, err
		}
		in.RTO = d
	}
	return in, nil
}

func knownCodec(c string) bool {
	name, level, ok := strings.Cut(c, "-")
	if ok {
		if n, err := strconv.Atoi(level); err != nil || n < 1 || n > 22 {
			return false
		}
	}
	return name == "lz4" || name == "zstd" || name == "gzip"
}

// backupAssumeNames are the figures plan backup takes by hand (@N: for N
// streams; CODEC: lz4, zstd or gzip, with a level: zstd-3).
var backupAssumeNames = []string{"network", "network@N", "network-out", "network-out@N", "network-in", "network-in@N",
	"disk", "source-disk", "target-disk", "source-read", "source-write", "target-read", "target-write",
	"cores", "source-cores", "target-cores", "CODEC.compress", "CODEC.decompress", "CODEC.ratio", "CODEC.side"}

// readAssume reads a plan's --assume by the one grammar and applies it to
// a scratch T, so that a mistyped figure is said before minutes of
// measuring, not after.
func readAssume[T any](flags, known []string, example string, apply func(*T, []plan.Assumption) error) ([]plan.Assumption, error) {
	as, err := plan.ParseAssume(flags, known, example)
	if err != nil {
		return nil, usagef("%v", err)
	}
	var scratch T
	return as, apply(&scratch, as)
}

// applyBackupAssume sets the stages --assume gives, over what was measured
// or read.
func applyBackupAssume(s *result.BackupStages, as []plan.Assumption) error {
	assumed := func(bps float64) *result.Rate { return &result.Rate{BytesPerSecond: bps, Source: "assumed"} }
	codecs := map[string]*result.CodecRate{}
	sides := map[string][]string{}
	var order []string
	for _, a := range as {
		if codec, part, ok := strings.Cut(a.Name, "."); ok {
			if name, _, _ := strings.Cut(codec, "-"); !knownCodec(codec) || (name != "lz4" && name != "zstd" && name != "gzip") {
				return usagef("--assume %q: unknown codec %q: use lz4, zstd or gzip, with a level for zstd and gzip (zstd-3, gzip-6)", a.Flag, codec)
			}
			c := codecs[codec]
			if c == nil {
				c = &result.CodecRate{Codec: codec, Source: "assumed"}
				codecs[codec], sides[codec] = c, []string{result.SideSource, result.SideTarget}
				order = append(order, codec)
			}
			var err error
			switch part {
			case "compress":
				c.CompressPerCore, err = a.Rate()
			case "decompress":
				c.DecompressPerCore, err = a.Rate()
			case "ratio":
				c.Ratio, err = a.Ratio(1)
			case "side":
				var side string
				side, err = a.Word(result.SideSource, result.SideTarget)
				sides[codec] = []string{side}
			}
			if err != nil {
				return usagef("%v", err)
			}
			continue
		}
		switch a.Name {
		case "cores", "source-cores", "target-cores":
			n, err := a.Count(1, 4096)
			if err != nil {
				return usagef("%v", err)
			}
			if a.Name != "target-cores" {
				s.SourceCores = n
			}
			if a.Name != "source-cores" {
				s.TargetCores = n
			}
			continue
		}
		bps, err := a.Rate()
		if err != nil {
			return usagef("%v", err)
		}
		key, streams := a.Name, 1
		if base, n, ok := strings.Cut(key, "@"); ok {
			if streams, err = strconv.Atoi(n); err != nil || streams < 1 || streams > 128 {
				return usagef("--assume %q: streams after @ must be 1 to 128, e.g. network@4=450MB/s", a.Flag)
			}
			key = base
		}
		setNet := func(rates *[]result.StreamRate) {
			*rates = slices.DeleteFunc(*rates, func(r result.StreamRate) bool { return r.Streams == streams })
			*rates = append(*rates, result.StreamRate{Streams: streams, Rate: *assumed(bps)})
			slices.SortFunc(*rates, func(x, y result.StreamRate) int { return x.Streams - y.Streams })
		}
		switch key {
		case "network":
			setNet(&s.NetworkOut)
			setNet(&s.NetworkIn)
		case "network-out":
			setNet(&s.NetworkOut)
		case "network-in":
			setNet(&s.NetworkIn)
		case "disk":
			s.SourceRead, s.SourceWrite, s.TargetWrite, s.TargetRead = assumed(bps), assumed(bps), assumed(bps), assumed(bps)
		case "source-disk":
			s.SourceRead, s.SourceWrite = assumed(bps), assumed(bps)
		case "target-disk":
			s.TargetWrite, s.TargetRead = assumed(bps), assumed(bps)
		case "source-read":
			s.SourceRead = assumed(bps)
		case "source-write":
			s.SourceWrite = assumed(bps)
		case "target-read":
			s.TargetRead = assumed(bps)
		case "target-write":
			s.TargetWrite = assumed(bps)
		}
	}
	for _, codec := range order {
		c := codecs[codec]
		if c.CompressPerCore <= 0 || c.DecompressPerCore <= 0 || c.Ratio < 1 {
			return usagef("--assume: give %[1]s's compress, decompress and ratio, e.g. %[1]s.compress=400MB/s,%[1]s.decompress=1.2GB/s,%[1]s.ratio=4", codec)
		}
		for _, side := range sides[codec] {
			c.Side = side
			s.Codecs = slices.DeleteFunc(s.Codecs, func(o result.CodecRate) bool { return o.Codec == codec && o.Side == side })
			s.Codecs = append(s.Codecs, *c)
		}
	}
	return nil
}

// lastSummary returns the last summary of a saved run that has what a
// plan needs (nil if none does).
func lastSummary(path string, has func(*result.Report) bool) (*result.Report, error) {
	var found *result.Report
	err := savedSummaries(path, func(r *result.Report) {
		if has(r) {
			found = r
		}
	})
	return found, err
}

// savedSizes are a saved plan's sizes in its order, and the note that
// said where the database's own came from.
func savedSizes(p *result.BackupPlan) ([]int64, string) {
	var sizes []int64
	for _, c := range p.Cells {
		if !slices.Contains(sizes, c.SizeBytes) {
			sizes = append(sizes, c.SizeBytes)
		}
	}
	note := ""
	for _, n := range p.Notes {
		if strings.HasPrefix(n, databaseSizeNote) {
			note = n
		}
	}
	return sizes, note
}

// planFrom reads the last plan in a saved run.
func planFrom(path string) (*result.BackupPlan, error) {
	r, err := lastSummary(path, func(r *result.Report) bool { return r.BackupPlan != nil })
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, usagef("--from %s: no backup plan in it: save one with `narrows plan backup --json > FILE`", path)
	}
	found := &r.BackupPlan.Stages
	for _, set := range [][]result.StreamRate{found.NetworkOut, found.NetworkIn} {
		for i := range set {
			if set[i].Source == "measured" {
				set[i].Source = "measured (" + path + ")"
			}
		}
	}
	for _, r := range []*result.Rate{found.SourceRead, found.SourceWrite, found.TargetRead, found.TargetWrite} {
		if r != nil && r.Source == "measured" {
			r.Source = "measured (" + path + ")"
		}
	}
	return r.BackupPlan, nil
}

// savedSummaries calls each with every summary record of a saved run
// (narrows' JSON lines), in order; a file that is not one is a usage error.
func savedSummaries(path string, each func(*result.Report)) error {
	f, err := os.Open(path)
	if err != nil {
		return usagef("--from: %v", err)
	}
	defer f.Close()
	if err := jsonl.Read(f, path, func(r *result.Report, _ []result.Interval) { each(r) }); err != nil {
		return usagef("--from %v", err)
	}
	return nil
}

// dbSize adds the size of the database behind --dsn to the sizes planned
// (in place of the default sizes, unless --size was given too).
func (pf planFlags) dbSize(ctx context.Context, env Env, in *advisor.BackupInput) error {
	raw := pf.dsn
	if raw == "" {
		raw = env.Getenv("NARROWS_DSN")
	}
	if raw == "" {
		return nil
	}
	d, err := dbconn.Parse(raw)
	if err != nil {
		return usagef("plan backup: --dsn: %v", err)
	}
	sz, err := dbsize.Read(ctx, d)
	if err != nil {
		if errext.IsUser(err) {
			return errext.Userf(err, "%s", d.Scrub(err.Error()))
		}
		return fmt.Errorf("plan backup: %s", d.Reason(err))
	}
	if !pf.sizeSet {
		in.Sizes = nil
	}
	in.Sizes = append([]int64{sz.Bytes}, in.Sizes...)
	in.SizeNote = databaseSizeNote + sz.What + "."
	return nil
}

// databaseSizeNote begins the note that says where the database's size
// came from.
const databaseSizeNote = "The database's size: "

// planCodecs are the codecs --compression asks to measure (the backup
// tools' defaults when it is not given: lz4, zstd-3, gzip-6).
func planCodecs(list string) ([]string, error) {
	if list == "" {
		return []string{compress.LZ4, compress.Zstd3, compress.Gzip6}, nil
	}
	var named []string
	for _, c := range strings.Split(list, ",") {
		if c = strings.TrimSpace(c); c != result.CompressionNone && c != "" {
			named = append(named, c)
		}
	}
	if len(named) == 0 {
		return nil, nil
	}
	cs, err := compress.ParseCodecs(strings.Join(named, ","))
	if err != nil {
		return nil, usagef("--compression: %v", err)
	}
	return cs, nil
}
