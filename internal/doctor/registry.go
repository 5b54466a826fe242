package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/client"
	"github.com/narrows/narrows/internal/command"
	"github.com/narrows/narrows/internal/dbconn"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/probe/replication"
	"github.com/narrows/narrows/internal/probe/wakeup"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/wire"
	"github.com/narrows/narrows/internal/words"
)

// Inputs are what the user gave doctor, checked and typed: each step runs
// when what it needs is there, and says what to give when not.
type Inputs struct {
	// Agent is the agent (--to) on the replica's or the backup's host;
	// nil: none. To is it as the person named it. AgentDiskPaths are
	// the directories it allows disk tests in (its --disk-path), as it
	// said when doctor connected.
	// AgentMaxDiskSize is the largest test file it allows (its
	// --max-disk-size; 0: no limit said).
	// AgentMaxDuration is the longest test it allows (its
	// --max-duration): a step on it is given no more, whatever its share.
	Agent            *client.Options
	To               string
	AgentDiskPaths   []string
	AgentMaxDiskSize int64
	AgentMaxDuration time.Duration
	DSN              *dbconn.DSN           // the primary; nil: none
	Replicas         []replication.Replica // --replica-dsn, read besides the primary
	DataPath         string                // here: the database's data files
	LogPath          string                // here: its log
	// BackupPath is on the agent: where backups land.
	BackupPath string
	// Budget is the run's whole time (--budget): the host experiment runs
	// only in one that leaves the other steps what HostBudget less its
	// time gives them.
	Budget time.Duration
}

// HostBudget is the least budget doctor runs the host step in: the
// experiment takes command.MinHostDuration on each machine, one after
// the other, and a default budget (3m) less that would leave the other
// steps half their time.
const HostBudget = 4 * time.Minute

// Step is one entry of the registry: a narrows command, built as a typed
// value for the time it is given.
type Step struct {
	Name string
	Area string // network, storage, database, replication, backup
	// Weight is the step's share of the budget against the others'.
	Weight float64
	// Fixed is about how long the step takes besides what it is given:
	// laying out test files, connecting, a plan's fixed passes (its
	// compression runs a second a codec each way on each host).
	Fixed time.Duration
	// Agent: the step asks the agent (it is skipped once the agent
	// misbehaved).
	Agent bool
	// Applies says why the step cannot run with these inputs (an error
	// wrapping command.ErrNotApplicable, naming what to give), or nil.
	Applies func(in Inputs) error
	// Command is the step's command for the time d it is given; prior is
	// the run so far (the Reports of the steps before it, in order),
	// which a plan reads as its --from would.
	Command func(in Inputs, prior plan.Saved, d time.Duration) (command.Runner, error)
}

// needsAgent and the others are the Applies of the steps that need one
// input.
func needsAgent(why string) func(Inputs) error {
	return func(in Inputs) error {
		if in.Agent == nil {
			return command.NotApplicable(why)
		}
		return nil
	}
}

func needsPath(path func(Inputs) string, why string) func(Inputs) error {
	return func(in Inputs) error {
		if path(in) == "" {
			return command.NotApplicable(why)
		}
		return nil
	}
}

const noAgent = "no agent: give --to HOST"

