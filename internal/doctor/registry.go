package doctor

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/probe/disk"
	"github.com/narrows/narrows/internal/result"
)

// Inputs are what the user gave doctor: each step runs when what it needs
// is there, and says which flag would make it run when not.
type Inputs struct {
	// Agent: --to was given (the agent on the replica's or the backup's
	// host); AgentDisk: it allows disk tests (its --disk-path).
	Agent, AgentDisk bool
	DSN              string   // the primary
	ReplicaDSNs      []string // --replica-dsn, as given ([NAME=]DSN)
	DataPath         string   // here: the database's data files
	LogPath          string   // here: its log
	BackupPath       string   // on the agent: where backups land
}

// Step is one entry of the registry.
type Step struct {
	// Rank orders the steps: measurements first, each plan after what
	// it reads.
	Rank int
	Area string // network, storage, database, replication, backup
	// Weight is the step's share of the budget against the others'.
	Weight float64
	// Fixed is about how long the step takes besides what it is given:
	// laying out test files, connecting, a plan's fixed passes (its
	// compression runs a second a codec each way on each host).
	Fixed time.Duration
	// Command is the narrows command it runs, e.g. "net stream".
	Command string
	// Agent is the flag that names the agent ("--to", "--on") when the
	// step reaches it: doctor adds it with the secret's flags (the step's
	// Args says when it needs one). db ping takes none: its agent must be
	// beside the database, and doctor's is on the replica's host.
	Agent string
	// FromRun: a plan that reads the run so far (doctor adds --from).
	FromRun bool
	// Args gives the step's flags for the time d it is given, or why it
	// does not apply (then it is skipped, and the reason says what to
	// give).
	Args func(in Inputs, d time.Duration) (args []string, skip string)
}

