package cli

import (
	"context"
	"flag"
	"os"
	"strings"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/compress"
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
	def, measure := command.DefaultPlanBackup(), command.DefaultBackupMeasure(client.Options{})
	var pf planFlags
	fs.StringVar(&pf.sizes, "size", "100GB,1TB,10TB", "database sizes to plan, decimal as DBAs quote them (100GB = 10^11 bytes; GiB/TiB for binary)")
	fs.StringVar(&pf.dsn, "dsn", "", "read the database's size from the server (PostgreSQL: every database of the cluster; MySQL: every table; SQL Server: the database's files) and plan that size too (or set NARROWS_DSN)")
	fs.StringVar(&pf.compressions, "compression", "", "compressions to plan: none, lz4, zstd, gzip (or with a level: zstd-3); default: none and every codec measured")
	fs.StringVar(&pf.engine, "engine", def.Engine, "how the backup runs: generic, pg_basebackup, pgbackrest (also WAL-G) or sqlserver")
	fs.IntVar(&pf.files, "files", def.Files, "backup files (SQL Server), processes (pgBackRest process-max) or tablespaces (pg_basebackup): the streams")
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
	fs.StringVar(&mf.stage, "stage-duration", metric.FlagDuration(measure.Stage), "with --to: how long to measure each stage")
	fs.StringVar(&mf.diskSize, "disk-size", "1G", "with --to: the test file on each side; larger than any cache in front of the disks")
	fs.StringVar(&mf.sample, "sample", "", "with --to: measure compression on a sample read from this directory (the database's data directory, read only, a bounded amount spread over its files) instead of synthetic database pages")
	fs.IntVar(&mf.streams, "streams", measure.Streams, "with --to: the parallel streams to measure besides one (default: --files, at least 4)")
	if err := parse(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { pf.sizeSet = pf.sizeSet || f.Name == "size" })
	cfg := def
	var err error
	if cfg.Assume, err = readAssume(pf.assume, plan.BackupAssumeNames, "network=117MB/s,disk=1GB/s", plan.ApplyBackup); err != nil {
		return err
	}
	if err := pf.input(&cfg); err != nil {
		return err
	}
	if pf.from != "" {
		cfg.From, err = readSaved(pf.from, func(s plan.Saved) error { _, err := plan.BackupFrom(s); return err })
		if err != nil {
			return err
		}
	}
	if cfg.DSN, err = pf.readDSN(env); err != nil {
		return err
	}
	switch {
	case mf.to != "":
		if mf.streams < 0 || mf.streams > 128 {
			return usagef("--streams %d: use 1 to 128", mf.streams)
		}
		codecs, err := planCodecs(pf.compressions)
		if err != nil {
			return err
		}
		if cfg.Measure, err = mf.config(env, measure, codecs); err != nil {
			return err
		}
	case mf.dataPath != "" || mf.backupPath != "":
		return usagef("plan backup: --data-path and --backup-path are measured through an agent: give --to AGENT too")
	}
	out := withHTML(output(env, pf.json), pf.html)
	rep, err := cfg.Run(ctx, coreEnv(env, out, pf.json))
	return written(ctx, out, rep, err)
}

// input reads the questions into cfg: sizes, compressions, engine, files,
// RTO.
func (pf planFlags) input(cfg *command.PlanBackup) error {
	cfg.Engine, cfg.Files, cfg.IFI, cfg.SizesAsked = pf.engine, pf.files, pf.ifi, pf.sizeSet
	switch pf.engine {
	case result.EngineGeneric, result.EnginePGBaseBackup, result.EnginePGBackRest, result.EngineSQLServer:
	case "walg", "wal-g":
		cfg.Engine = result.EnginePGBackRest
	default:
		return usagef("--engine %q: use generic, pg_basebackup, pgbackrest (also WAL-G) or sqlserver", pf.engine)
	}
	if pf.files < 1 || pf.files > 128 {
		return usagef("--files %d: use 1 to 128", pf.files)
	}
	switch pf.compressAt {
	case "", result.CompressAtSource, result.CompressAtTarget:
		cfg.CompressAt = pf.compressAt
	default:
		return usagef("--compress-at %q: use source (the database host) or target (the backup host)", pf.compressAt)
	}
	cfg.Sizes = nil
	for _, s := range strings.Split(pf.sizes, ",") {
		n, err := metric.ParseStorageSize(s)
		if err != nil {
			return usagef("--size: %v", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	if pf.compressions != "" {
		for _, c := range strings.Split(pf.compressions, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != result.CompressionNone && !plan.KnownCodec(c) {
				return usagef("--compression %q: use none, lz4, zstd or gzip, with a level if you like (zstd-3, gzip-6)", c)
			}
			cfg.Compressions = append(cfg.Compressions, c)
		}
	}
	if pf.rto != "" {
		d, err := positiveDuration("--rto", pf.rto)
		if err != nil {
			return err
		}
		cfg.RTO = d
	}
	return nil
}

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

// readSaved reads the saved run --from names: its summary records, in
// order, for a plan to read instead of measuring. A file that cannot be
// read, or is not a run's JSON lines, is a usage error; so is one that
// lacks what the plan reads (check, the plan's own reading of it, which
// its core makes again): said now, before the flags read after it.
func readSaved(path string, check func(plan.Saved) error) (plan.Saved, error) {
	saved := plan.Saved{Name: path}
	f, err := os.Open(path)
	if err != nil {
		return saved, usagef("--from: %v", err)
	}
	defer f.Close()
	if err := jsonl.Read(f, path, func(r *result.Report, _ []result.Interval) { saved.Reports = append(saved.Reports, r) }); err != nil {
		return saved, usagef("--from %v", err)
	}
	if check != nil {
		err = check(saved)
	}
	return saved, err
}

// readDSN reads the database whose size is planned too: --dsn, else
// NARROWS_DSN; nil when neither is given.
func (pf planFlags) readDSN(env Env) (*dbconn.DSN, error) {
	raw := pf.dsn
	if raw == "" {
		raw = env.Getenv("NARROWS_DSN")
	}
	if raw == "" {
		return nil, nil
	}
	return dsnOf("plan backup", "--dsn", raw)
}

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
