package command

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe/dbload"
	"github.com/narrows/narrows/internal/result"
)

// DBLoad is `narrows db load`: log generated at Load.Rate into a scratch
// table, for Load.Duration or until the run is stopped, to load a
// replica's link.
type DBLoad struct {
	DSN  *dbconn.DSN
	Load dbload.Config
}

// DefaultDBLoad is db load of rate log bytes a second into the database
// at d with the flags' defaults: for 60 s, reported each second, one
// session inserting 1000 B rows into dbload.DefaultTable, narrows
// choosing the rows of a commit, a 10 s timeout.
func DefaultDBLoad(d *dbconn.DSN, rate float64) DBLoad {
	return DBLoad{DSN: d, Load: dbload.Config{Rate: rate, Duration: 60 * time.Second, Interval: time.Second,
		Table: dbload.DefaultTable, RowBytes: 1000, Timeout: 10 * time.Second, Sessions: 1}}
}

// Run generates the log.
func (c DBLoad) Run(ctx context.Context, env Env) (*result.Report, error) {
	cfg := c.Load
	perCommit := cfg.RowsPerCommit
	if perCommit == 0 {
		perCommit = dbload.RowsPerCommit(cfg.Rate, cfg.Sessions, cfg.RowBytes)
	}
	rep := env.dbReport("db load", c.DSN)
	env.say(fmt.Sprintf("narrows db load → %s: %s of log into scratch table %s, %s; %s, each commit one INSERT of %s",
		c.DSN.Redacted, metric.FormatByteRate(cfg.Rate), cfg.Table, Until(cfg.Duration), metric.Plural(int64(cfg.Sessions), "session"), result.CommitRows(perCommit, cfg.RowBytes)))
	res, runErr := dbload.Run(ctx, c.DSN, cfg, env.emit())
	rep.DBLoad = res
	return dbFinish(ctx, env.Tool, rep, runErr, res.Rows > 0, c.DSN)
}
