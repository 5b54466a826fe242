package output_test

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/output/html"
	"github.com/narrows/narrows/internal/result"
)

// hostileHost is a host's name as a forged run or a hosts file may give
// it: markup and a terminal's escape.
const hostileHost = "db3<script>alert(1)</script>\x1b[2J"

// fleetHost is one host's run of a pattern: n I/Os whose latencies are
// spread about base (a tail of 2% at 4×, the p99), at iops, and its histogram as it
// travels. The fleet's merged quantiles are then the merge's, as the
// probe makes them, not figures written into the fixture.
func fleetHost(name string, pattern string, qd int, iops float64, base time.Duration) (result.DiskPattern, *metric.Histogram) {
	h := metric.NewHistogram()
	const n = 2000
	for i := range n {
		d := time.Duration(float64(base) * (0.6 + 0.8*float64(i%100)/100))
		if i%100 >= 98 {
			d = 4 * base
		}
		h.Record(d)
	}
	sp := h.Sparse()
	sec := result.Seconds(3 * time.Second)
	p := result.DiskPattern{Profile: "data", Name: pattern, RW: "randread", BlockBytes: 8192, QueueDepth: qd, Threads: 1, Sync: "none",
		Duration: sec, IOs: n, Bytes: n * 8192, IOPS: iops, Throughput: iops * 8192, Latencies: result.LatenciesOf(h), Histogram: &sp}
	return p, h
}

// fleetPatterns sums each pattern over the hosts, as the probe does:
// their IOPS and bytes, the median host, and their histograms merged.
func fleetPatterns(f *result.Fleet) {
	f.Patterns = nil
	for i, name := range f.Config.Patterns {
		fp := result.FleetPattern{Name: name}
		merged := metric.NewHistogram()
		var iops, p99 []float64
		var gib float64
		for _, h := range f.Hosts {
			if h.Disk == nil || i >= len(h.Disk.Patterns) {
				continue
			}
			p := h.Disk.Patterns[i]
			fp.Hosts++
			fp.IOPS += p.IOPS
			fp.Throughput += p.Throughput
			iops, p99 = append(iops, p.IOPS), append(p99, float64(p.P99))
			gib += float64(h.Disk.FileBytes) / (1 << 30)
			hist, err := metric.FromSparse(*p.Histogram)
			if err != nil {
				panic(err)
			}
			merged.Merge(hist)
		}
		l := result.LatenciesOf(merged)
		fp.Latency, fp.Precision = &l, metric.Precision(0)
		fp.MedianIOPS, fp.MedianP99 = metric.Median(iops), result.Seconds(metric.Median(p99))
		fp.IOPSPerGiB = fp.IOPS / gib
		f.Patterns = append(f.Patterns, fp)
	}
}

