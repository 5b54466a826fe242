package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/probe/wakeup"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
	"github.com/narrows/narrows/internal/wire"
)

// The host test: `narrows host`'s experiments on the agent's own machine,
// so that a report names what each end adds to a round trip. It touches
// no file; what it holds to keep the CPUs awake (a CPU latency request,
// spinning threads) is let go at the end of each block, and with the
// process whatever ends it.

// checkHost refuses a budget shorter than the experiment's fewest pairs
// of blocks (it would run past it, and be cut off unjudged); the longest
// is --max-duration's, at admission.
func (s *Server) checkHost(spec wire.TestSpec) error {
	if least := (wakeup.Config{}).MinDuration(); spec.Duration < least {
		return fmt.Errorf("host: a budget of %s: the experiment needs at least %s (four pairs of blocks, as is and awake): ask for %s or more",
			metric.FlagDuration(spec.Duration), metric.FlagDuration(least), metric.FlagDuration(least))
	}
	return nil
}

func (s *Server) openHost(spec wire.TestSpec) (farTest, *wire.RemoteError) {
	return &hostTest{s: s, spec: spec}, nil
}

type hostTest struct {
	s    *Server
	spec wire.TestSpec
}

func (h *hostTest) accepted(*wire.Accepted) {}

func (h *hostTest) prepare(context.Context) error { return nil }

func (h *hostTest) run(ctx context.Context, _ probe.Emit, done *wire.Done) error {
	side := &result.HostSide{Power: sysinfo.ReadPower()}
	w, err := wakeup.Run(ctx, wakeup.Config{Duration: h.spec.Duration})
	side.Wakeup = w
	done.Host = side
	return err
}

// limit: the budget, and one pair of blocks past it (the experiment
// finishes the pair it is in).
func (h *hostTest) limit() time.Duration { return h.spec.Duration + 10*time.Second }

func (h *hostTest) close() {}
