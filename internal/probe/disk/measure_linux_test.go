package disk

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestMeasureWhole: Measure runs the sequence every local disk run shares
// (check, open, lay out, run, close) with the hooks at their steps, and
// leaves nothing behind; a Config that fails its check opens nothing, and
// a run stopped during the layout measures nothing and leaves nothing.
func TestMeasureWhole(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Size: 4 << 20, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond, Engine: EngineAuto, Seed: 1,
		Profiles: []string{result.ProfileBackup}, Patterns: Profiles[result.ProfileBackup]()}
	var steps []string
	var intervals int
	res, err := Measure(context.Background(), cfg, Hooks{
		Opened:  func(tg *Target) { steps = append(steps, "opened") },
		LaidOut: func(tg *Target) { steps = append(steps, "laid out") },
	}, func(result.Interval) { intervals++ })
	if err != nil || res == nil || len(res.Patterns) != len(cfg.Patterns) {
		t.Fatalf("Measure = %+v, %v", res, err)
	}
	if len(steps) != 2 || steps[0] != "opened" || steps[1] != "laid out" || intervals == 0 {
		t.Errorf("hooks %v, %d intervals", steps, intervals)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d entries left in the directory", len(left))
	}

	bad := cfg
	bad.Patterns = []Pattern{{Profile: result.ProfileCustom, RW: "sideways", Block: 8 << 10, QD: 1, Threads: 1}}
	steps = nil
	if res, err := Measure(context.Background(), bad, Hooks{Opened: func(*Target) { steps = append(steps, "opened") }}, func(result.Interval) {}); err == nil || res != nil || len(steps) != 0 {
		t.Errorf("a bad pattern: %v, %v, hooks %v; want its error, nothing opened", res, err, steps)
	}

	ctx, cancel := context.WithCancel(context.Background())
	big := cfg
	big.Size = 256 << 20
	res, err = Measure(ctx, big, Hooks{Opened: func(*Target) { cancel() }}, func(result.Interval) {})
	if res != nil || err == nil {
		t.Errorf("stopped during the layout: %+v, %v; want nothing measured and an error", res, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d entries left after a stopped layout", len(left))
	}
}