// Registry is every step doctor runs, by name. A new probe is one entry.
var Registry = map[string]Step{
	"net stream": {Rank: 11, Area: "network", Weight: 2, Fixed: 500 * time.Millisecond, Command: "net stream", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST (narrows serve on the replica's host)"
			}
			// One stream, then 4: half the time each.
			return []string{"--streams", "4", "--duration", secs(d / 2)}, ""
		}},
	"net stream reverse": {Rank: 10, Area: "network", Weight: 2, Fixed: 500 * time.Millisecond, Command: "net stream", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			return []string{"--reverse", "--streams", "4", "--duration", secs(d / 2)}, ""
		}},
	// Round trips idle and while 4 streams fill the path toward the
	// agent, as a backup pushed from here would (its warm-up and tail
	// are fixed).
	"net rr under load": {Rank: 23, Area: "network", Weight: 1, Fixed: 2500 * time.Millisecond, Command: "net rr", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			return []string{"--under-load", "--load-streams", "4", "--duration", secs(d)}, ""
		}},
	// The path MTU takes no time of the budget: a probe per direction on
	// a clean path, a search of a dozen short ones around a black hole.
	"net mtu": {Rank: 22, Area: "network", Weight: 0, Fixed: time.Second, Command: "net mtu", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			return []string{}, ""
		}},
	"net rr 64 B": {Rank: 21, Area: "network", Weight: 1, Fixed: 300 * time.Millisecond, Command: "net rr", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			return []string{"--request", "64B", "--response", "64B", "--duration", secs(d)}, ""
		}},
	"net rr 500 B": {Rank: 20, Area: "network", Weight: 1, Fixed: 300 * time.Millisecond, Command: "net rr", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			return []string{"--request", "500B", "--response", "500B", "--duration", secs(d)}, ""
		}},
	"net commit": {Rank: 30, Area: "replication", Weight: 1, Fixed: time.Second, Command: "net commit", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "no agent: give --to HOST"
			}
			// A small commit's log (1 KiB), acknowledged once durable; an
			// agent without --disk-path acknowledges on receipt, and says so.
			return []string{"--block", "1K", "--duration", secs(d)}, ""
		}},
	"db ping": {Rank: 40, Area: "database", Weight: 1, Fixed: 500 * time.Millisecond, Command: "db ping",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if in.DSN == "" {
				return nil, "no database: give --dsn (the primary)"
			}
			return []string{"--dsn", in.DSN, "--duration", secs(d)}, ""
		}},
	"db repl": {Rank: 41, Area: "replication", Weight: 1, Fixed: time.Second, Command: "db repl",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if in.DSN == "" {
				return nil, "no database: give --dsn (the primary) and --replica-dsn"
			}
			a := []string{"--dsn", in.DSN, "--duration", secs(d)}
			for _, r := range in.ReplicaDSNs {
				a = append(a, "--replica-dsn", r)
			}
			return a, ""
		}},
	"disk data path": {Rank: 50, Area: "storage", Weight: 2, Fixed: 2 * time.Second, Command: "disk",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if in.DataPath == "" {
				return nil, "give --data-path (the database's data directory) to measure its pages"
			}
			return diskArgs(in.DataPath, result.ProfileData, d), ""
		}},
	"disk log path": {Rank: 51, Area: "storage", Weight: 1.5, Fixed: 2 * time.Second, Command: "disk",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if in.LogPath == "" {
				return nil, "give --log-path (the directory of the database's log) to measure its flushes"
			}
			return diskArgs(in.LogPath, result.ProfileLog, d), ""
		}},
	"disk on the agent": {Rank: 52, Area: "storage", Weight: 1.5, Fixed: 2 * time.Second, Command: "disk", Agent: "--on",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			switch {
			case !in.Agent:
				return nil, "no agent: give --to HOST"
			case !in.AgentDisk:
				return nil, "the agent runs no disk tests: start it with --disk-path DIR"
			}
			a := diskArgs("", result.ProfileLog, d)
			if in.BackupPath != "" {
				a = append(a, "--path", in.BackupPath)
			}
			return a, ""
		}},
	"plan backup": {Rank: 60, Area: "backup", Weight: 3, Fixed: 22 * time.Second, Command: "plan backup", Agent: "--to",
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			switch {
			case !in.Agent:
				return nil, "no agent: give --to HOST (on the backup host)"
			case in.DataPath == "" || in.BackupPath == "":
				return nil, "give --data-path and --backup-path (on the agent) to plan backups and restores"
			}
			// Six stages are measured, each for its share.
			a := []string{"--data-path", in.DataPath, "--backup-path", in.BackupPath, "--stage-duration", secs(d / 8), "--disk-size", "256M"}
			if in.DSN != "" {
				a = append(a, "--dsn", in.DSN)
			}
			return a, ""
		}},
	"plan replica": {Rank: 70, Area: "replication", Weight: 1, Fixed: time.Second, Command: "plan replica", FromRun: true,
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent || in.DSN == "" {
				return nil, "needs one stream to the replica's host (--to) and the primary's log rate (--dsn)"
			}
			return []string{"--dsn", in.DSN, "--watch", secs(max(d, 2*time.Second))}, "" // it reads the rate each second
		}},
	"plan sync": {Rank: 71, Area: "replication", Weight: 0, Fixed: 200 * time.Millisecond, Command: "plan sync", FromRun: true,
		// After the measurements it reads: the forward stream is the last
		// net stream (plan replica), the 64 B round trip the last net rr
		// and db ping after both (plan chatty).
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent {
				return nil, "needs net commit to the replica's host (--to)"
			}
			return nil, ""
		}},
	"plan chatty": {Rank: 72, Area: "database", Weight: 0, Fixed: 200 * time.Millisecond, Command: "plan chatty", FromRun: true,
		Args: func(in Inputs, d time.Duration) ([]string, string) {
			if !in.Agent && in.DSN == "" {
				return nil, "needs round trips: give --to HOST or --dsn"
			}
			return nil, ""
		}},
}

// Names are the registry's steps in order.
func Names() []string {
	var n []string
	for k := range Registry {
		n = append(n, k)
	}
	slices.SortFunc(n, func(a, b string) int { return Registry[a].Rank - Registry[b].Rank })
	return n
}

// diskArgs measure a profile for d in all, each pattern for its share,
// on a test file small enough to lay out in a second or two.
func diskArgs(path, profile string, d time.Duration) []string {
	n := len(disk.Profiles[profile]())
	each := max(d/time.Duration(n), 200*time.Millisecond)
	a := []string{"--profile", profile, "--duration", each.Round(10 * time.Millisecond).String(), "--size", "256M"}
	if path != "" {
		a = append(a, "--path", path)
	}
	return a
}

// secs is a duration as a flag takes it, whole seconds, at least 1.
func secs(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(math.Max(1, math.Round(d.Seconds()))))
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
