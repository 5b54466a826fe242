package cli_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/narrows/narrows/internal/agent"
	"github.com/narrows/narrows/internal/cli"
	"github.com/narrows/narrows/internal/itest"
)

// serveAgent runs an in-process agent on addr ("127.0.0.1:0" for any
// port) until the returned stop; stopping closes every connection, as a
// killed agent's host does.
func serveAgent(t *testing.T, addr string, cfg agent.Config) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- agent.New(cfg).Serve(ctx, ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-served }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// scrapeWatch reads /metrics as Prometheus does, with its text parser.
func scrapeWatch(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value is the sample of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if have[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// eventually polls until cond holds, at most d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within %s: %s", d, what)
}

// TestWatch runs a watch against a real agent on loopback and scrapes it
// as Prometheus would: the families and their fixed label sets, counters
// that grow, a histogram that counts every round trip, rr tests back to
// back within the agent's --max-duration on one session, and up going to
// 0 when the agent stops and back to 1 when it returns.
func TestWatch(t *testing.T) {
	cfg := agent.Config{Secret: []byte(itest.Secret), MaxDuration: time.Second}
	addr, stopAgent := serveAgent(t, "127.0.0.1:0", cfg)
	stdout := &itest.Buffer{}
	var stderr bytes.Buffer
	env := cli.Env{Stdout: stdout, Stderr: &stderr, ReadFile: cli.OSEnv().ReadFile, Now: time.Now,
		Getenv: func(k string) string { return map[string]string{"NARROWS_SECRET": itest.Secret}[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, env, []string{"watch", "--to", addr, "--rate", "40", "--interval", "200ms", "--timeout", "2s",
			"--stream-every", "1s", "--stream-duration", "200ms", "--prometheus-listen", "127.0.0.1:0", "--name", "db2-link"})
	}()
	serving := regexp.MustCompile(`serving Prometheus metrics at (http://\S+/metrics)`)
	var url string
	eventually(t, 3*time.Second, "the metrics' address on stdout", func() bool {
		m := serving.FindStringSubmatch(stdout.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})

	// Once a short stream has run each way, every family is there.
	var first map[string]*dto.MetricFamily
	eventually(t, 5*time.Second, "a stream's figures in both directions", func() bool {
		first = scrapeWatch(t, url)
		_, up := value(first, "narrows_watch_stream_throughput_bits_per_second", "direction", "up")
		_, down := value(first, "narrows_watch_stream_throughput_bits_per_second", "direction", "down")
		_, mtu := value(first, "narrows_watch_path_mtu_bytes")
		return up && down && mtu
	})
	want := map[string][][]string{
		"narrows_watch_info":                                  {{"version"}},
		"narrows_watch_up":                                    {nil},
		"narrows_watch_round_trip_seconds":                    {{"load", "idle"}, {"load", "loaded"}},
		"narrows_watch_round_trips_total":                     {nil},
		"narrows_watch_errors_total":                          {{"kind", "connect"}, {"kind", "rr"}, {"kind", "stream"}, {"kind", "mtu"}},
		"narrows_watch_path_mtu_bytes":                        {nil},
		"narrows_watch_sessions_total":                        {nil},
		"narrows_watch_down_seconds_total":                    {nil},
		"narrows_watch_stream_throughput_bits_per_second":     {{"direction", "up"}, {"direction", "down"}},
		"narrows_watch_stream_last_timestamp_seconds":         {{"direction", "up"}, {"direction", "down"}},
		"narrows_watch_stream_loaded_round_trips":             {{"direction", "up"}, {"direction", "down"}},
		"narrows_watch_responsiveness_round_trips_per_second": {{"direction", "up"}, {"direction", "down"}},
		"narrows_watch_interface_mtu_bytes":                   {{"end", "here"}, {"end", "agent"}},
	}
	for name, sets := range want {
		f := first[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if len(f.Metric) != len(sets) {
			t.Errorf("%s: %d series, want %d", name, len(f.Metric), len(sets))
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["target"] != "db2-link" {
				t.Errorf("%s: target label %q, want the --name", name, labels["target"])
			}
		}
		for _, s := range sets {
			if len(s) == 2 {
				if _, ok := value(first, name, s...); !ok {
					t.Errorf("%s: no series %v", name, s)
				}
			}
		}
	}
	for name := range first {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		}
	}
	// The path-MTU step's first check, a second in: loopback carries
	// IPv4's largest packet each way.
	if mtu, _ := value(first, "narrows_watch_path_mtu_bytes"); mtu != 65535 {
		t.Errorf("path MTU %v on loopback, want 65535", mtu)
	}
	if up, _ := value(first, "narrows_watch_up"); up != 1 {
		t.Errorf("up %v while the agent runs", up)
	}
	consistent := func(fams map[string]*dto.MetricFamily) float64 {
		total, _ := value(fams, "narrows_watch_round_trips_total")
		idle, _ := value(fams, "narrows_watch_round_trip_seconds", "load", "idle")
		loaded, _ := value(fams, "narrows_watch_round_trip_seconds", "load", "loaded")
		if idle+loaded != total || loaded == 0 {
			t.Errorf("histogram counts idle %v + loaded %v, round trips %v", idle, loaded, total)
		}
		return total
	}
	n1 := consistent(first)
	time.Sleep(1200 * time.Millisecond) // beyond the agent's 1 s tests: round trips go on through the next
	second := scrapeWatch(t, url)
	if n2 := consistent(second); n2 <= n1 {
		t.Errorf("round trips %v then %v: not counting", n1, n2)
	}
	if s, _ := value(second, "narrows_watch_sessions_total"); s != 1 {
		t.Errorf("sessions %v: back-to-back tests should keep one session", s)
	}
	if e, _ := value(second, "narrows_watch_errors_total", "kind", "rr"); e != 0 {
		t.Errorf("rr errors %v while the agent ran", e)
	}

	// The agent goes away: up 0; it comes back on its address: up 1.
	stopAgent()
	eventually(t, 3*time.Second, "up 0 with the agent stopped", func() bool {
		up, _ := value(scrapeWatch(t, url), "narrows_watch_up")
		return up == 0
	})
	serveAgent(t, addr, cfg)
	eventually(t, 4*time.Second, "up 1 with the agent back", func() bool {
		f := scrapeWatch(t, url)
		up, _ := value(f, "narrows_watch_up")
		s, _ := value(f, "narrows_watch_sessions_total")
		return up == 1 && s == 2
	})
	last := scrapeWatch(t, url)
	if e, _ := value(last, "narrows_watch_errors_total", "kind", "rr"); e < 1 {
		t.Errorf("rr errors %v after the agent went away", e)
	}
	if d, _ := value(last, "narrows_watch_down_seconds_total"); d <= 0 {
		t.Errorf("down seconds %v after the agent went away", d)
	}
	cancel()
	select {
	case c := <-code:
		if c == cli.ExitUsage || c == cli.ExitFailed {
			t.Errorf("exit %d; stderr %s", c, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the watch did not end when cancelled")
	}
	out := stdout.String()
	for _, w := range []string{"elapsed", "watched", "loaded", "last stream up", "last stream down"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestWatchBadFlags: every mistake is one line and exit 2, before a watch
// begins.
func TestWatchBadFlags(t *testing.T) {
	addr, _ := serveAgent(t, "127.0.0.1:0", agent.Config{Secret: []byte(itest.Secret), MaxDuration: time.Second})
	one, _ := serveAgent(t, "127.0.0.1:0", agent.Config{Secret: []byte(itest.Secret), MaxTests: 1})
	secret := map[string]string{"NARROWS_SECRET": itest.Secret}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no --to", []string{"watch"}, "--to is required"},
		{"rate 0", []string{"watch", "--to", addr, "--rate", "0"}, "--rate 0: use 0.1 to 1000"},
		{"rate huge", []string{"watch", "--to", addr, "--rate", "5000"}, "--rate 5000"},
		{"request size", []string{"watch", "--to", addr, "--request", "2M"}, "--request 2M: use 1 byte to 1M"},
		{"response unit", []string{"watch", "--to", addr, "--response", "10XB"}, "--response"},
		{"interval", []string{"watch", "--to", addr, "--interval", "1ms"}, "--interval 1ms: must be at least"},
		{"duration", []string{"watch", "--to", addr, "--duration", "-1s"}, "--duration"},
		{"stream every", []string{"watch", "--to", addr, "--stream-every", "soon"}, "--stream-every"},
		{"mtu too often", []string{"watch", "--to", addr, "--mtu-every", "10s"}, "--mtu-every 10s: use at least 1m"},
		{"stream too often", []string{"watch", "--to", addr, "--stream-every", "3s", "--stream-duration", "2s"}, "would fill half the time"},
		{"stream too short", []string{"watch", "--to", addr, "--stream-duration", "10ms"}, "--stream-duration 10ms: use at least 100ms"},
		{"direction", []string{"watch", "--to", addr, "--stream-direction", "sideways"}, `--stream-direction "sideways": use up, down or both`},
		{"name charset", []string{"watch", "--to", addr, "--name", "db2 {evil}"}, `--name "db2 {evil}"`},
		{"listen", []string{"watch", "--to", addr, "--stream-every", "0", "--prometheus-listen", "256.0.0.1:1"}, "--prometheus-listen 256.0.0.1:1"},
		{"unexpected argument", []string{"watch", "--to", addr, "extra"}, `unexpected argument "extra"`},
		{"stream beyond --max-duration", []string{"watch", "--to", addr, "--stream-duration", "2s"}, "allows tests of up to 1s"},
		{"one test at a time", []string{"watch", "--to", one}, "--max-tests 1"},
		{"no agent", []string{"watch", "--to", "127.0.0.1:1"}, "no agent reachable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, secret, c.args...)
			if code != cli.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want 2 and one line containing %q; stdout %q stderr %q", code, c.want, stdout, stderr)
			}
		})
	}
}

// TestWatchJSON: --json is a watch interval record each interval and the
// summary last; a --duration ends the watch with exit 0.
func TestWatchJSON(t *testing.T) {
	addr, _ := serveAgent(t, "127.0.0.1:0", agent.Config{Secret: []byte(itest.Secret)})
	stdout, stderr, code := run(t, map[string]string{"NARROWS_SECRET": itest.Secret}, "watch", "--to", addr, "--json",
		"--rate", "50", "--interval", "200ms", "--duration", "700ms", "--stream-every", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	intervals, summary := jsonLines(t, stdout)
	if len(intervals) < 3 {
		t.Fatalf("%d interval records", len(intervals))
	}
	var trips float64
	for _, iv := range intervals {
		if iv["probe"] != "watch" {
			t.Fatalf("probe %v", iv["probe"])
		}
		trips += num(t, iv, "watch", "round_trips")
	}
	last := intervals[len(intervals)-1]
	if total := num(t, last, "watch", "total_round_trips"); total != trips || total != num(t, last, "watch", "idle", "count") {
		t.Errorf("total %v, intervals' sum %v, histogram %v", total, trips, num(t, last, "watch", "idle", "count"))
	}
	if n := num(t, summary, "watch", "round_trips"); n != trips || n < 20 {
		t.Errorf("summary round trips %v, intervals %v", n, trips)
	}
}
