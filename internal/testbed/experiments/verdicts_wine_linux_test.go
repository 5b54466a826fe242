//go:build linux

package experiments

import (
	"slices"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

// narrowsExe runs narrows.exe under w (--json added), as Narrows runs
// narrows: it must exit 0 and write a report, whose findings are
// recorded.
func (c *Case) narrowsExe(w *itest.Wine, args ...string) *result.Report {
	c.T.Helper()
	if !slices.Contains(args, "--json") {
		args = append(args, "--json")
	}
	rep, _, res := c.record(0, args, w.Run(c.T, 3*time.Minute, c.pathEnv(), args...))
	if rep == nil {
		c.T.Fatalf("narrows.exe %s: no summary record:\n%s\n%s", strings.Join(args, " "), res.Stdout, res.Stderr)
	}
	return rep
}

// The Windows client's scenarios: narrows.exe under Wine on host A, its
// prefix's server in A's namespace (Wine's sockets are made by its
// server), the Linux agent on B.
var wineScenarios = []Scenario{
	{
		Name: "stream/windows-client-no-tcp-info", CI: true,
		Question: "what limits one stream from this Windows client?",
		Truth: "narrows.exe under Wine sends across 8 ms, 100 Mbit/s; Wine gives no SIO_TCP_INFO, as Windows before 10 1703 does not: " +
			"the sending end's round trip, window and retransmits are not known, so neither is what held the stream",
		Say:    []string{"stream.limit_unknown", "stream.single_stream_capacity"},
		NotSay: []string{"stream.link_limited", "stream.window_limited", "stream.loss_limited", "stream.per_stream_limited", "stream.host_limited"},
		Run: func(c *Case) {
			l := c.Line(testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: 100e6})
			addr := c.Agent(l.B)
			w := itest.NewWineIn(c.T, inNS(l.A))
			rep := c.narrowsExe(w, "net", "stream", "--to", addr, "--duration", "4s")
			r := rep.Stream.Runs[0]
			c.Expect("the sending end gave no TCP state", r.TCP == nil && strings.Contains(r.TCPUnavailable, "not available"), r.TCPUnavailable)
			c.Within("throughput / payload share of the line", rep.Stream.Throughput, payload*100e6, 0.5, 1.02,
				"the figure stands without TCP state; above 1.02 would be faster than the line")
		},
	},
}
