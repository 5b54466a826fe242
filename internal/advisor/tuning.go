package advisor

import (
	"fmt"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// Every tuning command narrows prints is made here, by one rule: a
// command only raises a setting (every number in it at least the current
// one, the current min and default kept), and there is none when the
// current setting is already enough. Where the current setting is not
// known, narrows says how to read it and what to run if it is too small,
// never a bare command that might lower it (pasting "4096 131072 6291456"
// over a 32 MiB maximum cut it to 6 MiB).

// BufferEnd is one end's TCP buffer setting as far as it is known.
type BufferEnd struct {
	Host string // "the replica's host", "the primary"
	OS   string // linux, windows; "" not known
	// Key is the Linux setting: net.ipv4.tcp_rmem (receiver) or
	// net.ipv4.tcp_wmem (sender).
	Key string
	Max int64   // its third field; 0 not known
	Low []int64 // its first two (min, default); nil not known
	// Receiver: the end whose window is advertised (on Windows, the
	// receive window auto-tuning level bounds it; a Windows sender sizes
	// its send buffer itself).
	Receiver bool
}

// Tune sets one end's setting against the buffer (Linux) and window
// (Windows) a stream needs, and words the command that raises it.
func Tune(e BufferEnd, buffer, window int64) (result.Tuning, bool) {
	switch e.OS {
	case "windows":
		if !e.Receiver {
			// Windows grows a socket's send buffer with the connection's
			// BDP (dynamic send buffering): no setting to raise.
			return result.Tuning{}, false
		}
		return tuneWindows(e, window), true
	case "linux", "":
		return tuneLinux(e, buffer), true
	}
	return result.Tuning{Host: e.Host, OS: e.OS, Needed: buffer, Status: result.TuningUnknown,
		Note: fmt.Sprintf("narrows does not read or plan TCP buffers on %s: its maximum must allow %s.", e.OS, metric.FormatBytes(buffer))}, true
}

func tuneLinux(e BufferEnd, buffer int64) result.Tuning {
	t := result.Tuning{Host: e.Host, OS: "linux", Setting: e.Key, Needed: buffer, CurrentMax: e.Max}
	// The new maximum: what the window needs, and never under the kernel's
	// own default maximum (a host below it was capped on purpose or by
	// mistake; the default costs memory only while a stream uses it).
	target := max(buffer, LinuxRmemDefault)
	if strings.HasSuffix(e.Key, "wmem") {
		target = max(buffer, LinuxWmemDefault)
	}
	low := fmt.Sprintf("$(cut -f1,2 /proc/sys/net/ipv4/%s)", strings.TrimPrefix(e.Key, "net.ipv4."))
	if len(e.Low) == 2 && e.Low[0] > 0 && e.Low[1] > 0 && e.Max > 0 {
		low = fmt.Sprintf("%d %d", e.Low[0], e.Low[1])
		t.Current = fmt.Sprintf("%s %d", low, e.Max)
	}
	raise := fmt.Sprintf(`sysctl -w %s="%s %d"`, e.Key, low, target)
	switch {
	case e.Max <= 0:
		t.Status = result.TuningUnknown
		t.Check = "sysctl " + e.Key
		t.IfBelow = raise
		t.Note = fmt.Sprintf("not known here: its third number must be at least %d (%s)", buffer, metric.FormatBytes(buffer))
	case e.Max >= buffer:
		t.Status = result.TuningEnough
	default:
		t.Status = result.TuningRaise
		t.Command = raise
	}
	return t
}

// Windows' receive window auto-tuning levels: disabled holds the window
// at 64 KiB, highlyrestricted and restricted hold it to 256 KiB and
// 1 MiB; normal, the default, grows it to 16 MiB (window scale 8);
// experimental to 1 GiB (scale 14). narrows never advises the first
// three: each caps the window it is asked to grow.
var windowsLevels = []struct {
	name string
	max  int64
}{{"normal", 65535 << 8}, {"experimental", 65535 << 14}}

// WindowsLevel is the Windows receive window auto-tuning level to ask for
// a window of n bytes: normal, or experimental beyond what normal allows.
func WindowsLevel(n int64) string {
	for _, l := range windowsLevels {
		if n <= l.max {
			return l.name
		}
	}
	return windowsLevels[len(windowsLevels)-1].name
}

func tuneWindows(e BufferEnd, window int64) result.Tuning {
	// The level has no API (sysinfo does not read it), so it is never
	// known here: say how to read it, and what to set when it is below.
	level := WindowsLevel(window)
	t := result.Tuning{Host: e.Host, OS: "windows", Setting: "autotuninglevel", Needed: window, Status: result.TuningUnknown,
		Check:   "netsh interface tcp show global",
		IfBelow: "netsh interface tcp set global autotuninglevel=" + level}
	if level == "normal" {
		t.Note = fmt.Sprintf("\"Receive Window Auto-Tuning Level\" must read normal (the default, up to 16 MiB) or experimental for a %s window; disabled, highlyrestricted and restricted cap it at 64 KiB, 256 KiB and 1 MiB", metric.FormatBytes(window))
	} else {
		t.Note = fmt.Sprintf("\"Receive Window Auto-Tuning Level\" must read experimental for a %s window: normal stops at 16 MiB", metric.FormatBytes(window))
	}
	return t
}

// CheckTuning holds a tuning to the rule: no command where the setting is
// enough or not known; a Linux command's numbers each at least the
// current ones, its maximum at least what is needed; a Windows level never
// one that caps the window. It is what a report's invariant checker runs
// on every tuning.
func CheckTuning(t result.Tuning) error {
	switch t.Status {
	case result.TuningEnough:
		if t.Command != "" || t.CurrentMax < t.Needed {
			return fmt.Errorf("%s %s: enough at %d for %d, with command %q", t.Host, t.Setting, t.CurrentMax, t.Needed, t.Command)
		}
		return nil
	case result.TuningUnknown:
		if t.Command != "" {
			return fmt.Errorf("%s %s: not known, yet a bare command %q", t.Host, t.Setting, t.Command)
		}
		if t.IfBelow == "" {
			return nil
		}
		return checkCommand(t, t.IfBelow)
	case result.TuningRaise:
		if t.Command == "" {
			return fmt.Errorf("%s %s: too small and no command", t.Host, t.Setting)
		}
		return checkCommand(t, t.Command)
	}
	return fmt.Errorf("%s %s: status %q", t.Host, t.Setting, t.Status)
}

func checkCommand(t result.Tuning, cmd string) error {
	if t.OS == "windows" {
		level, ok := strings.CutPrefix(cmd, "netsh interface tcp set global autotuninglevel=")
		if !ok || (level != "normal" && level != "experimental") || windowsMax(level) < t.Needed {
			return fmt.Errorf("%s: %q does not allow a %d-byte window", t.Host, cmd, t.Needed)
		}
		return nil
	}
	rest, ok := strings.CutPrefix(cmd, "sysctl -w "+t.Setting+`="`)
	if !ok || !strings.HasSuffix(rest, `"`) {
		return fmt.Errorf("%s: %q does not set %s", t.Host, cmd, t.Setting)
	}
	f := strings.Fields(strings.TrimSuffix(rest, `"`))
	if len(f) == 0 {
		return fmt.Errorf("%s: %q sets nothing", t.Host, cmd)
	}
	var newMax int64
	if _, err := fmt.Sscanf(f[len(f)-1], "%d", &newMax); err != nil {
		return fmt.Errorf("%s: %q has no maximum", t.Host, cmd)
	}
	if newMax < t.Needed || (t.CurrentMax > 0 && newMax < t.CurrentMax) {
		return fmt.Errorf("%s: %q sets the maximum to %d: needed %d, now %d", t.Host, cmd, newMax, t.Needed, t.CurrentMax)
	}
	if f[0] == "$(cut" {
		return nil // the current min and default, kept as they are
	}
	cur := strings.Fields(t.Current)
	if len(f) != 3 || len(cur) != 3 {
		return fmt.Errorf("%s: %q sets min and default with the current %q not known", t.Host, cmd, t.Current)
	}
	for k := range 2 {
		var a, b int64
		fmt.Sscanf(f[k], "%d", &a)
		fmt.Sscanf(cur[k], "%d", &b)
		if a < b {
			return fmt.Errorf("%s: %q lowers %s's field %d from %d to %d", t.Host, cmd, t.Setting, k+1, b, a)
		}
	}
	return nil
}

func windowsMax(level string) int64 {
	for _, l := range windowsLevels {
		if l.name == level {
			return l.max
		}
	}
	return 0
}
