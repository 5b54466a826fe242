//go:build linux

package cli_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// offloads is h's device's tso, gso and gro now (testbed.Host.Offloads).
func offloads(t *testing.T, h *testbed.Host) string {
	t.Helper()
	s, err := h.Offloads()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// offloadsOffLink is a veth pair with the offloads a try changes off at
// both ends.
func offloadsOffLink(t *testing.T) *testbed.Link {
	t.Helper()
	ln := testbed.NewTestLink(t, testbed.LinkOptions{})
	for _, h := range []*testbed.Host{ln.A, ln.B} {
		if err := h.SetOffloads(false, "tso", "gso", "gro"); err != nil {
			t.Fatal(err)
		}
	}
	return ln
}

// TestTryOffloads: forward, this host sends and the agent receives:
// narrows turns on this host's tso and gso (as root) and asks the agent
// for its gro, runs the stream, and both are off again after; the report
// says what each end turned on.
func TestTryOffloads(t *testing.T) {
	ln := offloadsOffLink(t)
	addr := net.JoinHostPort(ln.B.Addr.String(), "7447")
	itest.StartAgent(t, []string{"--listen", addr, "--allow-try"}, "ip", "netns", "exec", ln.B.NS)
	r := itest.RunWrapped(t, time.Minute, nil, []string{"ip", "netns", "exec", ln.A.NS},
		"net", "stream", "--to", addr, "--duration", "1s", "--try-offloads", "--json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	rep := summaryOf(t, r.Stdout)
	try := rep.Stream.Offloads
	if try == nil || try.Why != "" || len(try.Changes) != 2 {
		t.Fatalf("offloads_try %+v: want both ends' changes", try)
	}
	for i, want := range []result.OffloadChange{
		{End: result.EndClient, Role: result.RoleSending, Interface: ln.A.Dev, On: []string{"tso", "gso"}, Restored: true},
		{End: result.EndAgent, Role: result.RoleReceiving, Interface: ln.B.Dev, On: []string{"gro"}, Restored: true},
	} {
		if got := try.Changes[i]; got.End != want.End || got.Role != want.Role || got.Interface != want.Interface || !got.Restored || got.Error != "" ||
			!slices.Equal(got.On, want.On) {
			t.Errorf("change %d: %+v, want %+v", i, got, want)
		}
	}
	tryInTurn(t, rep.Stream, result.PhaseOffloads, try.Gain)
	for _, h := range []*testbed.Host{ln.A, ln.B} {
		if got := offloads(t, h); got != "tso off, gso off, gro off" {
			t.Errorf("%s after the run: %s, want all off as before", h.Dev, got)
		}
	}
	if f := findingsText(rep); !strings.Contains(f, "stream.offloads_helped") && !strings.Contains(f, "stream.offloads_no_gain") && !strings.Contains(f, "stream.offloads_unjudged") {
		t.Errorf("no --try-offloads verdict: %s", f)
	}
}

// TestTryOffloadsAgentKilled: an agent killed (SIGKILL: no handler runs)
// while a stream has its gro on leaves nothing changed: the guardian it
// started first turns it off; this host's own are off again when the
// client ends.
func TestTryOffloadsAgentKilled(t *testing.T) {
	ln := offloadsOffLink(t)
	killAgentMidTry(t, ln.A, ln.B, "--try-offloads",
		func() bool { return offloads(t, ln.B) == "tso off, gso off, gro on" },
		func() bool { return offloads(t, ln.B) == "tso off, gso off, gro off" })
	if got := offloads(t, ln.B); got != "tso off, gso off, gro off" {
		t.Errorf("the agent's %s after it was killed with gro on: %s", ln.B.Dev, got)
	}
	if got := offloads(t, ln.A); got != "tso off, gso off, gro off" {
		t.Errorf("this host's %s after the client ended: %s", ln.A.Dev, got)
	}
}
