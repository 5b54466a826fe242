// Package words is narrows' one vocabulary: the names of backup stages,
// engines, replication queues and tunings, shared by the advisor's
// findings, the terminal's tables, the HTML report and Prometheus' help,
// so that one bottleneck has one name wherever it is read. (Units are
// metric's.) It sits beside metric, below the advisor and the outputs,
// because both say these words; result holds data only.
package words

import (
	"fmt"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// stageWords names a backup stage, a bottleneck, for a DBA: the same
// words in the terminal, the HTML report and the findings.
var stageWords = map[string]string{
	result.StageSourceDisk:  "the database host's disk",
	result.StageNetwork:     "the network",
	result.StageTargetDisk:  "the backup host's disk",
	result.StageCompress:    "compression (CPU)",
	result.StageDecompress:  "decompression (CPU)",
	result.StageUnmeasured:  "nothing measured",
	result.StageCannotJudge: "cannot judge",
}

// Stages names a bottleneck and the stages it cannot be told from,
// for a table: "the network or compression (CPU)".
func Stages(stage string, also []string) string {
	w := Stage(stage)
	for i, a := range also {
		if i == len(also)-1 {
			w += " or "
		} else {
			w += ", "
		}
		w += Stage(a)
	}
	return w
}

// Stage names a stage for the table.
func Stage(stage string) string {
	if w, ok := stageWords[stage]; ok {
		return w
	}
	return stage
}

// SyncEngine is an engine of a sync plan as a DBA names it, with its
// mode where it has two: "PostgreSQL (on)", "SQL Server".
func SyncEngine(e string) string {
	switch e {
	case result.SyncPostgres:
		return "PostgreSQL (on)"
	case "postgres_remote_write":
		return "PostgreSQL (remote_write)"
	case result.SyncSQLServer:
		return "SQL Server"
	case result.SyncMySQL:
		return "MySQL (semi-sync)"
	}
	return e
}

// Tuning words one tuning for a person: the command when it raises,
// "enough" when it is, else how to read it and what to run if it is
// below.
func Tuning(t result.Tuning) string {
	switch t.Status {
	case result.TuningEnough:
		return fmt.Sprintf("%s maximum %s: enough, no change", t.Setting, metric.FormatBytes(t.CurrentMax))
	case result.TuningRaise:
		now := metric.FormatBytes(t.CurrentMax)
		if t.Current != "" {
			now = fmt.Sprintf("%q, maximum %s", t.Current, now)
		}
		return fmt.Sprintf("%s   (now %s: too small)", t.Command, now)
	}
	if t.Check == "" {
		return "cannot judge: " + t.Note
	}
	return fmt.Sprintf("cannot judge: run %s (%s); if it is below, %s", t.Check, t.Note, t.IfBelow)
}
