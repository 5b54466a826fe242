package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/cli"
)

// planCells runs plan backup --json and returns its cells.
func planCells(t *testing.T, args ...string) ([]map[string]any, string) {
	t.Helper()
	stdout, stderr, code := run(t, nil, append([]string{"plan", "backup", "--json"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	plan := rec["backup_plan"].(map[string]any)
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
