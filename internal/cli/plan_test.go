package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// planOf runs `narrows plan WHAT --json ARGS` and returns its summary's
// KEY object and the whole output; t fails unless the plan exits 0 with
// that object.
func planOf(t *testing.T, env map[string]string, what, key string, args ...string) (map[string]any, string) {
	t.Helper()
	stdout, stderr, code := run(t, env, append([]string{"plan", what, "--json"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, sum := itest.Records(t, stdout)
	p, ok := sum[key].(map[string]any)
	if !ok {
		t.Fatalf("no %s in %s", key, stdout)
	}
	return p, stdout
}

// planCells runs plan backup --json and returns its cells.
func planCells(t *testing.T, args ...string) ([]map[string]any, string) {
	t.Helper()
	plan, stdout := planOf(t, nil, "backup", "backup_plan", args...)
	var cells []map[string]any
	for _, c := range plan["cells"].([]any) {
		cells = append(cells, c.(map[string]any))
	}
	return cells, stdout
}

// TestPlanBackupOffline: a plan from stages given by hand answers the
// field report's figure (10 TB over 1 Gbit/s ≈ 23.7 h) with the JSON the
// issue names, and a saved plan re-plans with one stage changed.
func TestPlanBackupOffline(t *testing.T) {
	cells, stdout := planCells(t, "--size", "10GB,10TB", "--assume", "network=117MB/s", "--assume", "disk=1GB/s", "--compression", "none")
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	for _, k := range []string{"size_bytes", "compression", "backup_seconds", "restore_seconds", "backup_bytes_per_second",
		"restore_bytes_per_second", "backup_bottleneck", "restore_bottleneck"} {
		if _, ok := cells[1][k]; !ok {
			t.Errorf("a cell lacks %q: %v", k, cells[1])
		}
	}
	if h := cells[1]["backup_seconds"].(float64) / 3600; h < 23.6 || h > 23.8 || cells[1]["backup_bottleneck"] != "network" {
		t.Fatalf("10 TB over 117 MB/s: %.2f h limited by %v, want 23.7 h by the network", h, cells[1]["backup_bottleneck"])
	}
	saved := filepath.Join(t.TempDir(), "plan.jsonl")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	// What if the link were 10 Gbit/s: the disks (1 GB/s) take over.
	cells, _ = planCells(t, "--from", saved, "--size", "10TB", "--assume", "network=10Gbit/s", "--compression", "none")
	if s := cells[0]["backup_seconds"].(float64); s < 9999 || s > 10001 || cells[0]["backup_bottleneck"] != "source_disk" {
		t.Fatalf("10 TB at 10 Gbit/s with 1 GB/s disks: %.0f s limited by %v, want 10,000 s by the source disk", s, cells[0]["backup_bottleneck"])
	}
	// The table says the same, in words.
	out, _, _ := run(t, nil, "plan", "backup", "--from", saved, "--size", "10TB", "--assume", "network=10Gbit/s", "--compression", "none", "--rto", "2h")
	for _, want := range []string{"the database host's disk", "2.8 h", "MISSED", "network to backup host      1.25 GB/s  1 stream, assumed"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanBackupMeasured: plan backup --to a real agent measures every
// stage — the data path here and the backup path there (the backup
// profile), the network both ways with one stream and N, compression on
// both hosts — and plans from them; the agent's directory is left empty.
func TestPlanBackupMeasured(t *testing.T) {
	t.Parallel() // it waits on a whole doctor or plan run, and holds what ran, not how fast
	far, near := t.TempDir(), t.TempDir()
	a := itest.StartAgent(t, []string{"--disk-path", far})
	r := itest.Run(t, 3*time.Minute, nil, "plan", "backup", "--to", a.Addr, "--data-path", near, "--backup-path", far,
		"--stage-duration", "1s", "--disk-size", "64M", "--compression", "none,lz4", "--files", "2", "--size", "1TB", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for i, want := range []string{"the data path", "the network to the agent, 1 stream then 4", "the network back", "the backup path on the agent", "compression on this host (lz4)", "compression on the agent (lz4"} {
		if !strings.Contains(r.Stderr, fmt.Sprintf("step %d of 6: %s", i+1, want)) {
			t.Errorf("progress lacks step %d, %q:\n%s", i+1, want, r.Stderr)
		}
	}
	_, sum := itest.Records(t, r.Stdout)
	plan := itest.Obj(sum, "backup_plan")
	st := itest.Obj(plan, "stages")
	for _, k := range []string{"source_read", "source_write", "target_write", "target_read"} {
		if v, ok := itest.Num(itest.Obj(st, k), "bytes_per_second"); !ok || v <= 0 {
			t.Errorf("stage %s not measured: %v", k, st[k])
		}
	}
	for _, k := range []string{"network_out", "network_in"} {
		if rs, _ := st[k].([]any); len(rs) != 2 {
			t.Errorf("%s: %v, want 1 and 4 streams", k, st[k])
		}
	}
	sides := map[string]bool{}
	for _, c := range st["codecs"].([]any) {
		m := c.(map[string]any)
		ratio, _ := itest.Num(m, "ratio")
		speed, _ := itest.Num(m, "compress_bytes_per_second_per_core")
		if m["codec"] == "lz4" && ratio > 1 && speed > 0 {
			sides[m["side"].(string)] = true
		}
	}
	if !sides["source"] || !sides["target"] {
		t.Errorf("lz4 measured on %v, want both sides: %v", sides, st["codecs"])
	}
	cells := plan["cells"].([]any)
	if len(cells) != 2 {
		t.Fatalf("%d cells, want none and lz4 for 1 TB", len(cells))
	}
	for _, c := range cells {
		m := c.(map[string]any)
		for _, k := range []string{"backup_bottleneck", "restore_bottleneck"} {
			if b := m[k]; b == "" || b == "unmeasured" {
				t.Errorf("%v: %s %v", m["compression"], k, b)
			}
		}
	}
	if left, _ := os.ReadDir(far); len(left) != 0 {
		t.Errorf("the agent left %v in %s", left, far)
	}
}

// TestPlanBackupSizesCarry: a bare byte count is a size (issue 25 §2.10:
// --size 666755437B, the size db ping's server read, was refused), and
// --from without --size plans the saved plan's sizes, not the defaults:
// a re-plan that dropped the database's own size answered another
// question.
func TestPlanBackupSizesCarry(t *testing.T) {
	cells, stdout := planCells(t, "--size", "666755437B,10TB", "--assume", "network=117MB/s", "--assume", "disk=1GB/s", "--compression", "none")
	if len(cells) != 2 || cells[0]["size_bytes"].(float64) != 666755437 {
		t.Fatalf("cells %v, want 666755437 bytes and 10 TB", cells)
	}
	saved := filepath.Join(t.TempDir(), "plan.jsonl")
	if err := os.WriteFile(saved, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	cells, _ = planCells(t, "--from", saved, "--assume", "network=10Gbit/s", "--compression", "none")
	var sizes []float64
	for _, c := range cells {
		sizes = append(sizes, c["size_bytes"].(float64))
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]float64{666755437, 10e12}) {
		t.Errorf("re-planned from the saved plan: sizes %v, want the saved 666755437 and 1e13", sizes)
	}
	// Asked anew, the new sizes.
	cells, _ = planCells(t, "--from", saved, "--size", "1TB", "--compression", "none")
	if len(cells) != 1 || cells[0]["size_bytes"].(float64) != 1e12 {
		t.Errorf("--from with --size 1TB: %v", cells)
	}
	for _, bad := range []string{"0B", "-5GB", "12XB"} {
		if _, stderr, code := run(t, nil, "plan", "backup", "--size", bad, "--assume", "network=117MB/s"); code != cli.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--size %s: exit %d, %q; want exit 2 and one line", bad, code, stderr)
		}
	}
}

// TestAssumeOneGrammar: each plan reads --assume by the one grammar (issue
// 26): its figures as a list in one flag plan exactly as the same figures
// in flags of their own, and a later figure overrides an earlier one.
func TestAssumeOneGrammar(t *testing.T) {
	for _, c := range []struct {
		cmd      []string
		list     string
		repeated []string
	}{
		{[]string{"plan", "backup", "--size", "1TB", "--compression", "none,zstd-3"},
			"network=1MB/s,network=117MB/s,disk=1GB/s,cores=4,zstd-3.compress=400MB/s,zstd-3.decompress=1.2GB/s,zstd-3.ratio=4",
			[]string{"network=117MB/s", "disk=1GB/s", "cores=4", "zstd-3.compress=400MB/s", "zstd-3.decompress=1.2GB/s", "zstd-3.ratio=4"}},
		{[]string{"plan", "sync", "--op-log", "7GB", "--op-time", "9s"},
			"commit=0.9ms,local-flush=150us,rtt=1ms,rtt=10.3ms,remote-flush=150us,remote-write=30us,throughput=117MB/s",
			[]string{"commit=0.9ms", "local-flush=150us", "rtt=10.3ms", "remote-flush=150us", "remote-write=30us", "throughput=117MB/s"}},
		{[]string{"plan", "chatty", "--queries", "5000"},
			"rtt=9ms,rtt=420us,server=100us,request=500B,response=600B",
			[]string{"rtt=420us", "server=100us", "request=500B", "response=600B"}},
		{[]string{"plan", "replica", "--log-rate", "5MB/s"},
			"stream=1MB/s,stream=1.92MB/s,rtt=40ms,window=80KiB",
			[]string{"stream=1.92MB/s", "rtt=40ms", "window=80KiB"}},
	} {
		t.Run(c.cmd[1], func(t *testing.T) {
			list, stderr, code := run(t, nil, append(append(slices.Clone(c.cmd), "--json", "--assume"), c.list)...)
			if code != 0 {
				t.Fatalf("--assume %s: exit %d: %s", c.list, code, stderr)
			}
			args := append(slices.Clone(c.cmd), "--json")
			for _, a := range c.repeated {
				args = append(args, "--assume", a)
			}
			repeated, stderr, code := run(t, nil, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			if plans(t, list) != plans(t, repeated) {
				t.Errorf("a list in one --assume planned\n%s\nflags of their own\n%s", plans(t, list), plans(t, repeated))
			}
		})
	}
}

// plans is the JSON of a plan's run without what differs from run to run
// (times, the run's id).
func plans(t *testing.T, out string) string {
	t.Helper()
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		for _, k := range []string{"started_at", "ended_at", "run_id", "elapsed_seconds", "host", "version"} {
			delete(m, k)
		}
		b, _ := json.Marshal(m)
		kept = append(kept, string(b))
	}
	return strings.Join(kept, "\n")
}