// Steps is every step doctor runs, in order: measurements first, each
// plan after what it reads. A new probe is one entry.
var Steps = []Step{
	{Name: "net stream reverse", Area: words.AreaNetwork, Weight: 2, Fixed: 500 * time.Millisecond, Agent: true,
		Applies: needsAgent(noAgent),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			// One stream, then 4: half the time each.
			c := command.DefaultNetStream(*in.Agent)
			c.Stream.Direction, c.Stream.Streams, c.Stream.Duration = wire.Reverse, 4, whole(d/2)
			c.Stream.Interval = sampled(c.Stream.Duration)
			return c, nil
		}},
	{Name: "net stream", Area: words.AreaNetwork, Weight: 2, Fixed: 500 * time.Millisecond, Agent: true,
		Applies: needsAgent("no agent: give --to HOST (narrows serve on the replica's host)"),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultNetStream(*in.Agent)
			c.Stream.Streams, c.Stream.Duration = 4, whole(d/2)
			c.Stream.Interval = sampled(c.Stream.Duration)
			return c, nil
		}},
	{Name: "net rr 500 B", Area: words.AreaNetwork, Weight: 1, Fixed: 300 * time.Millisecond, Agent: true,
		Applies: needsAgent(noAgent),
		Command: rrStep(500)},
	{Name: "net rr 64 B", Area: words.AreaNetwork, Weight: 1, Fixed: 300 * time.Millisecond, Agent: true,
		Applies: needsAgent(noAgent),
		Command: rrStep(64)},
	// The path MTU takes no time of the budget: a probe per direction on
	// a clean path, a search of a dozen short ones around a black hole.
	{Name: "net mtu", Area: words.AreaNetwork, Weight: 0, Fixed: time.Second, Agent: true,
		Applies: needsAgent(noAgent),
		Command: func(in Inputs, _ plan.Saved, _ time.Duration) (command.Runner, error) {
			return command.DefaultNetMTU(*in.Agent), nil
		}},
	// Round trips idle and while 4 streams fill the path toward the
	// agent, as a backup pushed from here would (its warm-up and tail
	// are fixed).
	{Name: "net rr under load", Area: words.AreaNetwork, Weight: 1, Fixed: 2500 * time.Millisecond, Agent: true,
		Applies: needsAgent(noAgent),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultNetRR(*in.Agent)
			c.RR.Duration = whole(d)
			load := command.DefaultUnderLoad()
			load.Streams = 4
			if most := in.AgentMaxDuration; most > 0 {
				// The load runs longer than the round trips it carries.
				longest := load.LongestRR(most)
				if longest < time.Second {
					return nil, command.NotApplicable(fmt.Sprintf("the agent allows tests of up to %s (its --max-duration), too short for the load's warm-up and a second of round trips under it",
						metric.FlagDuration(most)))
				}
				c.RR.Duration = min(c.RR.Duration, longest)
			}
			// Each phase, idle and loaded, in samples of its own.
			c.RR.Interval = sampled(c.RR.Duration / 3)
			c.UnderLoad = &load
			return c, nil
		}},
	// What waking idle CPUs adds to each round trip, by experiment on
	// this host and then the agent's (narrows host): each machine's
	// least time is fixed, its share is more pairs of blocks for a
	// noisy machine. (With no agent, one machine's least is left over,
	// and the steps after it are given it.)
	{Name: "host", Area: words.AreaHosts, Weight: 1, Fixed: 2*command.MinHostDuration + 2*time.Second, Agent: true,
		Applies: func(in Inputs) error {
			switch {
			case in.Agent == nil && in.DSN == nil:
				return command.NotApplicable("no round trips to speak of: give --to HOST (or --dsn) to measure what the hosts add to each")
			case in.Budget < HostBudget:
				return command.NotApplicable(fmt.Sprintf("the experiment takes %s on each machine: doctor runs it with --budget %s or more (this run: %s); or run narrows host --to HOST",
					metric.FlagDuration(command.MinHostDuration), metric.FlagDuration(HostBudget), metric.FlagDuration(in.Budget)))
			}
			return nil
		},
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultHost(in.Agent)
			c.Duration = command.MinHostDuration + whole(d/2)
			if in.DSN != nil && in.DSN.Engine != dbconn.SQLServer && wakeup.QueriesHere() == nil {
				// The database's own queries, where they can be timed so
				// (Linux; PostgreSQL, MySQL): its server's work after each
				// wake-up is in them, which the pair's is not.
				c.DSN, c.Timeout, c.OrPair = in.DSN, command.DBConnectTimeout, true
			}
			if most := in.AgentMaxDuration; in.Agent != nil && most > 0 {
				if most < command.MinHostDuration {
					return nil, command.NotApplicable(fmt.Sprintf("the agent allows tests of up to %s (its --max-duration), and the host experiment needs %s there",
						metric.FlagDuration(most), metric.FlagDuration(command.MinHostDuration)))
				}
				c.Duration = min(c.Duration, most)
			}
			return c, nil
		}},
	{Name: "net commit", Area: words.AreaReplication, Weight: 1, Fixed: time.Second, Agent: true,
		Applies: needsAgent(noAgent),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			// A small commit's log (1 KiB), acknowledged once durable; an
			// agent without --disk-path acknowledges on receipt, and says so.
			c := command.DefaultNetCommit(*in.Agent)
			c.Commit.Block, c.Commit.Duration = 1<<10, whole(d)
			c.Commit.Interval = sampled(c.Commit.Duration)
			return c, nil
		}},
	{Name: "db ping", Area: words.AreaDatabase, Weight: 1, Fixed: 500 * time.Millisecond,
		Applies: needsDSN("no database: give --dsn (the primary)"),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultDBPing(in.DSN)
			c.Ping.Duration = whole(d)
			c.Ping.Interval = sampled(c.Ping.Duration)
			return c, nil
		}},
	{Name: "db repl", Area: words.AreaReplication, Weight: 1, Fixed: time.Second,
		Applies: needsDSN("no database: give --dsn (the primary) and --replica-dsn"),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultDBRepl(in.DSN)
			c.Repl.Duration, c.Repl.Replicas = whole(d), in.Replicas
			return c, nil
		}},
	{Name: "disk data path", Area: words.AreaStorage, Weight: 2, Fixed: 2 * time.Second,
		Applies: needsPath(func(in Inputs) string { return in.DataPath }, "give --data-path (the database's data directory) to measure its pages"),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			return diskStep(in.DataPath, result.ProfileData, d), nil
		}},
	{Name: "disk log path", Area: words.AreaStorage, Weight: 1.5, Fixed: 2 * time.Second,
		Applies: needsPath(func(in Inputs) string { return in.LogPath }, "give --log-path (the directory of the database's log) to measure its flushes"),
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			return diskStep(in.LogPath, result.ProfileLog, d), nil
		}},
	{Name: "disk on the agent", Area: words.AreaStorage, Weight: 1.5, Fixed: 2 * time.Second, Agent: true,
		Applies: func(in Inputs) error {
			switch {
			case in.Agent == nil:
				return command.NotApplicable(noAgent)
			case len(in.AgentDiskPaths) == 0:
				return command.NotApplicable("the agent runs no disk tests: start it with --disk-path DIR")
			case in.BackupPath == "" && len(in.AgentDiskPaths) > 1:
				return command.NotApplicable("the agent allows disk tests in " + strings.Join(in.AgentDiskPaths, ", ") + ": give --backup-path DIR to say which")
			}
			return fileFits(in)
		},
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			c := diskStep(in.BackupPath, result.ProfileLog, d)
			c.On = in.Agent
			return c, nil
		}},
	{Name: "plan backup", Area: words.AreaBackup, Weight: 3, Fixed: 22 * time.Second, Agent: true,
		Applies: func(in Inputs) error {
			switch {
			case in.Agent == nil:
				return command.NotApplicable("no agent: give --to HOST (on the backup host)")
			case in.DataPath == "" || in.BackupPath == "":
				return command.NotApplicable("give --data-path and --backup-path (on the agent) to plan backups and restores")
			}
			return fileFits(in)
		},
		Command: func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
			// Six stages are measured, each for its share.
			c := command.DefaultPlanBackup()
			m := command.DefaultBackupMeasure(*in.Agent)
			m.To, m.DataPath, m.BackupPath, m.Stage, m.DiskSize = in.To, in.DataPath, in.BackupPath, whole(d/8), diskSize
			c.Measure, c.DSN = &m, in.DSN
			return c, nil
		}},
	{Name: "plan replica", Area: words.AreaReplication, Weight: 1, Fixed: time.Second,
		Applies: func(in Inputs) error {
			if in.Agent == nil || in.DSN == nil {
				return command.NotApplicable("needs one stream to the replica's host (--to) and the primary's log rate (--dsn)")
			}
			return nil
		},
		// It reads the last net stream of the run, and the primary's log
		// rate each second.
		Command: func(in Inputs, prior plan.Saved, d time.Duration) (command.Runner, error) {
			c := command.DefaultPlanReplica()
			c.From, c.DSN, c.Watch = prior, in.DSN, whole(max(d, 2*time.Second))
			return c, nil
		}},
	// After the measurements it reads: the forward stream is the last net
	// stream (plan replica), the 64 B round trip the last net rr and db
	// ping after both (plan chatty).
	{Name: "plan sync", Area: words.AreaReplication, Weight: 0, Fixed: 200 * time.Millisecond,
		Applies: needsAgent("needs net commit to the replica's host (--to)"),
		Command: func(in Inputs, prior plan.Saved, _ time.Duration) (command.Runner, error) {
			if _, err := command.SyncPartsFrom(prior); err != nil {
				return nil, command.NotApplicable("the steps it plans from measured nothing: net commit, net rr and the log disk (their lines say why)")
			}
			c := command.DefaultPlanSync()
			c.From = prior
			return c, nil
		}},
	{Name: "plan chatty", Area: words.AreaDatabase, Weight: 0, Fixed: 200 * time.Millisecond,
		Applies: func(in Inputs) error {
			if in.Agent == nil && in.DSN == nil {
				return command.NotApplicable("needs round trips: give --to HOST or --dsn")
			}
			return nil
		},
		Command: func(in Inputs, prior plan.Saved, _ time.Duration) (command.Runner, error) {
			// With a database given, the session's path is the database's:
			// when db ping measured none of it, the plan says so rather
			// than model the path to the agent in its place.
			switch {
			case in.DSN != nil && prior.Last(func(r *result.Report) bool { return r.DBPing != nil && r.DBPing.Queries > 0 }) == nil:
				return nil, command.NotApplicable("db ping measured no round trip to the database (its step says why): the plan would model the path to the agent instead of the session's")
			case prior.Last(func(r *result.Report) bool {
				return r.RR != nil && r.RR.RoundTrips > 0 || r.DBPing != nil && r.DBPing.Queries > 0
			}) == nil:
				return nil, command.NotApplicable("net rr measured no round trip (its step says why)")
			}
			c := command.DefaultPlanChatty()
			c.From = prior
			return c, nil
		}},
}

