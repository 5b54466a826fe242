package doctor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/wakeup"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
	"github.com/narrows/narrows/internal/words"
)

// TestStepsBuildTheirCommands: with everything given, every step applies
// and builds its typed command for the time it is given; the plans are
// given the run so far.
func TestStepsBuildTheirCommands(t *testing.T) {
	dsn, err := dbconn.Parse("postgres://narrows@db1:5432/postgres")
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Agent: &client.Options{Addr: "db2:7447"}, To: "db2", AgentDiskPaths: []string{"/backup"}, DSN: dsn,
		DataPath: "/data", LogPath: "/wal", BackupPath: "/backup", Budget: HostBudget}
	ping := result.NewReport("db ping", "postgres://narrows@db1:5432/postgres", result.Tool{}, time.Now())
	ping.DBPing = &result.DBPing{Queries: 100}
	rr := result.NewReport("net rr", "db2:7447", result.Tool{}, time.Now())
	rr.RR = &result.RR{RoundTrips: 1000}
	rr.RR.P50 = result.Seconds(200 * time.Microsecond)
	prior := plan.Saved{Name: "run.jsonl", Reports: []*result.Report{result.NewReport("net stream", "db2:7447", result.Tool{}, time.Now()), rr, ping}}
	names := map[string]bool{}
	for _, st := range Steps {
		if names[st.Name] {
			t.Errorf("two steps are called %q", st.Name)
		}
		names[st.Name] = true
		if err := st.Applies(in); err != nil {
			t.Errorf("%s: does not apply with every input given: %v", st.Name, err)
			continue
		}
		r, err := st.Command(in, prior, 7*time.Second+400*time.Millisecond)
		if err != nil || r == nil {
			t.Errorf("%s: %v", st.Name, err)
		}
		switch c := r.(type) {
		case command.NetStream:
			// One stream, then 4, half the time each, in whole seconds.
			if c.Stream.Streams != 4 || c.Stream.Duration != 4*time.Second || c.Agent.Addr != "db2:7447" {
				t.Errorf("%s: %+v", st.Name, c.Stream)
			}
			if (st.Name == "net stream reverse") != (c.Stream.Direction == wire.Reverse) {
				t.Errorf("%s: direction %s", st.Name, c.Stream.Direction)
			}
		case command.NetRR:
			if c.RR.Duration != 7*time.Second || (c.UnderLoad != nil) != (st.Name == "net rr under load") {
				t.Errorf("%s: %+v, under load %v", st.Name, c.RR, c.UnderLoad)
			}
		case command.Disk:
			if c.Disk.Size != 256<<20 || len(c.Disk.Profiles) != 1 || (c.On != nil) != (st.Name == "disk on the agent") {
				t.Errorf("%s: %+v", st.Name, c)
			}
		case command.PlanReplica:
			if len(c.From.Reports) != 3 || c.From.Name != "run.jsonl" || c.DSN != dsn {
				t.Errorf("%s: not given the run so far and the primary: %+v", st.Name, c)
			}
		case command.PlanSync:
			if len(c.From.Reports) != 3 {
				t.Errorf("%s: not given the run so far", st.Name)
			}
		case command.PlanChatty:
			if len(c.From.Reports) != 3 {
				t.Errorf("%s: not given the run so far", st.Name)
			}
		case command.Host:
			// Each machine's least, and half the share each.
			if c.Agent == nil || c.Agent.Addr != "db2:7447" || c.Duration != command.MinHostDuration+4*time.Second {
				t.Errorf("%s: %+v", st.Name, c)
			}
			// The database's own queries where they can be timed so,
			// narrows' pair where its session cannot be.
			if here := wakeup.QueriesHere() == nil; (c.DSN == dsn && c.OrPair) != here || (!here && c.DSN != nil) {
				t.Errorf("%s: the database's queries timed %v where this OS can (%v): %+v", st.Name, c.DSN != nil, here, c)
			}
		case command.PlanBackup:
			if c.Measure == nil || c.Measure.DataPath != "/data" || c.Measure.BackupPath != "/backup" || c.Measure.To != "db2" {
				t.Errorf("%s: %+v", st.Name, c.Measure)
			}
		}
	}
}

