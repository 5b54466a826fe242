package history_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/history"
	"github.com/narrows/narrows/internal/result"
)

// TestMannWhitney against values worked by hand (R's wilcox.test gives
// the same):
//   - 1..4 against 5..8: U = 0, the one most extreme ordering of
//     C(8,4) = 70 on each side: p = 2/70 = 0.028571 (exact).
//   - 1..3 against 4..6: U = 0, p = 2/C(6,3) = 2/20 = 0.1.
//   - {1,3,5} against {2,4,6}: U = 3 (pairs x>y: 3>2, 5>2, 5>4). Of the
//     20 orderings U ≤ 3 in 7 (U counts 1,1,2,3,3,3,3,3,2,1,1 for
//     U = 0..9... see below): P(U ≤ 3) = (1+1+2+3)/20 = 0.35, p = 0.7.
//   - ties, normal approximation: {1,2,2,3} against {2,3,3,4,5}: ranks
//     1; 2,2,2 → 3 each; 3,3,3 → 6 each; 8; 9. x ranks 1+3+3+6 = 13,
//     U = 13 - 10 = 3, mu = 10, tie groups of 3 and 3: Σ(t³-t) = 48,
//     σ² = 20/12 · (10 - 48/72) = 15.5556, z = (3 - 10 + 0.5)/3.944 =
//     -1.648, p = erfc(1.648/√2) = 0.0994.
func TestMannWhitney(t *testing.T) {
	cases := []struct {
		x, y []float64
		u, p float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 0, 2.0 / 70},
		{[]float64{5, 6, 7, 8}, []float64{1, 2, 3, 4}, 16, 2.0 / 70},
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1},
		{[]float64{1, 3, 5}, []float64{2, 4, 6}, 3, 0.7},
		{[]float64{1, 2, 2, 3}, []float64{2, 3, 3, 4, 5}, 3, 0.0994},
		{[]float64{7, 7, 7}, []float64{7, 7, 7, 7}, 6, 1},
		{nil, []float64{1}, 0, 1},
	}
	for _, c := range cases {
		u, p := history.MannWhitney(c.x, c.y)
		if u != c.u || math.Abs(p-c.p) > 5e-4 {
			t.Errorf("MannWhitney(%v, %v) = U %v, p %.5f; want U %v, p %.5f", c.x, c.y, u, p, c.u, c.p)
		}
	}
	// Large samples (normal approximation without ties): 30 against the
	// same 30 shifted clear of them is significant, interleaved is not.
	var a, b, c []float64
	for i := 0; i < 30; i++ {
		a, b, c = append(a, float64(i)), append(b, float64(i)+100), append(c, float64(i)+0.5)
	}
	if _, p := history.MannWhitney(a, b); p > 1e-6 {
		t.Errorf("disjoint samples of 30: p %.3g", p)
	}
	if _, p := history.MannWhitney(a, c); p < 0.5 {
		t.Errorf("interleaved samples of 30: p %.3g", p)
	}
}

func streamRun(mbps float64, n int) (*result.Report, []result.Interval) {
	rep := result.NewReport("net stream", "127.0.0.1:7447", result.Tool{Version: "1.0"}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rep.Stream = &result.Stream{Throughput: mbps * 1e6, Runs: []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Throughput: mbps * 1e6}}}
	var ivs []result.Interval
	for i := 0; i < n; i++ {
		iv := result.NewInterval("stream", time.Duration(i)*time.Second, time.Duration(i+1)*time.Second)
		iv.Phase, iv.Direction, iv.Streams = result.PhaseSingle, "forward", 1
		iv.Throughput = mbps*1e6 + float64(i%3)*1e4
		ivs = append(ivs, iv)
	}
	return rep, ivs
}

func TestHistoryRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := history.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, ivs := streamRun(940, 10)
	id1, err := st.Add(ctx, rep, ivs)
	if err != nil {
		t.Fatal(err)
	}
	big, bigIvs := streamRun(100, history.MaxIntervals+5) // gzipped, capped
	id2, err := st.Add(ctx, big, bigIvs)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = history.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(ctx, history.Filter{})
	if err != nil || len(runs) != 2 || runs[0].ID != id2 || runs[1].ID != id1 {
		t.Fatalf("list: %v %+v", err, runs)
	}
	if r := runs[1]; r.Command != "net stream" || r.Headline != 940e6 || r.HeadlineUnit != history.UnitBits || r.Version != "1.0" {
		t.Errorf("listed %+v", r)
	}
	got, err := st.Get(ctx, id1)
	if err != nil || got.Report.Stream.Throughput != 940e6 || len(got.Intervals) != 10 || got.Intervals[3].Throughput != ivs[3].Throughput {
		t.Fatalf("get: %v %+v", err, got)
	}
	got, err = st.Get(ctx, id2)
	if err != nil || len(got.Intervals) != history.MaxIntervals || got.IntervalsDropped != 5 {
		t.Fatalf("get big: %v, %d intervals, %d dropped", err, len(got.Intervals), got.IntervalsDropped)
	}
	if runs, _ := st.List(ctx, history.Filter{Command: "disk"}); len(runs) != 0 {
		t.Errorf("--command disk listed %d", len(runs))
	}
	if _, err := st.Get(ctx, 99); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("get 99: %v", err)
	}
}

func TestHistoryDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", map[string]string{"HOME": "/home/a"}, "/home/a/.local/share/narrows"},
		{"linux", map[string]string{"HOME": "/home/a", "XDG_DATA_HOME": "/data"}, "/data/narrows"},
		{"linux", map[string]string{"HOME": "/home/a", "NARROWS_HISTORY": "/t"}, "/t"},
		{"darwin", map[string]string{"HOME": "/Users/a"}, "/Users/a/Library/Application Support/narrows"},
		{"windows", map[string]string{"LOCALAPPDATA": `C:\Users\a\AppData\Local`}, filepath.Join(`C:\Users\a\AppData\Local`, "narrows")},
	}
	for _, c := range cases {
		if got, err := history.Dir(env(c.env), c.goos); err != nil || got != c.want {
			t.Errorf("%s %v: %q %v, want %q", c.goos, c.env, got, err, c.want)
		}
	}
	if _, err := history.Dir(env(nil), "linux"); err == nil || !strings.Contains(err.Error(), "NARROWS_HISTORY") {
		t.Errorf("no HOME: %v", err)
	}
}

// TestHistoryRefusesCorruptAndNewer: a file that is not a database and a
// store of a newer schema are refused with words, byte for byte untouched.
func TestHistoryRefusesCorruptAndNewer(t *testing.T) {
	ctx := context.Background()
	garbage := t.TempDir()
	junk := bytes.Repeat([]byte("not a database\n"), 500)
	os.WriteFile(filepath.Join(garbage, history.FileName), junk, 0o600)
	_, err := history.Open(ctx, garbage)
	var ce *history.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(garbage, history.FileName)) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("garbage: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(garbage, history.FileName)); !bytes.Equal(b, junk) {
		t.Error("the garbage file was changed")
	}

	newer := t.TempDir()
	st, err := history.Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	r1, iv1 := streamRun(1, 4)
	st.Add(ctx, r1, iv1)
	history.SetVersionForTest(st, history.SchemaVersion+1)
	st.Close()
	path := filepath.Join(newer, history.FileName)
	before, _ := os.ReadFile(path)
	_, err = history.Open(ctx, newer)
	var ne *history.NewerError
	if !errors.As(err, &ne) || ne.Found != history.SchemaVersion+1 || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("newer: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the newer store was changed")
	}
}

func TestCompareFigures(t *testing.T) {
	a, aIvs := streamRun(940, 10)
	b, bIvs := streamRun(500, 10)
	same, sameIvs := streamRun(940, 10)
	b.Stream.Config.WindowBytes = 64 << 10
	b.Facts = &result.Facts{OS: "linux", Interfaces: []result.NIC{{Name: "eth0", DriverVersion: "1.3", MTU: 9000}}}
	a.Facts = &result.Facts{OS: "linux", Interfaces: []result.NIC{{Name: "eth0", DriverVersion: "1.2", MTU: 9000}}}
	c := history.Compare(a, aIvs, b, bIvs)
	if len(c.Figures) != 1 || !c.Figures[0].Significant || math.Abs(*c.Figures[0].Delta-(500.0/940-1)) > 1e-9 {
		t.Errorf("known change: %+v", c.Figures)
	}
	w := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"settings stream.window_bytes: 0 → 65536", "this host interfaces.eth0.driver_version: 1.2 → 1.3"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "mtu") {
		t.Errorf("an unchanged MTU warned:\n%s", w)
	}
	a, aIvs = streamRun(940, 10)
	c = history.Compare(a, aIvs, same, sameIvs)
	if len(c.Figures) != 1 || c.Figures[0].Significant || len(c.Warnings) != 0 {
		t.Errorf("no change: %+v %v", c.Figures, c.Warnings)
	}
	few, fewIvs := streamRun(10, 3)
	if c = history.Compare(a, aIvs, few, fewIvs); c.Figures[0].P != nil || c.Figures[0].Significant {
		t.Errorf("3 samples tested: %+v", c.Figures[0])
	}
}