// rrStep is net rr of requests and responses of size bytes.
func rrStep(size int64) func(Inputs, plan.Saved, time.Duration) (command.Runner, error) {
	return func(in Inputs, _ plan.Saved, d time.Duration) (command.Runner, error) {
		c := command.DefaultNetRR(*in.Agent)
		c.RR.Request, c.RR.Response, c.RR.Duration = size, size, whole(d)
		c.RR.Interval = sampled(c.RR.Duration)
		return c, nil
	}
}

func needsDSN(why string) func(Inputs) error {
	return func(in Inputs) error {
		if in.DSN == nil {
			return command.NotApplicable(why)
		}
		return nil
	}
}

// diskStep measures a profile for d in all, each pattern for its share,
// on a test file small enough to lay out in a second or two.
func diskStep(dir, profile string, d time.Duration) command.Disk {
	c := command.DefaultDisk(dir)
	pats := disk.Profiles[profile]()
	c.Disk.Profiles, c.Disk.Patterns = []string{profile}, pats
	c.Disk.Duration = max(d/time.Duration(len(pats)), 200*time.Millisecond).Round(10 * time.Millisecond)
	c.Disk.Interval = sampled(c.Disk.Duration)
	c.Disk.Size = diskSize
	return c
}

// compareSamples is how many intervals a doctor step's measurement is
// cut into at the least: history's test of a change needs
// history.MinSamples on each side (issue 27: every disk row of two
// doctor runs was "too few samples, need 4+4", even 10,796 → 31,897
// IOPS), and twice that tests a change of a figure that wavers.
const compareSamples = 8