func fleetReport(command string, hosts int) *result.Report {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	rep := result.NewReport(command, fmt.Sprintf("%d hosts", hosts), result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	rep.Facts = factsFixture("app1", "10.0.0.1/24")
	return rep
}

// fleetDiskFixture is a fleet disk run of the data profile's two random
// reads on five hosts: db3 far below the others, db5 not reachable.
func fleetDiskFixture() *result.Report { return fleetDiskNamed("db3") }

// fleetDiskNamed is fleetDiskFixture with the third host, the one that
// stands out, named third (hostileHost: a forged run's).
func fleetDiskNamed(third string) *result.Report {
	names := []string{"db1", "db2", third, "db4", "db5"}
	pats := []string{"randread 8 KiB QD1", "randread 8 KiB QD32"}
	rep := fleetReport("fleet disk", len(names))
	f := &result.Fleet{Config: result.FleetConfig{Hosts: len(names), Patterns: pats,
		Disk: result.DiskConfig{Profiles: []string{"data"}, Duration: result.Seconds(3 * time.Second), FileBytes: 1 << 30, Engine: "auto", Seed: 1}}}
	for i, name := range names {
		h := result.FleetHost{Name: name, Addr: fmt.Sprintf("10.0.0.%d:7447", 11+i)}
		if name == "db5" {
			h.Addr, h.Error = "", "no agent reachable at db5:7447: i/o timeout"
			f.Hosts = append(f.Hosts, h)
			continue
		}
		slow := 1.0
		if name == third {
			slow = 0.35
		}
		a := result.Seconds(time.Duration(300+97*i) * time.Microsecond)
		h.StartedAfter = &a
		d := &result.Disk{Path: "/var/lib/narrows", Filesystem: "xfs", FileBytes: 1 << 30, Engine: "io_uring", Direct: true}
		p1, _ := fleetHost(name, pats[0], 1, slow*(9000+float64(100*i)), time.Duration(float64(110*time.Microsecond)/slow))
		p2, _ := fleetHost(name, pats[1], 32, slow*(98000+float64(900*i)), time.Duration(float64(330*time.Microsecond)/slow))
		d.Patterns = []result.DiskPattern{p1, p2}
		h.Disk = d
		f.Hosts = append(f.Hosts, h)
	}
	fleetPatterns(f)
	f.Start = &result.FleetStart{Hosts: 4, MedianAfter: result.Seconds(450 * time.Microsecond), MaxAfter: result.Seconds(591 * time.Microsecond),
		Skew: result.Seconds(291 * time.Microsecond)}
	rep.Fleet = f
	rep.Findings = advisor.Advise(rep)
	return rep
}

// fleetSweepFixture is a sweep of randread 8 KiB through QD 1..16 on
// three hosts against p99 ≤ 2 ms: the latency grows with the depth, the
// IOPS flatten, and the knee is the deepest step that held.
func fleetSweepFixture() *result.Report {
	names := []string{"db1", "db2", "db3"}
	depths := []int{1, 2, 4, 8, 16}
	slo := &result.FleetSLO{Name: "p99", Quantile: 0.99, Bound: result.Seconds(2 * time.Millisecond)}
	rep := fleetReport("fleet disk", len(names))
	f := &result.Fleet{Config: result.FleetConfig{Hosts: len(names),
		Disk: result.DiskConfig{Profiles: []string{"custom"}, Duration: result.Seconds(3 * time.Second), FileBytes: 1 << 30, Engine: "auto", Seed: 1}}}
	for _, qd := range depths {
		f.Config.Patterns = append(f.Config.Patterns, fmt.Sprintf("randread 8 KiB QD%d", qd))
	}
	// Each step's typical latency: past QD8 the device's queue is full,
	// the latency grows faster than the depth and the IOPS fall back.
	typical := map[int]time.Duration{1: 120 * time.Microsecond, 2: 130 * time.Microsecond, 4: 170 * time.Microsecond,
		8: 300 * time.Microsecond, 16: 700 * time.Microsecond}
	for i, name := range names {
		d := &result.Disk{Path: "/var/lib/narrows", Filesystem: "xfs", FileBytes: 1 << 30, Engine: "io_uring", Direct: true}
		for j, qd := range depths {
			base := time.Duration(float64(typical[qd]) * (1 + 0.05*float64(i)))
			iops := float64(qd) / base.Seconds()
			p, _ := fleetHost(name, f.Config.Patterns[j], qd, iops, base)
			d.Patterns = append(d.Patterns, p)
		}
		a := result.Seconds(time.Duration(200+50*i) * time.Microsecond)
		f.Hosts = append(f.Hosts, result.FleetHost{Name: name, Addr: name + ":7447", StartedAfter: &a, Disk: d})
	}
	fleetPatterns(f)
	sw := &result.FleetSweep{Depths: depths, SLO: slo, Curves: []result.FleetCurve{{Shape: "randread 8 KiB"}}}
	c := &sw.Curves[0]
	for j, qd := range depths {
		fp := f.Patterns[j]
		v := fp.Latency.Quantile(slo.Quantile)
		held := v <= slo.Bound
		pt := result.FleetPoint{QD: qd, Pattern: j, Hosts: fp.Hosts, IOPS: fp.IOPS, Latency: &v, Held: &held}
		if held && (c.Knee == nil || fp.IOPS > c.Points[*c.Knee].IOPS) {
			k := j
			c.Knee = &k
		}
		c.Points = append(c.Points, pt)
	}
	f.Sweep = sw
	rep.Fleet = f
	rep.Findings = advisor.Advise(rep)
	return rep
}

func renderPage(t *testing.T, rep *result.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := html.Render(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// section is the page's part from the element with id to the next
// element closing tag (</table>, </svg>, </section>).
func section(page, id, end string) string {
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], end)
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j]
}

