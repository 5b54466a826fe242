//go:build linux

package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/invariants"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/testbed"
)

var tickLabel = regexp.MustCompile(`<text class="tick" x="\d+" y="[\d.]+" text-anchor="end">([^<]*)</text>`)

// TestStreamNoRateAboveTheLine: on a 300 Mbit/s line, a 5 s stream prints
// no interval faster than the line (issue 25, defect 7: a closing
// sub-millisecond row read 2.62 Gbit/s), counts its headers as the TUN
// device carries them (bare IP packets: no "on the wire" above the line's
// rate), and its page neither scales to the closing row nor calls the
// TUN device's nominal 10 Gbit/s the link.
func TestStreamNoRateAboveTheLine(t *testing.T) {
	setUp(t, 1)
	const rate = 300e6
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: 8 * time.Millisecond, RateBitsPerSecond: rate})
	startAgent(t, l)
	page := filepath.Join(t.TempDir(), "stream.html")
	// itest checks the report's invariants against the line's rate too.
	env := []string{itest.PathRate + "=" + strconv.FormatFloat(rate, 'f', 0, 64)}
	res := itest.RunWrapped(t, time.Minute, env, inNS(l.A), "net", "stream", "--to", agentAddr(l), "--duration", "5s", "--json", "--html", page)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var rep *result.Report
	var ivs []result.Interval
	if err := jsonl.Read(strings.NewReader(res.Stdout), "stdout", func(r *result.Report, iv []result.Interval) { rep, ivs = r, iv }); err != nil || rep == nil || rep.Stream == nil {
		t.Fatalf("no stream summary (%v):\n%s", err, res.Stdout)
	}
	interval := rep.Stream.Config.Interval.D()
	for _, iv := range ivs {
		span := iv.End.D() - iv.Start.D()
		t.Logf("%.3f-%.3f s: %.1f Mbit/s (%d bytes)", iv.Start.D().Seconds(), iv.End.D().Seconds(), iv.Throughput/1e6, iv.Bytes)
		if iv.Throughput > rate*invariants.Slack {
			t.Errorf("interval %.3f-%.3f s reads %.1f Mbit/s on a %.0f Mbit/s line", iv.Start.D().Seconds(), iv.End.D().Seconds(), iv.Throughput/1e6, rate/1e6)
		}
		if span < interval/2 {
			t.Errorf("interval %.3f-%.3f s is a fragment of %s: fold it into the one before", iv.Start.D().Seconds(), iv.End.D().Seconds(), span)
		}
	}
	run := rep.Stream.Runs[0]
	t.Logf("payload %.1f Mbit/s, in packets %.1f Mbit/s, %d header bytes (%d the link's) per %d-byte segment",
		run.Throughput/1e6, run.WireThroughput/1e6, run.HeaderBytes, run.LinkHeaderBytes, run.TCP.MSSBytes)
	if run.LinkHeaderBytes != 0 || run.WireThroughput > rate*invariants.Slack {
		t.Errorf("a TUN device carries bare IP packets: %d link header bytes, %.1f Mbit/s in packets on a %.0f Mbit/s line",
			run.LinkHeaderBytes, run.WireThroughput/1e6, rate/1e6)
	}
	for _, f := range rep.Findings {
		if f.Code == "stream.wire_overhead" && (strings.Contains(f.Summary, "On the wire") || strings.Contains(f.Summary, "Ethernet")) {
			t.Errorf("a TUN device has no Ethernet header: %q", f.Summary)
		}
	}
	if vs := invariants.Check(rep, ivs, invariants.Path{RateBitsPerSecond: rate}); len(vs) > 0 {
		t.Errorf("invariants broken: %v", vs)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{[]byte("link 10 Gbit/s"), []byte("nominal speed of")} {
		if bytes.Contains(b, bad) {
			t.Errorf("the page holds %q beside a %.0f Mbit/s line", bad, rate/1e6)
		}
	}
	// The throughput chart comes first; its scale stays below a Gbit/s
	// (3× the line) when no reading is above the line.
	chart := string(b)
	if i := strings.Index(chart, `-chart-throughput"`); i >= 0 {
		chart = chart[i:]
		if j := strings.Index(chart, "</svg>"); j >= 0 {
			chart = chart[:j]
		}
	}
	for _, m := range tickLabel.FindAllStringSubmatch(chart, -1) {
		if strings.Contains(m[1], "Gbit/s") {
			t.Errorf("the throughput chart's scale reaches %s on a %.0f Mbit/s line", m[1], rate/1e6)
		}
	}
}
