package command

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/plan"
	"github.com/narrows/narrows/internal/result"
)

// TestPlansFromReports: each plan reads a run held in memory, as doctor
// gives it the Reports of its steps so far: what it read cites the run,
// the Reports stay as they were, and a run without what a plan reads is
// the usage error `--from FILE` gives.
func TestPlansFromReports(t *testing.T) {
	rr := &result.Report{Command: "net rr", Target: "db2:7447", RR: &result.RR{RoundTrips: 1000,
		Config: result.RRConfig{RequestBytes: 64, ResponseBytes: 64}, Latency: result.Latency{Mean: result.Seconds(2 * time.Millisecond), P50: result.Seconds(1900 * time.Microsecond)}}}
	replica := &result.Report{Command: "plan replica", ReplicaPlan: &result.ReplicaPlan{Engine: "postgres",
		Log:    []result.LogRate{{Mean: 1e6, Peak: 3e6, Source: "measured"}},
		Stream: result.ReplicaStream{Capacity: 5e6, Source: "measured", LimitedBy: result.LimitWindow}}}
	saved := plan.Saved{Name: "doctor.jsonl", Reports: []*result.Report{replica, rr}}
	env := Env{Tool: result.Tool{Version: "test"}, Now: time.Now}
	ctx := context.Background()

	chatty := DefaultPlanChatty()
	chatty.From = saved
	rep, err := chatty.Run(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.ChattyPlan.Figures; f.NetworkRTT.D() != 2*time.Millisecond || !strings.Contains(f.NetworkFrom, "(saved in doctor.jsonl)") || rep.Target != "doctor.jsonl" {
		t.Errorf("plan chatty read %v from %q, target %q", f.NetworkRTT, f.NetworkFrom, rep.Target)
	}

	sync := DefaultPlanSync()
	sync.From = saved
	if rep, err = sync.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if rtt := rep.SyncPlan.Parts.RTT; rtt == nil || rtt.Seconds.D() != 1900*time.Microsecond || rtt.Source != "measured (doctor.jsonl)" {
		t.Errorf("plan sync read the round trip %+v", rtt)
	}

	rp := DefaultPlanReplica()
	rp.From = saved
	if rep, err = rp.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if p := rep.ReplicaPlan; p.Log[0].Source != "measured (doctor.jsonl)" || p.Stream.Source != "measured (doctor.jsonl)" || p.Engine != "postgres" {
		t.Errorf("plan replica read the log from %q, the stream from %q, engine %q", p.Log[0].Source, p.Stream.Source, p.Engine)
	}
	if replica.ReplicaPlan.Log[0].Source != "measured" || replica.ReplicaPlan.Stream.Source != "measured" {
		t.Errorf("the saved replica plan changed: %+v", replica.ReplicaPlan)
	}

	bk := DefaultPlanBackup()
	bk.From = saved
	_, err = bk.Run(ctx, env)
	var user *errext.User
	if !errors.As(err, &user) || !strings.HasPrefix(err.Error(), "--from doctor.jsonl: no backup plan in it") {
		t.Errorf("plan backup from a run without a plan: %v", err)
	}
}