var rowRe = regexp.MustCompile(`(?s)<tr( class="[^"]*")?>(.*?)</tr>`)

// rowsOf are a table's rows: each its class and its cells' text.
func rowsOf(table string) [][2]string {
	var out [][2]string
	for _, m := range rowRe.FindAllStringSubmatch(table, -1) {
		out = append(out, [2]string{strings.TrimSpace(strings.TrimPrefix(strings.Trim(m[1], `"`), ` class="`)), tagRe.ReplaceAllString(m[2], "|")})
	}
	return out
}

// rowOf says whether row r is host's: its first cell is the name, or
// the name and its mark.
func rowOf(r [2]string, host string) bool {
	return strings.HasPrefix(r[1], "|"+host+"|") || strings.HasPrefix(r[1], "|"+host+" |")
}

// TestHTMLFleetDisk: the fleet's page answers first (the host that stood
// out, by name), then each host's row with its figures and its share of
// the median, the one named marked and only it, the host that did not
// answer with why; the fleet's sums; the merged latency drawn. A hostile
// host name reaches the page escaped, markup and control characters.
func TestHTMLFleetDisk(t *testing.T) {
	rep := fleetDiskNamed(hostileHost)
	if !slices.ContainsFunc(rep.Findings, func(f result.Finding) bool {
		return f.Code == "fleet.outlier" && slices.Equal(f.Hosts, []string{hostileHost})
	}) {
		t.Fatalf("the fixture's advisor did not single out %q: %+v", hostileHost, rep.Findings)
	}
	page := renderPage(t, rep)
	escaped := `db3&lt;script&gt;alert(1)&lt;/script&gt;\x1b[2J`
	if strings.Contains(page, "<script") || strings.ContainsRune(page, 0x1b) {
		t.Fatalf("the hostile host name reached the page as markup or a control character")
	}
	if n := strings.Count(page, escaped); n < 4 {
		t.Errorf("the hostile name escaped appears %d times (the verdicts, the answers, the tables, the chart): want at least 4", n)
	}
	// The answers come first, above the tables, and name the host.
	ans := strings.Index(page, `id="answers"`)
	tables := strings.Index(page, `class="fleet-hosts"`)
	if ans < 0 || tables < 0 || ans > tables {
		t.Fatalf("the answers (at %d) do not come before the hosts' table (at %d)", ans, tables)
	}
	answers := section(page, "answers", "</section>")
	for _, want := range []string{"Does one host stand out while the whole fleet works?", "stood out while the fleet worked together: " + escaped,
		"Did every host run?", "db5 (no agent reachable", "What does the fleet give within the latency objective?", "not asked: give --sweep"} {
		if !strings.Contains(answers, want) {
			t.Errorf("the answers do not say %q:\n%s", want, answers)
		}
	}
	for i, name := range rep.Fleet.Config.Patterns {
		tb := section(page, fmt.Sprintf("s1-hosts-%d", i+1), "</table>")
		if !strings.Contains(tb, name) {
			t.Fatalf("no hosts' table of %s", name)
		}
		rows := rowsOf(tb)
		fp := rep.Fleet.Patterns[i]
		marked := 0
		for _, h := range rep.Fleet.Hosts {
			shown := strings.ReplaceAll(strings.ReplaceAll(h.Name, "<", "&lt;"), ">", "&gt;")
			shown = strings.ReplaceAll(shown, "\x1b", `\x1b`)
			k := slices.IndexFunc(rows, func(r [2]string) bool { return rowOf(r, shown) })
			if k < 0 {
				t.Errorf("%s: no row of %q among %q", name, h.Name, rows)
				continue
			}
			row := rows[k]
			if (row[0] == "outlier") != (h.Name == hostileHost) {
				t.Errorf("%s: %q's row has class %q", name, h.Name, row[0])
			}
			if row[0] == "outlier" {
				marked++
				if !strings.Contains(row[1], "stood out") {
					t.Errorf("%s: the marked row does not say so: %q", name, row[1])
				}
			}
			if h.Disk == nil {
				if !strings.Contains(row[1], h.Error) {
					t.Errorf("%s: %q's row does not say why it has no figures: %q", name, h.Name, row[1])
				}
				continue
			}
			p := h.Disk.Patterns[i]
			share := fmt.Sprintf("%.0f%%", 100*p.IOPS/fp.MedianIOPS)
			for _, want := range []string{metric.FormatCount(int64(p.IOPS + 0.5)), metric.FormatDuration(p.P99.D()), metric.FormatDuration(p.P999.D()), share} {
				if !strings.Contains(row[1], "|"+want+"|") {
					t.Errorf("%s: %q's row lacks %q: %q", name, h.Name, want, row[1])
				}
			}
		}
		if marked != 1 {
			t.Errorf("%s: %d rows marked, want 1", name, marked)
		}
		// The fleet's row: the sum, and the merged p99, not a mean.
		if !strings.Contains(tb, metric.FormatCount(int64(fp.IOPS+0.5))) || !strings.Contains(tb, metric.FormatDuration(fp.Latency.P99.D())) {
			t.Errorf("%s: the fleet's row lacks its sum %v or merged p99 %v", name, fp.IOPS, fp.Latency.P99.D())
		}
	}
	totals := section(page, "s1-totals", "</table>")
	for _, fp := range rep.Fleet.Patterns {
		for _, want := range []string{fp.Name, metric.FormatCount(int64(fp.IOPS + 0.5)), metric.FormatCount(int64(fp.IOPS/float64(fp.Hosts) + 0.5)),
			metric.FormatCount(int64(fp.IOPSPerGiB + 0.5)), metric.FormatDuration(fp.Latency.P999.D())} {
			if !strings.Contains(totals, want) {
				t.Errorf("the totals lack %q", want)
			}
		}
	}
	lat := section(page, "s1-"+html.ChartFleetLatency, "</svg>")
	if !strings.Contains(lat, "fleet: randread 8 KiB QD32") || !strings.Contains(lat, "p99 "+metric.FormatDuration(rep.Fleet.Patterns[1].Latency.P99.D())) {
		t.Errorf("the merged latency chart lacks the fleet's QD32 row or its merged p99")
	}
	if strings.Contains(page, html.ChartFleetIOPS) {
		t.Error("a curve drawn for a run without a sweep")
	}
}

