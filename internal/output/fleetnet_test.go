package output_test

import (
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

// fleetNetFixture is a fixed fleet net run: a primary shipping two
// streams to each of four replicas, the fourth's path a quarter of the
// others', a fifth that did not answer, this host's link given as 1
// Gbit/s.
func fleetNetFixture() *result.Report {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	rep := result.NewReport("fleet net", "5 hosts", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	sec := result.Seconds(10 * time.Second)
	f := &result.FleetNet{Config: result.FleetNetConfig{Hosts: 5, StreamsPerHost: 2, Direction: "forward", Duration: sec, BlockBytes: 128 << 10, AssumedNICRate: 1e9}}
	host := func(name string, rate, rtt float64, retr int64, after float64) result.FleetNetHost {
		a := result.Seconds(after * float64(time.Microsecond))
		bytes := int64(rate / 8 * 10)
		return result.FleetNetHost{Name: name, Addr: name + ":7447", Interface: "eth0", StartedAfter: &a,
			Stream: &result.StreamRun{Phase: result.PhaseParallel, Direction: "forward", Streams: 2, Duration: sec, SentBytes: bytes, ReceivedBytes: bytes,
				Throughput: rate, PerStream: []float64{rate * 0.502, rate * 0.498}, WireThroughput: rate * 1514 / 1448, HeaderBytes: 66, LinkHeaderBytes: 14,
				TCP: &result.TCPSummary{Side: "client", RTT: result.Seconds(rtt * float64(time.Millisecond)), MinRTT: result.Seconds(time.Millisecond / 10),
					MSSBytes: 1448, Retransmits: retr, RetransRatio: float64(retr) * 1448 / float64(bytes)}}}
	}
	f.Hosts = []result.FleetNetHost{host("db1", 143.2e6, 7.16, 0, 905), host("db2", 143.4e6, 6.52, 0, 31.5), host("db3", 143.5e6, 6.55, 0, 706),
		host("db4", 38.3e6, 12.3, 460, 1010), {Name: "db5", Error: "no agent reachable at db5:7447: i/o timeout"}}
	t := &f.Total
	for i := range f.Hosts[:4] {
		r := f.Hosts[i].Stream
		t.Hosts++
		t.Streams += 2
		t.Throughput += r.Throughput
		t.WireThroughput += r.WireThroughput
	}
	t.MedianHost, t.Slowest, t.Fastest = 143.3e6, 38.3e6, 143.5e6
	for i := range f.Hosts[:4] {
		f.Hosts[i].Share = f.Hosts[i].Stream.Throughput / t.MedianHost
	}
	f.Links = []result.FleetNetLink{{Interface: "eth0", Hosts: 4, Throughput: t.Throughput, WireThroughput: t.WireThroughput, Driver: "veth", Speed: 10e9,
		Rate: 1e9, RateFrom: result.RateFromAssumed, Share: t.WireThroughput / 1e9}}
	f.Start = &result.FleetStart{Hosts: 4, MedianAfter: result.Seconds(806 * time.Microsecond), MaxAfter: result.Seconds(1010 * time.Microsecond),
		Skew: result.Seconds(978 * time.Microsecond)}
	rep.FleetNet = f
	rep.Findings = advisor.Advise(rep)
	return rep
}
