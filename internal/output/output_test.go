package output_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type sink interface {
	Interval(result.Interval) error
	Report(*result.Report) error
}

func ms(f float64) result.Seconds { return result.Seconds(f * float64(time.Millisecond)) }

// fixtures are fixed records: a window-limited stream across 40 ms and a
// LAN round-trip run.
func fixtures() (map[string][]result.Interval, map[string]*result.Report) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tool := result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}

	st := result.NewReport("net stream", "db2:7447", tool, at)
	st.Agent = "0.1.0"
	var siv []result.Interval
	for i := range 2 {
		iv := result.NewInterval("stream", time.Duration(i)*time.Second, time.Duration(i+1)*time.Second)
		iv.Phase, iv.Direction, iv.Streams, iv.Bytes = result.PhaseSingle, "forward", 1, 3_276_800
		iv.Throughput = 26_214_400
		iv.TCP = &result.TCPInterval{RTT: ms(40.2), RTTVar: ms(0.4), MinRTT: ms(40), CwndBytes: 187_000, DeliveryRate: 26e6}
		siv = append(siv, iv)
	}
	st.Stream = &result.Stream{Config: result.StreamConfig{Direction: "forward", Streams: 1, Duration: result.Seconds(2 * time.Second),
		Interval: result.Seconds(time.Second), BlockBytes: 131072, WindowBytes: 131072}, Throughput: 26_214_400,
		Runs: []result.StreamRun{{Phase: result.PhaseSingle, Direction: "forward", Streams: 1, Duration: result.Seconds(2 * time.Second),
			SentBytes: 6_684_672, ReceivedBytes: 6_553_600, Throughput: 26_214_400, PerStream: []float64{26_214_400},
			WireThroughput: 27_409_281, HeaderBytes: 66, LinkHeaderBytes: 14,
			TCP: &result.TCPSummary{Side: "client", RTT: ms(40.2), MinRTT: ms(40), MSSBytes: 1448, MaxCwnd: 187_000, SndWndBytes: 131_072,
				RwndLimited: 0.93, BDPBytes: 131_727},
			CPU: result.CPU{Local: 3.1, Remote: 2.4, Available: true}}}}
	st.Findings = advisor.Advise(st)

	rr := result.NewReport("net rr", "db2:7447", tool, at)
	rr.Agent = "0.1.0"
	lat := result.Latency{Min: ms(0.21), Mean: ms(0.26), P50: ms(0.25), P90: ms(0.29), P99: ms(0.41), P999: ms(0.9), Max: ms(2.1)}
	riv := result.NewInterval("rr", 0, time.Second)
	riv.RoundTrips, riv.RoundTripRate, riv.RTT = 3846, 3846, &lat
	rr.RR = &result.RR{Config: result.RRConfig{RequestBytes: 500, ResponseBytes: 64, Duration: result.Seconds(time.Second),
		Interval: result.Seconds(time.Second), Queries: 5000}, Connect: ms(0.31), RoundTrips: 3846, Duration: result.Seconds(time.Second),
		Rate: 3846, Latency: lat, KernelRTT: ms(0.2), KernelMinRTT: ms(0.18), CPU: result.CPU{Local: 20, Remote: 15, Available: true}}
	rr.Findings = advisor.Advise(rr)
	return map[string][]result.Interval{"stream": siv, "rr": {riv}}, map[string]*result.Report{"stream": st, "rr": rr}
}

// allFixtures gathers every probe's fixtures: net (fixtures), db and disk.
func allFixtures() (map[string][]result.Interval, map[string]*result.Report) {
	ivs, reps := fixtures()
	divs, dreps := dbFixtures()
	for k := range dreps {
		ivs[k], reps[k] = divs[k], dreps[k]
	}
	ivs["disk"], reps["disk"] = diskFixture()
	ivs["plan_backup"], reps["plan_backup"] = nil, planFixture()      // plan_test.go
	ivs["plan_replica"], reps["plan_replica"] = nil, replicaFixture() // plan_test.go
	ivs["plan_chatty"], reps["plan_chatty"] = nil, chattyFixture()    // plan_test.go
	ivs["disk_custom"], reps["disk_custom"] = diskCustomFixture()
	ivs["fleet_net"], reps["fleet_net"] = nil, fleetNetFixture()       // fleetnet_test.go
	ivs["fleet_disk"], reps["fleet_disk"] = nil, fleetDiskFixture()    // fleet_test.go
	ivs["fleet_sweep"], reps["fleet_sweep"] = nil, fleetSweepFixture() // fleet_test.go
	return ivs, reps
}

func TestGolden(t *testing.T) {
	ivs, reps := allFixtures()
	formats := map[string]func(*bytes.Buffer) sink{
		"table": func(b *bytes.Buffer) sink { return table.New(b) },
		"jsonl": func(b *bytes.Buffer) sink { return jsonl.New(b) },
	}
	for fname, mk := range formats {
		for probe := range reps {
			t.Run(fname+"/"+probe, func(t *testing.T) {
				var b bytes.Buffer
				out := mk(&b)
				for _, iv := range ivs[probe] {
					if err := out.Interval(iv); err != nil {
						t.Fatal(err)
					}
				}
				if err := out.Report(reps[probe]); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", probe+"."+fname+".golden")
				if *update {
					os.WriteFile(path, b.Bytes(), 0o644)
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/output/ -update)", err)
				}
				if !bytes.Equal(b.Bytes(), want) {
					t.Fatalf("%s differs from %s:\n%s", fname, path, b.String())
				}
			})
		}
	}
}

// TestJSONRoundTrip: a saved summary reads back into the same Report, so
// it can be re-rendered and re-advised offline (to the same findings).
func TestJSONRoundTrip(t *testing.T) {
	_, reps := allFixtures()
	for name, r := range reps {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back result.Report
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		b2, _ := json.Marshal(&back)
		if !bytes.Equal(b, b2) {
			t.Fatalf("%s: JSON changed on a round trip:\n%s\n%s", name, b, b2)
		}
		again, _ := json.Marshal(advisor.Advise(&back))
		first, _ := json.Marshal(r.Findings)
		if !bytes.Equal(again, first) {
			t.Fatalf("%s: re-advising the saved report changed the findings:\n%s\n%s", name, first, again)
		}
	}
}