// TestHostStepNeedsItsBudget: the host step runs in a budget of
// HostBudget or more, and otherwise says how much to give, or what to
// run instead; an agent whose tests may not last the experiment is said
// so, and a longer share is cut to what it allows.
func TestHostStepNeedsItsBudget(t *testing.T) {
	var host Step
	for _, st := range Steps {
		if st.Name == "host" {
			host = st
		}
	}
	in := Inputs{Agent: &client.Options{Addr: "db2:7447"}, Budget: 3 * time.Minute}
	if err := host.Applies(in); !errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "--budget 4m or more (this run: 3m)") || !strings.Contains(err.Error(), "narrows host --to HOST") {
		t.Errorf("a 3m budget: %v", err)
	}
	in.Budget = HostBudget
	if err := host.Applies(in); err != nil {
		t.Errorf("a 4m budget: %v", err)
	}
	in.AgentMaxDuration = 20 * time.Second
	if _, err := host.Command(in, plan.Saved{}, time.Minute); !errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "its --max-duration") {
		t.Errorf("an agent allowing 20s: %v", err)
	}
	in.AgentMaxDuration = 40 * time.Second
	if r, err := host.Command(in, plan.Saved{}, time.Minute); err != nil || r.(command.Host).Duration != 40*time.Second {
		t.Errorf("an agent allowing 40s: %v %+v", err, r)
	}
	// SQL Server's queries cannot be timed so: the pair, whatever the OS.
	var err error
	if in.DSN, err = dbconn.Parse("sqlserver://narrows@db1:1433"); err != nil {
		t.Fatal(err)
	}
	if r, err := host.Command(in, plan.Saved{}, time.Minute); err != nil || r.(command.Host).DSN != nil {
		t.Errorf("SQL Server's DSN: %v %+v", err, r)
	}
}

// TestStepsSayWhatToGive: with nothing given, no step applies, and each
// says why as not applicable, naming a flag.
func TestStepsSayWhatToGive(t *testing.T) {
	for _, st := range Steps {
		err := st.Applies(Inputs{})
		if !errors.Is(err, command.ErrNotApplicable) {
			t.Errorf("%s: applies to nothing given (%v)", st.Name, err)
			continue
		}
		if !slices.ContainsFunc([]string{"--to", "--dsn", "--data-path", "--log-path"}, func(f string) bool { return strings.Contains(err.Error(), f) }) {
			t.Errorf("%s: %q names no flag to give", st.Name, err)
		}
	}
}

// TestVerdictsOncePerSubject: two steps' findings with one code about one
// thing are said once whatever their words; one Report's findings of one
// code (two replicas) are each kept; warnings come first; a withdrawn
// code is left out.
func TestVerdictsOncePerSubject(t *testing.T) {
	stream := func(dir string, summary string) result.DoctorStep {
		r := result.NewReport("net stream", "db2:7447", result.Tool{}, time.Now())
		r.Stream = &result.Stream{Config: result.StreamConfig{Direction: dir}}
		r.Findings = []result.Finding{{Code: "stream.link_limited", Severity: "info", Summary: summary}}
		return result.DoctorStep{Name: "net stream", Report: r}
	}
	repl := result.NewReport("db repl", "db1", result.Tool{}, time.Now())
	repl.Repl = &result.Repl{}
	repl.Findings = []result.Finding{
		{Code: "repl.send_queue_growing", Severity: "warning", Summary: "replica1 falls behind"},
		{Code: "repl.send_queue_growing", Severity: "warning", Summary: "replica2 falls behind"},
	}
	steps := []result.DoctorStep{
		stream("forward", "the link held 94 Mbit/s"),
		stream("forward", "the link held 95 Mbit/s"), // the same subject, other words
		stream("reverse", "the link held 94 Mbit/s"), // the same words, another direction
		stream("reverse", "the link held 93 Mbit/s"), // the reverse's own words, said
		{Name: "db repl", Report: repl},
	}
	got := Verdicts(steps)
	var sums []string
	for _, f := range got {
		sums = append(sums, words.Said(f))
	}
	// The reverse stream's finding has the forward one's words: said once.
	// Each verdict says what it is about (words.About): the stream by its
	// sender first.
	want := []string{"replication seen from db1: replica1 falls behind", "replication seen from db1: replica2 falls behind",
		"this host → db2:7447: the link held 94 Mbit/s", "db2:7447 → this host: the link held 93 Mbit/s"}
	if !slices.Equal(sums, want) {
		t.Errorf("verdicts %q, want %q", sums, want)
	}
	if Subject(steps[0].Report) == Subject(steps[2].Report) {
		t.Errorf("one subject for two directions: %q", Subject(steps[0].Report))
	}
}

// TestShare: the budget left, less the fixed costs, in the weight's share
// and a tenth kept back; nothing when the fixed costs take it all.
func TestShare(t *testing.T) {
	if got := Share(100*time.Second, 10*time.Second, 1, 3); got != 27*time.Second {
		t.Errorf("Share = %s, want 27s", got)
	}
	if got := Share(5*time.Second, 10*time.Second, 1, 3); got != 0 {
		t.Errorf("Share past the fixed costs = %s, want 0", got)
	}
}

