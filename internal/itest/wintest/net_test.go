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
	if !strings.Contains(a.Log(), `msg="test finished"`) {
		t.Errorf("the Windows agent did not log the finished test:\n%s", a.Log())
	}
}