// TestHTMLFleetSweep: a sweep's page says the knee first, and draws the
// fleet's IOPS and p99 at each depth, the objective's line and the knee
// marked on both; the knee's row of the sums is marked, the steps over
// the objective say so.
func TestHTMLFleetSweep(t *testing.T) {
	rep := fleetSweepFixture()
	c := rep.Fleet.Sweep.Curves[0]
	if c.Knee == nil || *c.Knee == 0 || *c.Knee == len(c.Points)-1 {
		t.Fatalf("the fixture's knee is %v: want one inside the sweep", c.Knee)
	}
	knee := c.Points[*c.Knee]
	page := renderPage(t, rep)
	answers := section(page, "answers", "</section>")
	if !strings.Contains(answers, "What does the fleet give within the latency objective?") ||
		!strings.Contains(answers, fmt.Sprintf("at queue depth %d on each host", knee.QD)) {
		t.Errorf("the answers do not give the knee at QD %d:\n%s", knee.QD, answers)
	}
	kneeLabel := fmt.Sprintf("knee: QD %d, %s IOPS", knee.QD, metric.FormatCount(int64(knee.IOPS+0.5)))
	for _, id := range []string{html.ChartFleetIOPS, html.ChartFleetSLO} {
		svg := section(page, "s1-"+id, "</svg>")
		if svg == "" {
			t.Fatalf("no %s chart", id)
		}
		if !strings.Contains(svg, `class="vmark"`) || !strings.Contains(svg, kneeLabel) {
			t.Errorf("%s: the knee is not marked %q", id, kneeLabel)
		}
		if !strings.Contains(svg, "queue depth on each host") {
			t.Errorf("%s: its axis is not the queue depth", id)
		}
		for _, qd := range rep.Fleet.Sweep.Depths {
			if !strings.Contains(svg, fmt.Sprintf(`text-anchor="middle">%d</text>`, qd)) {
				t.Errorf("%s: no tick at QD %d", id, qd)
			}
		}
	}
	slo := section(page, "s1-"+html.ChartFleetSLO, "</svg>")
	if !strings.Contains(slo, `class="ref"`) || !strings.Contains(slo, "objective p99 ≤ 2.00 ms") {
		t.Error("the latency curve has no objective's line")
	}
	if n := strings.Count(slo, `class="dot c0"`); n != len(c.Points) {
		t.Errorf("the latency curve has %d points, want %d", n, len(c.Points))
	}
	rows := rowsOf(section(page, "s1-totals", "</table>"))
	var knees, over []string
	for _, r := range rows {
		if r[0] == "knee" {
			knees = append(knees, r[1])
		}
		if strings.Contains(r[1], "|over|") {
			over = append(over, r[1])
		}
	}
	if len(knees) != 1 || !strings.Contains(knees[0], fmt.Sprintf("QD%d|", knee.QD)) || !strings.Contains(knees[0], "held: the knee") {
		t.Errorf("the knee's row: %q, want QD%d's", knees, knee.QD)
	}
	wantOver := 0
	for _, pt := range c.Points {
		if !*pt.Held {
			wantOver++
		}
	}
	if wantOver == 0 || len(over) != wantOver {
		t.Errorf("%d rows over the objective, want %d", len(over), wantOver)
	}
	// The hosts' table is the knee's, as the terminal's.
	if tb := section(page, fmt.Sprintf("s1-hosts-%d", knee.Pattern+1), "</table>"); !strings.Contains(tb, "at the knee") {
		t.Errorf("no hosts' table at the knee (QD%d)", knee.QD)
	}
	// The merged latency at every depth.
	lat := section(page, "s1-"+html.ChartFleetLatency, "</svg>")
	for _, fp := range rep.Fleet.Patterns {
		if !strings.Contains(lat, "fleet: "+fp.Name) {
			t.Errorf("the merged latency chart has no row of %s", fp.Name)
		}
	}
}