// TestPlansSayWhatTheyLack: with a database given, plan
// chatty models the session's path from db ping; when db ping measured
// nothing it says so (not applicable, and why) rather than model the
// path to the agent. Without a database, the agent's round trips are the
// path asked about.
func TestPlansSayWhatTheyLack(t *testing.T) {
	dsn, err := dbconn.Parse("postgres://narrows@db1:5432/postgres")
	if err != nil {
		t.Fatal(err)
	}
	var chatty Step
	for _, st := range Steps {
		if st.Name == "plan chatty" {
			chatty = st
		}
	}
	rr := result.NewReport("net rr", "db2:7447", result.Tool{}, time.Now())
	rr.RR = &result.RR{RoundTrips: 1000}
	rr.RR.Mean, rr.RR.P50 = result.Seconds(200*time.Microsecond), result.Seconds(190*time.Microsecond)
	empty := result.NewReport("net rr", "db2:7447", result.Tool{}, time.Now())
	empty.RR, empty.Partial = &result.RR{}, true
	failed := result.NewReport("db ping", "postgres://narrows@db1:5432/postgres", result.Tool{}, time.Now())
	failed.Partial, failed.Error = true, "connect: the server closed the connection"
	agent := &client.Options{Addr: "db2:7447"}
	for _, c := range []struct {
		name    string
		in      Inputs
		reports []*result.Report
		applies bool
	}{
		{"a database, db ping failed", Inputs{Agent: agent, DSN: dsn}, []*result.Report{rr, failed}, false},
		{"a database, no db ping", Inputs{Agent: agent, DSN: dsn}, []*result.Report{rr}, false},
		{"no database: the agent's path", Inputs{Agent: agent}, []*result.Report{rr}, true},
		{"no database, and net rr made no round trip", Inputs{Agent: agent}, []*result.Report{empty}, false},
	} {
		r, err := chatty.Command(c.in, plan.Saved{Name: "run.jsonl", Reports: c.reports}, time.Second)
		switch {
		case c.applies && (err != nil || r == nil):
			t.Errorf("%s: %v", c.name, err)
		case !c.applies && (!errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "measured no round trip")):
			t.Errorf("%s: %v, want not applicable, saying no round trip was measured", c.name, err)
		}
	}
	// plan sync likewise, when the steps it plans from measured nothing
	// (before, it "failed: --from RUN: …: save one with --json").
	for _, st := range Steps {
		if st.Name != "plan sync" {
			continue
		}
		_, err := st.Command(Inputs{Agent: agent}, plan.Saved{Name: "run.jsonl", Reports: []*result.Report{empty}}, time.Second)
		if !errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "measured nothing") {
			t.Errorf("plan sync after steps that measured nothing: %v", err)
		}
		if _, err := st.Command(Inputs{Agent: agent}, plan.Saved{Name: "run.jsonl", Reports: []*result.Report{rr}}, time.Second); err != nil {
			t.Errorf("plan sync after net rr: %v", err)
		}
	}
}

// TestBackupPathChecked: --backup-path is held to the agent's disk paths
// before any step, by its words, as the agent will hold it (Unix and
// Windows agents); a disk step's file that the agent's --max-disk-size
// would refuse makes the step not applicable, saying so.
func TestBackupPathChecked(t *testing.T) {
	for _, c := range []struct {
		path    string
		allowed []string
		want    string // "" allowed
	}{
		{"/backup", []string{"/backup"}, ""},
		{"/backup/pg/", []string{"/srv", "/backup"}, ""},
		{"/backups", []string{"/backup"}, "allows disk tests only in /backup"},
		{"/nonexistent", []string{"/backup"}, "allows disk tests only in /backup"},
		{"/backup/../etc", []string{"/backup"}, `".." is not allowed`},
		{"backup", []string{"/backup"}, "full path"},
		{`D:\Backup\SQL`, []string{`d:\backup`}, ""},
		{`D:\Backups`, []string{`D:\Backup`}, "allows disk tests only in"},
		{"/backup", nil, "runs no disk tests"},
	} {
		err := backupPathAllowed(c.path, c.allowed, "db2:7447")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s in %v: %v", c.path, c.allowed, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || errext.ExitCode(err) != errext.ExitUsage):
			t.Errorf("%s in %v: %v, want exit 2 saying %q", c.path, c.allowed, err, c.want)
		}
	}
	in := Inputs{Agent: &client.Options{Addr: "db2:7447"}, AgentDiskPaths: []string{"/backup"}, AgentMaxDiskSize: 1 << 20, DataPath: "/data", BackupPath: "/backup"}
	for _, st := range Steps {
		if st.Name != "disk on the agent" && st.Name != "plan backup" {
			continue
		}
		if err := st.Applies(in); !errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "--max-disk-size") {
			t.Errorf("%s with the agent's files held to 1 MiB: %v", st.Name, err)
		}
		in.AgentMaxDiskSize = diskSize
		if err := st.Applies(in); err != nil {
			t.Errorf("%s with the agent's files held to the step's: %v", st.Name, err)
		}
		in.AgentMaxDiskSize = 1 << 20
	}
}