// storeOf makes a store in dir holding n runs of rep and ivs.
func storeOf(tb testing.TB, dir string, n int, rep *result.Report, ivs []result.Interval) {
	tb.Helper()
	ctx := context.Background()
	st, err := history.Open(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	for range n {
		if _, err := st.Add(ctx, rep, ivs); err != nil {
			tb.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// TestHistoryAddReopened: in a store of 200 runs, 20 narrows runs each
// open it, keep their run of 100 intervals and close it; every run is
// kept, the last one whole. (What keeping a run costs is measured, not
// asserted: BenchmarkHistoryAdd, in bench/history.sh.)
func TestHistoryAddReopened(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rep, ivs := streamRun(940, 100)
	storeOf(t, dir, 200, rep, ivs)
	var last int64
	for range 20 {
		st, err := history.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if last, err = st.Add(ctx, rep, ivs); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := history.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(ctx, history.Filter{})
	if err != nil || len(runs) != 220 || runs[0].ID != last {
		t.Fatalf("list: %v, %d runs, want 220 with run %d first", err, len(runs), last)
	}
	got, err := st.Get(ctx, last)
	if err != nil || len(got.Intervals) != 100 || got.IntervalsDropped != 0 || got.Intervals[99].Throughput != ivs[99].Throughput {
		t.Fatalf("get %d: %v %+v", last, err, got)
	}
}

// BenchmarkHistoryAdd: what keeping a run of 100 intervals costs, in a
// store of 200 such runs. bench/history.sh runs it beside sqlite3's own
// insert of the same bytes.
//   - keep: open the store, add the run in its transaction, close it: what
//     every recorded narrows command pays at its end (a unit test held it
//     under 50 ms until the race detector made it 64).
//   - add: Add alone, in an open store: the JSON, the gzip and the insert.
//   - insert: the insert's transaction alone (BEGIN IMMEDIATE, INSERT,
//     COMMIT) with the row Add wrote, through the same driver, file and
//     pragmas: the work sqlite3 does in bench/history.sh, for the ratio.
//
// Each reports the bytes stored for the run: summary-B and intervals-B.
func BenchmarkHistoryAdd(b *testing.B) {
	ctx := context.Background()
	rep, ivs := streamRun(940, 100)
	dir := b.TempDir()
	storeOf(b, dir, 200, rep, ivs)
	dsn := history.DSNForTest(filepath.Join(dir, history.FileName))
	// The row Add wrote, for insert: read here, and the connection closed,
	// so that keep's Close is the store's last, as in a narrows run.
	const cols = `started_at, command, target, headline_name, headline, headline_unit,
		partial, narrows_version, summary, intervals, intervals_kept, intervals_dropped`
	row := make([]any, 12)
	ptrs := make([]any, len(row))
	for i := range row {
		ptrs[i] = &row[i]
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	err = db.QueryRowContext(ctx, "SELECT "+cols+" FROM runs ORDER BY id DESC LIMIT 1").Scan(ptrs...)
	db.Close()
	if err != nil {
		b.Fatal(err)
	}
	sum, _ := row[8].([]byte)
	ivb, _ := row[9].([]byte)
	sizes := func(b *testing.B) {
		b.ReportMetric(float64(len(sum)), "summary-B")
		b.ReportMetric(float64(len(ivb)), "intervals-B")
	}
	b.Run("keep", func(b *testing.B) {
		for b.Loop() {
			st, err := history.Open(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Add(ctx, rep, ivs); err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
		}
		sizes(b)
	})
	b.Run("add", func(b *testing.B) {
		st, err := history.Open(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		for b.Loop() {
			if _, err := st.Add(ctx, rep, ivs); err != nil {
				b.Fatal(err)
			}
		}
		sizes(b)
	})
	b.Run("insert", func(b *testing.B) {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // as Open
		insert := "INSERT INTO runs (" + cols + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
		for b.Loop() {
			tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, insert, row...); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		sizes(b)
	})
}

// TestFiguresSamples: a figure's samples are its value in each interval
// that has it, in order; an interval without a round trip (a gap) has
// none.
func TestFiguresSamples(t *testing.T) {
	lat := &result.Latency{P50: result.Seconds(2 * time.Millisecond)}
	ivs := []result.Interval{{RTT: lat, RoundTripRate: 100, QueryRate: 90}, {}, {RTT: lat, RoundTripRate: 300, QueryRate: 270}}
	for _, c := range []struct {
		rep  *result.Report
		name string
		want []float64
	}{
		{&result.Report{RR: &result.RR{Rate: 200}}, "round trips", []float64{100, 300}},
		{&result.Report{DBPing: &result.DBPing{Rate: 180}}, "queries", []float64{90, 270}},
	} {
		fs := history.Figures(c.rep, ivs)
		if len(fs) < 2 || fs[0].Name != c.name || !slicesEqual(fs[0].Samples, c.want) || fs[1].Name == "" || !slicesEqual(fs[1].Samples, []float64{0.002, 0.002}) {
			t.Errorf("%s: figures %+v", c.name, fs)
		}
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

// bomb is a gzip of n zero bytes: at n = 1 GiB, 1.3 MB that unpack 800
// times over.
func bomb(t *testing.T, n int64) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if _, err := io.CopyN(zw, zeros{}, n); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestHistoryRefusesBomb: a run whose intervals are a gzip of 1 GiB of
// zeros, planted in a real store, is refused by Get as too large, naming
// the run and the limit, having allocated little more than the limit
// (before: 1 GiB read, 2.7 GB allocated, then a JSON error); the store's
// other runs still list and read.
func TestHistoryRefusesBomb(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := history.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 3 {
		rep, ivs := streamRun(940, 200) // over 4 KiB: stored gzipped, as a bomb would be
		if _, err := st.Add(ctx, rep, ivs); err != nil {
			t.Fatal(err)
		}
	}
	z := bomb(t, 1<<30)
	t.Logf("the bomb: %d bytes", len(z))
	db, err := sql.Open("sqlite", filepath.Join(dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE runs SET intervals = ? WHERE id = 2", z); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = st.Get(ctx, 2)
	runtime.ReadMemStats(&after)
	var te *history.TooLargeError
	if !errors.As(err, &te) || te.ID != 2 || te.Part != "intervals" || te.Limit != history.MaxRecordBytes ||
		!strings.Contains(err.Error(), "run 2 ") || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("Get(the bomb) = %v, want a *TooLargeError naming run 2 and 64 MiB", err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("refusing it allocated %d MiB", allocated>>20)
	if allocated > history.MaxRecordBytes+16<<20 {
		t.Errorf("refusing the bomb allocated %d MiB: the reader did not stop at the %d MiB limit", allocated>>20, history.MaxRecordBytes>>20)
	}
	runs, err := st.List(ctx, history.Filter{})
	if err != nil || len(runs) != 3 {
		t.Fatalf("List: %d runs, %v", len(runs), err)
	}
	for _, id := range []int64{1, 3} {
		if r, err := st.Get(ctx, id); err != nil || len(r.Intervals) != 200 {
			t.Errorf("Get(%d) beside the bomb: %v", id, err)
		}
	}
}

// TestHistoryKeepsRunsWithinLimit: a run whose intervals are more JSON
// than the limit keeps its first intervals, as many as fit, and counts
// the rest as dropped, so that Get reads back every run Add wrote; a
// summary over the limit is not kept, and says why.
func TestHistoryKeepsRunsWithinLimit(t *testing.T) {
	ctx := context.Background()
	st, err := history.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, ivs := streamRun(940, 100)
	one, _ := json.Marshal(ivs[0])
	all, _ := json.Marshal(ivs)
	limit := int64(len(all)) / 2
	defer history.SetMaxRecordForTest(limit)()
	id, err := st.Add(ctx, rep, ivs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get of a run Add trimmed: %v", err)
	}
	kept, _ := json.Marshal(r.Intervals)
	if len(r.Intervals)+r.IntervalsDropped != 100 || int64(len(kept)) > limit || int64(len(kept)+1+len(one)) <= limit ||
		r.Intervals[0].Start != ivs[0].Start {
		t.Errorf("kept %d intervals (%d bytes of JSON), dropped %d, of 100 in %d bytes", len(r.Intervals), len(kept), r.IntervalsDropped, limit)
	}
	sum, _ := json.Marshal(rep)
	history.SetMaxRecordForTest(int64(len(sum)) - 1)
	_, err = st.Add(ctx, rep, nil)
	var te *history.TooLargeError
	if !errors.As(err, &te) || te.Part != "summary" || te.ID != 0 || !strings.Contains(err.Error(), "--json") {
		t.Errorf("a summary over the limit: %v", err)
	}
}

// TestHistoryMigratesSchema1: a store narrows of schema 1 wrote is
// brought to the current schema when opened, its runs kept and read as
// before (no file), and new runs keep the file they were written to
// (doctor's --out), which List and Get return.
func TestHistoryMigratesSchema1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r1, iv1 := streamRun(1, 4)
	sum, _ := json.Marshal(r1)
	ivs, _ := json.Marshal(iv1)
	if err := history.MakeV1StoreForTest(ctx, dir, sum, ivs); err != nil {
		t.Fatal(err)
	}
	st, err := history.Open(ctx, dir)
	if err != nil {
		t.Fatalf("a schema 1 store: %v", err)
	}
	defer st.Close()
	old, err := st.Get(ctx, 1)
	if err != nil || old.File != "" || old.Report.Command != "net stream" || len(old.Intervals) != 4 {
		t.Fatalf("the run schema 1 kept: %+v, %v", old, err)
	}
	r2, _ := streamRun(2, 2)
	id, err := st.AddFrom(ctx, r2, nil, "/runs/narrows-doctor-1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.List(ctx, history.Filter{})
	if err != nil || len(runs) != 2 || runs[0].ID != id || runs[0].File != "/runs/narrows-doctor-1.jsonl" || runs[1].File != "" {
		t.Fatalf("after the migration: %+v, %v", runs, err)
	}
	if got, err := st.Get(ctx, id); err != nil || got.File != "/runs/narrows-doctor-1.jsonl" {
		t.Fatalf("Get %d: %+v, %v", id, got, err)
	}
	st.Close()
	// Opened again: already current, nothing to do.
	again, err := history.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

// TestFiguresOfTheLoad: round trips under load give compare the idle and
// loaded percentiles, each from its own phase's intervals, and the queue
// the load built.
func TestFiguresOfTheLoad(t *testing.T) {
	rep := result.NewReport("net rr", "db2:7447", result.Tool{}, time.Now())
	rep.Loaded = &result.Loaded{Rise: result.Seconds(3 * time.Millisecond)}
	rep.Loaded.Idle.P50, rep.Loaded.Loaded.P50 = result.Seconds(time.Millisecond), result.Seconds(4*time.Millisecond)
	var ivs []result.Interval
	for i, phase := range []string{"idle", "idle", "loaded", "loaded", "loaded"} {
		iv := result.NewInterval("rr", time.Duration(i)*time.Second, time.Duration(i+1)*time.Second)
		iv.Phase = phase
		iv.RTT = &result.Latency{P50: result.Seconds(time.Duration(i+1) * time.Millisecond)}
		ivs = append(ivs, iv)
	}
	got := map[string]history.Figure{}
	for _, f := range history.Figures(rep, ivs) {
		got[f.Name] = f
	}
	idle, loaded, queue := got["round trip idle p50"], got["round trip under load p50"], got["queue under load"]
	if idle.Value != 0.001 || len(idle.Samples) != 2 || loaded.Value != 0.004 || len(loaded.Samples) != 3 || loaded.Samples[0] != 0.003 || queue.Value != 0.003 || queue.HigherIsBetter {
		t.Errorf("idle %+v, under load %+v, queue %+v", idle, loaded, queue)
	}
}
