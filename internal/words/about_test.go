package words

import (
	"testing"

	"github.com/narrows/narrows/internal/result"
)

// TestAbout: what doctor's verdicts stand beside one another by (issue
// 27): the two round trips' sizes apart, the database on this host not
// read as the path's, each disk by its directory, a stream the agent
// sent by its sender first.
func TestAbout(t *testing.T) {
	db1, db2 := &result.Facts{Hostname: "db1"}, &result.Facts{Hostname: "db2"}
	rr := func(size int64) *result.Report {
		return &result.Report{Target: "10.0.0.2:7447", Facts: db1, AgentFacts: db2, RR: &result.RR{Config: result.RRConfig{RequestBytes: size, ResponseBytes: size}}}
	}
	for _, c := range []struct {
		name string
		rep  *result.Report
		want string
	}{
		{"64 B", rr(64), "64 B round trips, db1 ⇄ db2"},
		{"500 B", rr(500), "500 B round trips, db1 ⇄ db2"},
		{"no facts", &result.Report{Target: "10.0.0.2:7447", RR: &result.RR{Config: result.RRConfig{RequestBytes: 64, ResponseBytes: 8}}}, "64 B / 8 B round trips, this host ⇄ 10.0.0.2:7447"},
		{"reverse stream", &result.Report{Target: "10.0.0.2:7447", Facts: db1, AgentFacts: db2, Stream: &result.Stream{Config: result.StreamConfig{Direction: "reverse", Streams: 1}}}, "db2 → db1"},
		{"local database", &result.Report{Target: "postgres://narrows:xxxxx@127.0.0.1:5432/postgres", DBPing: &result.DBPing{}}, "queries to the database on this host (127.0.0.1)"},
		{"remote database", &result.Report{Target: "postgres://narrows:xxxxx@pg-primary.example:5432/postgres", DBPing: &result.DBPing{}}, "queries to pg-primary.example"},
		{"log disk", &result.Report{Disk: &result.Disk{Path: "/var/lib/postgresql/wal", Config: result.DiskConfig{Profiles: []string{"log"}}}}, "disk /var/lib/postgresql/wal (log)"},
		{"agent's disk", &result.Report{Target: "10.0.0.2:7447", AgentFacts: db2, Disk: &result.Disk{Path: "/backup", Agent: "10.0.0.2:7447", Config: result.DiskConfig{Profiles: []string{"backup"}}}}, "disk /backup on db2 (backup)"},
		{"a plan", &result.Report{BackupPlan: &result.BackupPlan{}}, ""},
		{"a chatty plan from a local database", &result.Report{Target: "run.jsonl", ChattyPlan: &result.ChattyPlan{Figures: result.ChattyFigures{Measured: "postgres://narrows:xxxxx@127.0.0.1:5432/postgres"}}},
			"a session's queries to the database on this host (127.0.0.1)"},
		{"a chatty plan through an agent", &result.Report{ChattyPlan: &result.ChattyPlan{Figures: result.ChattyFigures{Measured: "db2:7447"}}}, "round trips to db2:7447"},
		{"a chatty plan given by hand", &result.Report{ChattyPlan: &result.ChattyPlan{}}, ""},
	} {
		if got := About(c.rep); got != c.want {
			t.Errorf("%s: About = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Said(result.Finding{Summary: "Held.", About: "64 B round trips, db1 ⇄ db2"}); got != "64 B round trips, db1 ⇄ db2: Held." {
		t.Errorf("Said = %q", got)
	}
}