// TestHTMLFleetNet: the replicas' page answers which path is weak first;
// each replica's rate and share, the weak one marked and only it; the
// host that did not answer with why; this host's link against its rate.
func TestHTMLFleetNet(t *testing.T) {
	rep := fleetNetFixture()
	page := renderPage(t, rep)
	answers := section(page, "answers", "</section>")
	if !strings.Contains(answers, "Is one replica&#39;s path the weak one?") || !strings.Contains(answers, "Replica db4 received") {
		t.Errorf("the answers do not name db4's path:\n%s", answers)
	}
	if !strings.Contains(answers, "Is this host&#39;s NIC the limit") || !strings.Contains(answers, "no: this host&#39;s link eth0 carried 49% of its 1 Gbit/s on the wire") {
		t.Errorf("the answers do not say the link had room:\n%s", answers)
	}
	rows := rowsOf(section(page, "s1-hosts", "</table>"))
	for _, h := range rep.FleetNet.Hosts {
		k := slices.IndexFunc(rows, func(r [2]string) bool { return rowOf(r, h.Name) })
		if k < 0 {
			t.Fatalf("no row of %s", h.Name)
		}
		if (rows[k][0] == "outlier") != (h.Name == "db4") {
			t.Errorf("%s's row has class %q", h.Name, rows[k][0])
		}
		if h.Stream == nil {
			if !strings.Contains(rows[k][1], h.Error) {
				t.Errorf("%s's row does not say why: %q", h.Name, rows[k][1])
			}
			continue
		}
		for _, want := range []string{metric.FormatBitRate(h.Stream.Throughput), fmt.Sprintf("%.0f%%", 100*h.Share)} {
			if !strings.Contains(rows[k][1], want) {
				t.Errorf("%s's row lacks %q: %q", h.Name, want, rows[k][1])
			}
		}
	}
	links := section(page, "s1-links", "</table>")
	l := rep.FleetNet.Links[0]
	for _, want := range []string{"eth0", metric.FormatBitRate(l.WireThroughput), "1 Gbit/s", fmt.Sprintf("%.0f%%", 100*l.Share), "as given by --assume nic"} {
		if !strings.Contains(links, want) {
			t.Errorf("the link's table lacks %q", want)
		}
	}
	net := section(page, "network-team", "</section>")
	if !strings.Contains(net, "iperf3 -c db1 -t 10 -l 131072 -P 2") || strings.Contains(net, "iperf3 -c db5") {
		t.Errorf("the network team's commands: one per replica that ran, as run:\n%s", net)
	}
}