// TestUnderLoadFitsTheAgent: the round trips under load are given no
// more than the agent's --max-duration lets the load run (it runs its
// warm-up and a little past them); an agent that leaves no second for
// them makes the step not applicable, saying so.
func TestUnderLoadFitsTheAgent(t *testing.T) {
	var step Step
	for _, st := range Steps {
		if st.Name == "net rr under load" {
			step = st
		}
	}
	in := Inputs{Agent: &client.Options{Addr: "db2:7447"}}
	for _, c := range []struct {
		most, given time.Duration
		want        time.Duration // 0: not applicable
	}{
		{0, 9 * time.Second, 9 * time.Second},
		{time.Minute, 9 * time.Second, 9 * time.Second},
		{4 * time.Second, 9 * time.Second, command.DefaultUnderLoad().LongestRR(4 * time.Second)},
		{2 * time.Second, 9 * time.Second, 0},
	} {
		in.AgentMaxDuration = c.most
		r, err := step.Command(in, plan.Saved{}, c.given)
		if c.want == 0 {
			if !errors.Is(err, command.ErrNotApplicable) || !strings.Contains(err.Error(), "--max-duration") {
				t.Errorf("agent's --max-duration %v: %v, want not applicable", c.most, err)
			}
			continue
		}
		rr, ok := r.(command.NetRR)
		if err != nil || !ok || rr.RR.Duration != c.want || c.want < time.Second || c.most > 0 && rr.RR.Duration >= c.most {
			t.Errorf("agent's --max-duration %v, given %v: %+v, %v; want round trips for %v", c.most, c.given, r, err, c.want)
		}
	}
}

// TestAnswersKnowTheSteps: the answers name doctor's steps by their
// registry names (words cannot import doctor). With every step run and
// no verdict, each answer is "no finding", naming the steps it reads: a
// step renamed here, and not there, would turn its question into "not
// asked" and this test fails.
func TestAnswersKnowTheSteps(t *testing.T) {
	rep := result.NewReport("doctor", "db2:7447", result.Tool{}, time.Now())
	rep.Doctor = &result.Doctor{}
	for _, st := range Steps {
		rep.Doctor.Steps = append(rep.Doctor.Steps, result.DoctorStep{Name: st.Name, Status: result.StepRan})
	}
	for _, a := range words.Answers(rep) {
		if a.Finding != nil || !strings.HasPrefix(a.Else, "no finding: ") {
			t.Errorf("%s: %q, want no finding from steps of the registry", a.Question, a.Else)
		}
	}
}

// TestStepsCutIntoSamples (issue 27): each measurement compare can test
// is cut into enough intervals for its test, at the shortest share a step
// gets and at a default budget's (every disk row of two doctor
// runs was "too few samples, need 4+4").
func TestStepsCutIntoSamples(t *testing.T) {
	dsn, _ := dbconn.Parse("postgres://narrows@db1:5432/postgres")
	in := Inputs{Agent: &client.Options{Addr: "db2:7447"}, To: "db2", AgentDiskPaths: []string{"/backup"}, DSN: dsn,
		DataPath: "/data", LogPath: "/wal", BackupPath: "/backup"}
	for _, share := range []time.Duration{time.Second, 3 * time.Second, 20 * time.Second} {
		for _, st := range Steps {
			r, err := st.Command(in, plan.Saved{}, share)
			if err != nil {
				continue
			}
			var d, every time.Duration
			switch c := r.(type) {
			case command.NetStream:
				d, every = c.Stream.Duration, c.Stream.Interval
			case command.NetRR:
				if c.UnderLoad != nil {
					continue // its phases are its samples
				}
				d, every = c.RR.Duration, c.RR.Interval
			case command.NetCommit:
				d, every = c.Commit.Duration, c.Commit.Interval
			case command.DBPing:
				d, every = c.Ping.Duration, c.Ping.Interval
			case command.Disk:
				d, every = c.Disk.Duration, c.Disk.Interval // each pattern's
			default:
				continue
			}
			// At a budget's floor (a second a step) the fewest compare
			// tests (history.MinSamples, 4); from a few seconds, twice that.
			want := compareSamples
			if share < 3*time.Second {
				want = 4
			}
			if n := int(d / every); n < want || every < 50*time.Millisecond {
				t.Errorf("%s given %v: %v cut every %v is %d samples, want %d at least, each 50 ms or more", st.Name, share, d, every, n, want)
			}
		}
	}
}
