package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
)

// TestBackupFrom: the last backup plan of a run is read, its measured
// stages citing the run; the Reports it was read from stay as they were
// (doctor plans from Reports it still holds and writes), and a run
// without a plan is the usage error the command line says.
func TestBackupFrom(t *testing.T) {
	measured := func(bps float64) *result.Rate { return &result.Rate{BytesPerSecond: bps, Source: "measured"} }
	older := &result.Report{BackupPlan: &result.BackupPlan{Stages: result.BackupStages{SourceRead: measured(1)}}}
	last := &result.Report{BackupPlan: &result.BackupPlan{
		Stages: result.BackupStages{
			SourceRead:  measured(2e9),
			TargetWrite: &result.Rate{BytesPerSecond: 3e8, Source: "measured on the agent"},
			NetworkOut:  []result.StreamRate{{Streams: 1, Rate: *measured(1e8)}},
		},
		Cells: []result.BackupCell{{SizeBytes: 7}, {SizeBytes: 7}, {SizeBytes: 1e12}},
		Notes: []string{"other", DatabaseSizeNote + "read from the server."},
	}}
	saved := Saved{Name: "run.jsonl", Reports: []*result.Report{older, last, {Command: "net rr"}}}
	p, err := BackupFrom(saved)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stages
	if st.SourceRead.BytesPerSecond != 2e9 || st.SourceRead.Source != "measured (run.jsonl)" || st.NetworkOut[0].Source != "measured (run.jsonl)" {
		t.Errorf("read %+v and %+v, want the last plan's, citing run.jsonl", st.SourceRead, st.NetworkOut)
	}
	if st.TargetWrite.Source != "measured on the agent" {
		t.Errorf("the agent's figure became %q: only \"measured\" cites the run", st.TargetWrite.Source)
	}
	st.NetworkOut[0].BytesPerSecond = 0
	if was := last.BackupPlan.Stages; was.SourceRead.Source != "measured" || was.NetworkOut[0].Source != "measured" || was.NetworkOut[0].BytesPerSecond != 1e8 {
		t.Errorf("the saved plan changed: %+v, %+v", was.SourceRead, was.NetworkOut)
	}
	sizes, note := SavedSizes(p)
	if len(sizes) != 2 || sizes[0] != 7 || sizes[1] != 1e12 || !strings.HasPrefix(note, DatabaseSizeNote) {
		t.Errorf("sizes %v, note %q", sizes, note)
	}
	_, err = BackupFrom(Saved{Name: "rr.jsonl", Reports: []*result.Report{{Command: "net rr"}}})
	var user *errext.User
	if !errors.As(err, &user) || err.Error() != "--from rr.jsonl: no backup plan in it: save one with `narrows plan backup --json > FILE`" {
		t.Errorf("a run without a plan: %v", err)
	}
}