// sampled is the interval that cuts a measurement of d into
// compareSamples: a second, or less for a short one, not under 50 ms
// (each interval's figures need I/Os and round trips of their own; at a
// budget's floor a disk pattern's 200 ms is then 4 samples, the fewest
// compare tests).
func sampled(d time.Duration) time.Duration {
	return min(time.Second, max(50*time.Millisecond, (d/compareSamples).Truncate(10*time.Millisecond)))
}

// diskSize is the test file of doctor's disk steps: larger than a
// controller's cache, small enough to lay out in seconds.
const diskSize = 256 << 20

// fileFits: the agent takes a test file of diskSize (its --max-disk-size
// would refuse a larger one when the step ran).
func fileFits(in Inputs) error {
	if in.AgentMaxDiskSize > 0 && in.AgentMaxDiskSize < diskSize {
		return command.NotApplicable(fmt.Sprintf("the agent allows test files up to %s (its --max-disk-size) and this step writes %s: raise it on the agent",
			metric.FormatBytes(in.AgentMaxDiskSize), metric.FormatBytes(diskSize)))
	}
	return nil
}

// whole is a duration as the steps' flags took it: whole seconds, at
// least 1.
func whole(d time.Duration) time.Duration {
	return max(time.Second, d.Round(time.Second))
}

// Floor is the least budget the steps that apply to in can keep: each
// one's fixed time and a second of measuring (what a step is given at the
// least), rounded to a second, and the run's end (Finish); and the step
// whose fixed time is the longest. A budget below it is not kept: the
// steps take the floor anyway.
func Floor(in Inputs) (floor time.Duration, longest string) {
	var most time.Duration
	for _, st := range Steps {
		if st.Applies(in) != nil {
			continue
		}
		floor += st.Fixed
		if st.Weight > 0 {
			floor += time.Second
		}
		if st.Fixed > most {
			most, longest = st.Fixed, st.Name
		}
	}
	return floor.Round(time.Second) + Finish, longest
}

// Share is the time a step of this weight is given of what is left: the
// time left less what the steps still to run take besides measuring
// (fixedLeft, theirs and this one's), its weight's share of that among
// the weights still to run, less a tenth for what the estimates miss.
func Share(left, fixedLeft time.Duration, weight, weightsLeft float64) time.Duration {
	if weightsLeft <= 0 || left <= fixedLeft {
		return 0
	}
	return time.Duration(float64(left-fixedLeft) * weight / weightsLeft * 0.9)
}
