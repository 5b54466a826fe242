package command

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/dbsize"
	"github.com/narrows/narrows/internal/result"
)

// PlanBackup is `narrows plan backup`: how long a backup and a restore
// take for each size and compression, and what limits each. The stages
// come from a saved run (From), a measurement (Measure) or by hand
// (Assume), the later overriding the earlier.
type PlanBackup struct {
	// Sizes are the database sizes to plan. Unless SizesAsked, a saved
	// plan's sizes replace them (with From and no DSN), and the
	// database's own size does (with DSN): a re-plan that dropped the one
	// size read from the server would answer a different question.
	Sizes      []int64
	SizesAsked bool
	// Compressions are the compressions to plan (none, lz4, zstd-3 …);
	// empty: none and every codec measured, read or assumed.
	Compressions []string
	Engine       string // result.Engine*
	// Files are the backup files (SQL Server), processes (pgBackRest) or
	// tablespaces (pg_basebackup): the streams, 1 to 128.
	Files      int
	CompressAt string        // result.CompressAt*; "": the engine's
	IFI        bool          // SQL Server's Instant File Initialization is on
	RTO        time.Duration // the objective each restore is judged by; 0: none

	From plan.Saved // a saved run, whose last backup plan's stages are read
	// DSN is the database whose size is read from the server and planned
	// too; nil: none.
	DSN     *dbconn.DSN
	Assume  []plan.Assumption // stages given by hand (plan.BackupAssumeNames)
	Measure *BackupMeasure    // nil: nothing is measured
}

// DefaultPlanBackup is plan backup with its flags' defaults: 100 GB,
// 1 TB and 10 TB, a generic backup of one stream. It has no stages:
// give it From, Assume or Measure.
func DefaultPlanBackup() PlanBackup {
	return PlanBackup{Sizes: []int64{100e9, 1e12, 10e12}, Engine: result.EngineGeneric, Files: 1}
}

// Run reads, measures and plans.
func (c PlanBackup) Run(ctx context.Context, env Env) (*result.Report, error) {
	started := env.now() // the run starts here, before anything is measured
	in := advisor.BackupInput{Sizes: slices.Clone(c.Sizes), Compressions: slices.Clone(c.Compressions), Engine: c.Engine,
		Files: c.Files, CompressAt: c.CompressAt, RTO: c.RTO, IFI: c.IFI}
	if c.From.Given() {
		saved, err := plan.BackupFrom(c.From)
		if err != nil {
			return nil, err
		}
		in.Stages = saved.Stages
		if !c.SizesAsked && c.DSN == nil {
			in.Sizes, in.SizeNote = plan.SavedSizes(saved)
		}
	}
	if c.DSN != nil {
		if err := c.databaseSize(ctx, &in); err != nil {
			return nil, err
		}
	}
	target := "assumed"
	var software string
	var unauth bool
	switch {
	case c.Measure != nil:
		var err error
		if software, unauth, err = c.Measure.run(ctx, in.Files, env.note, &in.Stages); err != nil {
			return nil, err
		}
		target = agentName(c.Measure.To, c.Measure.Agent)
	case c.From.Given():
		target = c.From.Name
	}
	if err := plan.ApplyBackup(&in.Stages, c.Assume); err != nil {
		return nil, err
	}
	if !c.From.Given() && len(c.Assume) == 0 && c.Measure == nil {
		return nil, errext.Userf(nil, "plan backup: give the stage rates: measure them through an agent (--to AGENT), read them --from a saved run, or --assume them (e.g. --assume network=117MB/s)")
	}
	// Figures given by hand with none for the network would plan a
	// backup across a line of infinite speed, and name a disk as the
	// limit of a transfer nothing says the line can carry: say less.
	if !c.From.Given() && c.Measure == nil && len(in.Stages.NetworkOut) == 0 && len(in.Stages.NetworkIn) == 0 {
		return nil, errext.Userf(nil, "plan backup: no figure for the network, so no time can be told: add --assume network=RATE (e.g. network=117MB/s), or measure it through an agent (--to AGENT)")
	}
	if len(in.Compressions) == 0 {
		in.Compressions = []string{result.CompressionNone}
		for _, cr := range in.Stages.Codecs {
			if !slices.Contains(in.Compressions, cr.Codec) {
				in.Compressions = append(in.Compressions, cr.Codec)
			}
		}
	}
	p, err := advisor.PlanBackup(in)
	if err != nil {
		return nil, errext.Userf(nil, "plan backup: %v", err)
	}
	rep := result.NewReport("plan backup", target, env.Tool, started)
	rep.Agent, rep.Unauthenticated = software, unauth
	rep.BackupPlan = &p
	return Finish(ctx, env.Tool, rep, nil)
}

// databaseSize adds the size of the database behind DSN to the sizes
// planned (in place of the others, unless they were asked for).
func (c PlanBackup) databaseSize(ctx context.Context, in *advisor.BackupInput) error {
	d := c.DSN
	sz, err := dbsize.Read(ctx, d)
	if err != nil {
		if errext.IsUser(err) {
			return errext.Userf(err, "%s", d.Scrub(err.Error()))
		}
		return fmt.Errorf("plan backup: %s", d.Reason(err))
	}
	if !c.SizesAsked {
		in.Sizes = nil
	}
	in.Sizes = append([]int64{sz.Bytes}, in.Sizes...)
	in.SizeNote = plan.DatabaseSizeNote + sz.What + "."
	return nil
}
