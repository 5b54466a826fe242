package advisor

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/words"
)

// TestTune: a printed tuning command only raises a setting, keeps the
// current min and default, and is left out when the current setting is
// enough; where the setting is not known narrows says how to read it.
func TestTune(t *testing.T) {
	const need = 32 << 20 // the buffer a window needs
	rmem := func(max int64, low ...int64) BufferEnd {
		return BufferEnd{Host: "the replica's host", OS: "linux", Key: "net.ipv4.tcp_rmem", Max: max, Low: low, Receiver: true}
	}
	wmem := func(os string, max int64, low ...int64) BufferEnd {
		return BufferEnd{Host: "the primary", OS: os, Key: "net.ipv4.tcp_wmem", Max: max, Low: low}
	}
	for _, tc := range []struct {
		name          string
		end           BufferEnd
		buffer, win   int64
		status        string
		command, line string // want: the command ("" none), and a part of the printed line
	}{
		// The defect: a 32 MiB maximum, and a need of 6 MiB. Nothing to run.
		{"linux above: enough", rmem(32<<20, 4096, 131072), 6 << 20, 3 << 20, result.TuningEnough, "", "maximum 32 MiB: enough, no change"},
		{"linux equal: enough", rmem(need, 4096, 131072), need, need / 2, result.TuningEnough, "", "enough"},
		{"linux below: raised, min and default kept", rmem(6<<20, 4096, 131072), need, need / 2, result.TuningRaise,
			`sysctl -w net.ipv4.tcp_rmem="4096 131072 33554432"`, `(now "4096 131072 6291456", maximum 6 MiB: too small)`},
		{"linux below, a raised default kept", rmem(1<<20, 8192, 1<<20), 2 << 20, 1 << 20, result.TuningRaise,
			`sysctl -w net.ipv4.tcp_rmem="8192 1048576 6291456"`, "too small"},
		{"linux below, min and default not known: kept by the command", rmem(131072), 1 << 20, 1 << 19, result.TuningRaise,
			`sysctl -w net.ipv4.tcp_rmem="$(cut -f1,2 /proc/sys/net/ipv4/tcp_rmem) 6291456"`, "too small"},
		{"linux sender below: wmem, raised to the kernel's default at least", wmem("linux", 1<<20, 4096, 16384), 2 << 20, 1 << 20, result.TuningRaise,
			`sysctl -w net.ipv4.tcp_wmem="4096 16384 4194304"`, "too small"},
		{"linux not known: read it first", rmem(0), need, need / 2, result.TuningUnknown, "",
			`cannot judge: run sysctl net.ipv4.tcp_rmem (not known here: its third number must be at least 33554432 (32 MiB)); if it is below, sysctl -w net.ipv4.tcp_rmem="$(cut -f1,2 /proc/sys/net/ipv4/tcp_rmem) 33554432"`},
		{"os not told, maximum known: Linux's setting", wmem("", 8<<20, 4096, 16384), 2 << 20, 1 << 20, result.TuningEnough, "", "enough"},
		// Windows: the level is never known here; never "disabled".
		{"windows window under 16 MiB: normal", BufferEnd{Host: "the replica's host", OS: "windows", Receiver: true}, 1 << 20, 270000, result.TuningUnknown, "",
			"if it is below, netsh interface tcp set global autotuninglevel=normal"},
		{"windows tiny window: still normal, never disabled", BufferEnd{Host: "the replica's host", OS: "windows", Receiver: true}, 64 << 10, 30000, result.TuningUnknown, "",
			"autotuninglevel=normal"},
		{"windows window over 16 MiB: experimental", BufferEnd{Host: "the replica's host", OS: "windows", Receiver: true}, 40 << 20, 20 << 20, result.TuningUnknown, "",
			"autotuninglevel=experimental"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Tune(tc.end, tc.buffer, tc.win)
			if !ok {
				t.Fatal("no tuning")
			}
			if got.Status != tc.status || got.Command != tc.command {
				t.Errorf("status %q command %q, want %q %q", got.Status, got.Command, tc.status, tc.command)
			}
			if line := words.Tuning(got); !strings.Contains(line, tc.line) {
				t.Errorf("line %q lacks %q", line, tc.line)
			}
			if err := CheckTuning(got); err != nil {
				t.Error(err)
			}
			for _, bad := range []string{"disabled\n", "=disabled", "=restricted", "=highlyrestricted"} {
				if strings.Contains(got.Command+got.IfBelow, bad) {
					t.Errorf("advises a capping level: %q %q", got.Command, got.IfBelow)
				}
			}
		})
	}
	// A Windows sender sizes its send buffer itself: nothing to tune.
	if _, ok := Tune(wmem("windows", 0), 1<<20, 1<<19); ok {
		t.Error("a tuning for a Windows sender")
	}
}

// TestCheckTuning: the checker itself fails the commands the rule forbids.
func TestCheckTuning(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    result.Tuning
	}{
		{"the defect: lowers 32 MiB to 6 MiB", result.Tuning{Host: "h", OS: "linux", Setting: "net.ipv4.tcp_rmem", Current: "4096 131072 33554432",
			CurrentMax: 32 << 20, Needed: 6 << 20, Status: result.TuningRaise, Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}},
		{"a command where enough", result.Tuning{Host: "h", OS: "linux", Setting: "net.ipv4.tcp_rmem", CurrentMax: 32 << 20, Needed: 6 << 20,
			Status: result.TuningEnough, Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 33554432"`}},
		{"lowers the default", result.Tuning{Host: "h", OS: "linux", Setting: "net.ipv4.tcp_rmem", Current: "4096 1048576 1048576",
			CurrentMax: 1 << 20, Needed: 2 << 20, Status: result.TuningRaise, Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}},
		{"min and default not known, yet set", result.Tuning{Host: "h", OS: "linux", Setting: "net.ipv4.tcp_rmem",
			CurrentMax: 1 << 20, Needed: 2 << 20, Status: result.TuningRaise, Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}},
		{"a bare command where not known", result.Tuning{Host: "h", OS: "linux", Setting: "net.ipv4.tcp_rmem", Needed: 2 << 20,
			Status: result.TuningUnknown, Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 6291456"`}},
		{"windows disabled", result.Tuning{Host: "h", OS: "windows", Setting: "autotuninglevel", Needed: 30000,
			Status: result.TuningUnknown, IfBelow: "netsh interface tcp set global autotuninglevel=disabled"}},
		{"windows normal for 20 MiB", result.Tuning{Host: "h", OS: "windows", Setting: "autotuninglevel", Needed: 20 << 20,
			Status: result.TuningUnknown, IfBelow: "netsh interface tcp set global autotuninglevel=normal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckTuning(tc.t); err == nil {
				t.Errorf("passed %+v", tc.t)
			}
		})
	}
}
