//go:build linux

package wintest

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
)

var regexpVersion = regexp.MustCompile(`^narrows \S+ \(commit \S+, protocol \d+, json schema narrows/v\d+\)`)

// TestAgentOnWindows: the Linux client measures through narrows.exe serve,
// authenticated both ways with the shared secret.
func TestAgentOnWindows(t *testing.T) {
	w := itest.NewWine(t)
	a := w.StartAgent(t, nil)
	r := itest.Run(t, time.Minute, nil, "net", "rr", "--to", a.Addr, "--duration", "1s", "--json")
	if r.Code != 0 {
		t.Fatalf("net rr against the Windows agent: exit %d\n%s\nagent log:\n%s", r.Code, r.Stderr, a.Log())
	}
	_, sum := itest.Records(t, r.Stdout)
	if n, _ := itest.Num(itest.Obj(sum, "rr"), "round_trips"); n < 10 {
		t.Errorf("net rr through the Windows agent counted %v round trips in 1 s, want at least 10:\n%s", n, r.Stdout)
	}
	a.WaitLog(t, `msg="test finished"`)
}

// TestClientOnWindows: narrows.exe measures through the Linux agent. Sent
// by the agent (--reverse), the stream is explained by Linux's TCP_INFO;
// sent by narrows.exe, by SIO_TCP_INFO where Windows gives it, and where
// it is refused (Wine refuses it) the run says so instead of guessing.
func TestClientOnWindows(t *testing.T) {
	w := itest.NewWine(t)
	a := itest.StartAgent(t, []string{"--allow-try"})
	r := w.Run(t, time.Minute, nil, "net", "stream", "--to", a.Addr, "--duration", "1s", "--reverse", "--json")
	if r.Code != 0 {
		t.Fatalf("narrows.exe net stream --reverse: exit %d\n%s\nagent log:\n%s", r.Code, r.Stderr, a.Log())
	}
	_, sum := itest.Records(t, r.Stdout)
	run0 := firstRun(t, sum)
	if tp, _ := itest.Num(run0, "throughput_bits_per_second"); tp <= 0 {
		t.Errorf("the reverse stream carried %v bit/s:\n%s", tp, r.Stdout)
	}
	tcp := itest.Obj(run0, "tcp")
	if rtt, _ := itest.Num(tcp, "rtt_seconds"); tcp == nil || tcp["side"] != "agent" || rtt <= 0 {
		t.Errorf("the Linux agent's TCP state is missing from the Windows client's run: %v", run0)
	}

	r = w.Run(t, time.Minute, nil, "net", "stream", "--to", a.Addr, "--duration", "1s", "--json")
	if r.Code != 0 {
		t.Fatalf("narrows.exe net stream: exit %d\n%s", r.Code, r.Stderr)
	}
	_, sum = itest.Records(t, r.Stdout)
	run0 = firstRun(t, sum)
	if reason, _ := run0["tcp_unavailable"].(string); itest.Obj(run0, "tcp") == nil && !strings.Contains(reason, "not available") {
		t.Errorf("the forward run has neither TCP state nor a reason: %v", run0)
	}
	if !strings.Contains(r.Stdout, `"os":"windows"`) {
		t.Errorf("the run does not carry the Windows client's facts:\n%s", r.Stdout)
	}

	r = w.Run(t, time.Minute, nil, "net", "rr", "--to", a.Addr, "--duration", "1s", "--json")
	_, sum = itest.Records(t, r.Stdout)
	if n, _ := itest.Num(itest.Obj(sum, "rr"), "round_trips"); r.Code != 0 || n < 10 {
		t.Errorf("narrows.exe net rr: exit %d, %v round trips in 1 s\n%s", r.Code, n, r.Stderr)
	}

	// --try-offloads from Windows: this host's offloads are an adapter's
	// advanced properties, not changed for a run; it says so and asks
	// the agent for nothing (the agent allows it: the refusal is the
	// client's own).
	r = w.Run(t, time.Minute, nil, "net", "stream", "--to", a.Addr, "--duration", "1s", "--try-offloads", "--json")
	_, sum = itest.Records(t, r.Stdout)
	try := itest.Obj(itest.Obj(sum, "stream"), "offloads_try")
	if why, _ := try["why"].(string); r.Code != 0 || !strings.Contains(why, "Large Send Offload") || try["changes"] != nil {
		t.Errorf("narrows.exe net stream --try-offloads: exit %d, offloads_try %v\n%s", r.Code, try, r.Stderr)
	}
	if strings.Contains(a.Log(), "offloads on for the test") {
		t.Errorf("the agent changed its offloads for a client that could not change its own:\n%s", a.Log())
	}
}

func firstRun(t *testing.T, sum map[string]any) map[string]any {
	t.Helper()
	runs, _ := itest.Obj(sum, "stream")["runs"].([]any)
	if len(runs) == 0 {
		t.Fatalf("no stream runs in %v", sum)
	}
	return runs[0].(map[string]any)
}

// ownLines are the lines of a narrows.exe stderr that narrows wrote: Wine
// adds its own ("wine: Read access denied for device ... Z:", and at
// times, as a process exits while others start, "wine client error:...:
// sendmsg: Socket operation on non-socket"), which no Windows prints.
func ownLines(stderr string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "wine: ") && !strings.HasPrefix(l, "wine client error:") {
			lines = append(lines, l)
		}
	}
	return lines
}
