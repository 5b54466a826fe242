//go:build linux

package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// Issue 25 §2 defect 1: plan replica printed `sysctl -w
// net.ipv4.tcp_rmem="4096 131072 6291456"   (now 32 MiB: enough)`, which
// pasted cut a 32 MiB maximum to 6 MiB. A printed tuning command must only
// raise a setting, and there is none where the setting is enough.

// replicaTuning runs plan replica through the agent on B and returns its
// plan's tunings, the stream's limit and the verdict.
func replicaTuning(t *testing.T, l *testbed.DelayLine, logRate string) (ts []result.Tuning, limit, verdict, table string) {
	t.Helper()
	args := []string{"--to", agentAddr(l), "--stage-duration", fallingStreamFor().String(), "--streams", "1", "--log-rate", logRate}
	res := runOnA(t, l, 2*time.Minute, append([]string{"plan", "replica", "--json"}, args...)...)
	_, sum := itest.Records(t, res.Stdout)
	p := itest.Obj(sum, "replica_plan")
	b, _ := json.Marshal(itest.Obj(p, "window")["tuning"])
	if err := json.Unmarshal(b, &ts); err != nil || len(ts) == 0 {
		t.Fatalf("no tuning in the plan (%v):\n%s", err, res.Stdout)
	}
	limit, _ = itest.Obj(p, "stream")["limited_by"].(string)
	verdict, _ = p["verdict"].(string)
	table = runOnA(t, l, 2*time.Minute, append([]string{"plan", "replica"}, args...)...).Stdout
	return ts, limit, verdict, table
}

func receiverTuning(t *testing.T, ts []result.Tuning) result.Tuning {
	t.Helper()
	for _, x := range ts {
		if x.Setting == "net.ipv4.tcp_rmem" {
			return x
		}
	}
	t.Fatalf("no tcp_rmem tuning for the replica's host: %+v", ts)
	return result.Tuning{}
}

// readRmem is host h's net.ipv4.tcp_rmem as its three numbers.
func readRmem(t *testing.T, h *testbed.Host) string {
	t.Helper()
	out, err := h.Command(context.Background(), "sysctl", "-n", "net.ipv4.tcp_rmem").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// TestPlanReplicaTuning: on a 30 ms, 100 Mbit/s line with the replica's
// host capped at 128 KiB of receive buffer, one stream is window-bound
// below a 5 MB/s log, and plan replica prints a command that raises
// tcp_rmem, keeping its min and default. Pasted on the replica's host, it
// frees the stream; planned again, the setting is enough and there is no
// command.
func TestPlanReplicaTuning(t *testing.T) {
	setUp(t, 1)
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 30 * time.Millisecond, RateBitsPerSecond: 100e6})
	capRmem(t, l.B)
	startAgent(t, l)
	const logRate = "2MB/s,5MB/s"

	capped := readRmem(t, l.B)
	ts, limit, verdict, table := replicaTuning(t, l, logRate)
	rx := receiverTuning(t, ts)
	t.Logf("capped tcp_rmem %q: stream limited by %s, verdict %s; tuning %+v", capped, limit, verdict, rx)
	if limit != "window" {
		t.Errorf("with a %s tcp_rmem the stream reads %s-limited, want window", capped, limit)
	}
	if rx.Status != result.TuningRaise || rx.Current != capped {
		t.Fatalf("the replica's host at %q: status %s, current %q, want raise from it", capped, rx.Status, rx.Current)
	}
	if err := advisor.CheckTuning(rx); err != nil {
		t.Error(err)
	}
	if !strings.Contains(table, rx.Command) {
		t.Errorf("the table does not print the command %q:\n%s", rx.Command, table)
	}
	// Paste it where the DBA would.
	if out, err := l.B.Command(context.Background(), "sh", "-c", rx.Command).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", rx.Command, err, out)
	}
	raised := readRmem(t, l.B)
	was, now := strings.Fields(capped), strings.Fields(raised)
	for i := range was {
		var a, b int64
		fmt.Sscan(was[i], &a)
		fmt.Sscan(now[i], &b)
		if b < a {
			t.Errorf("the command lowered tcp_rmem field %d: %q → %q", i+1, capped, raised)
		}
	}
	var newMax int64
	fmt.Sscan(now[2], &newMax)
	if newMax < rx.Needed {
		t.Errorf("tcp_rmem %q after the command: under the %d bytes needed", raised, rx.Needed)
	}

	pasted := rx.Command
	ts, limit, verdict, table = replicaTuning(t, l, logRate)
	rx = receiverTuning(t, ts)
	t.Logf("RESULT tcp_rmem %q → %q by %q; planned again: stream limited by %s, verdict %s; tuning %+v", capped, raised, pasted, limit, verdict, rx)
	if rx.Status != result.TuningEnough || rx.Command != "" {
		t.Errorf("tcp_rmem %q is enough for %d bytes, yet status %s, command %q", raised, rx.Needed, rx.Status, rx.Command)
	}
	if limit == "window" {
		t.Errorf("after the command the stream is still window-limited")
	}
	for _, x := range ts {
		if err := advisor.CheckTuning(x); err != nil {
			t.Error(err)
		}
	}
	if strings.Contains(table, "sysctl -w") {
		t.Errorf("every setting is enough, yet the table prints a command:\n%s", table)
	}
}
