//go:build linux

package testbed

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// helperDelayLine builds a delay line, announces its namespaces and
// devices as one JSON line, and blocks: the test kills it to play a crash.
func helperDelayLine(enc *json.Encoder) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := NewDelayLine(ctx, DelayLineOptions{RTT: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	if err := enc.Encode(map[string]string{"a": l.A.NS, "b": l.B.NS, "deva": l.A.Dev, "devb": l.B.Dev}); err != nil {
		return err
	}
	select {} // until killed (or the helper's own deadline)
}

// tunDevices lists the TUN devices in ns (or the root namespace for "").
func tunDevices(t *testing.T, ns string) []string {
	t.Helper()
	args := []string{"-j", "link", "show", "type", "tun"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		return nil // no such namespace
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	return names
}

func TestDelayLineClose(t *testing.T) {
	SkipUnlessDelayLine(t)
	rootBefore := tunDevices(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := NewDelayLine(ctx, DelayLineOptions{RTT: 2 * time.Millisecond, RateBitsPerSecond: 10_000_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) //nolint:errcheck
	for _, h := range l.Hosts() {
		if devs := tunDevices(t, h.NS); !slices.Equal(devs, []string{h.Dev}) {
			t.Errorf("%s holds TUN devices %v, want [%s]", h, devs, h.Dev)
		}
	}
	if root := tunDevices(t, ""); !slices.Equal(root, rootBefore) {
		t.Errorf("the root namespace's TUN devices went from %v to %v", rootBefore, root)
	}
	// Traffic both ways before closing, so that Close meets a running line.
	newUDPPath(t, l.A, l.B).sendPaced(t, 20, 100, 0, time.Second)
	newUDPPath(t, l.B, l.A).sendPaced(t, 20, 100, 0, time.Second)
	for i := range 2 { // idempotent
		if err := l.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	names := netnsList(t)
	for _, h := range l.Hosts() {
		if slices.Contains(names, h.NS) {
			t.Errorf("after Close, ip netns list still shows %s", h.NS)
		}
	}
	if root := tunDevices(t, ""); !slices.Equal(root, rootBefore) {
		t.Errorf("after Close the root namespace's TUN devices are %v, were %v", root, rootBefore)
	}
	if s := l.Stats(); s.AtoB.Packets != 20 || s.BtoA.Packets != 20 {
		t.Errorf("stats after Close: A→B %d packets, B→A %d; want 20 each", s.AtoB.Packets, s.BtoA.Packets)
	}
}

// TestDelayLineCrash kills a process that holds a delay line: the kernel
// must remove its TUN devices with its files, and CleanupStale its
// namespaces.
func TestDelayLineCrash(t *testing.T) {
	SkipUnlessDelayLine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The helper runs in the root namespace, as a person's process would.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=delayline", helperLimit+"=30000")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	var made map[string]string
	if err := json.NewDecoder(stdout).Decode(&made); err != nil || made["a"] == "" {
		t.Fatalf("delay line helper: %v %v; stderr: %s", made, err, stderr.String())
	}
	if devs := tunDevices(t, made["a"]); !slices.Equal(devs, []string{made["deva"]}) {
		t.Fatalf("helper's namespace %s holds %v, want its TUN device", made["a"], devs)
	}
	cmd.Process.Kill() //nolint:errcheck // SIGKILL: no Close runs
	cmd.Wait()         //nolint:errcheck
	for _, ns := range []string{made["a"], made["b"]} {
		if !slices.Contains(netnsList(t), ns) {
			t.Fatalf("namespace %s vanished before CleanupStale; the test proves nothing", ns)
		}
		// The forwarder process, which holds the devices too, ends as soon
		// as it sees its parent's pipe close.
		devs := tunDevices(t, ns)
		for deadline := time.Now().Add(5 * time.Second); len(devs) != 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			devs = tunDevices(t, ns)
		}
		if len(devs) != 0 {
			t.Errorf("5 s after the crash, %s still holds TUN devices %v", ns, devs)
		}
	}
	if err := CleanupStale(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{made["a"], made["b"]} {
		if slices.Contains(netnsList(t), ns) {
			t.Errorf("CleanupStale left the dead process's namespace %s", ns)
		}
	}
}
