package output_test

import (
	"time"

	"github.com/narrows/narrows/internal/advisor"
	"github.com/narrows/narrows/internal/result"
)

// planFixture is a backup plan from fixed stages: a 1 Gbit/s link (3 Gbit/s
// with 4 streams), disks of 1 GB/s and 400 MB/s, zstd and gzip, SQL Server
// without Instant File Initialization, judged against a 4 h RTO.
func planFixture() *result.Report {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := func(bps float64, what string) *result.Rate {
		return &result.Rate{BytesPerSecond: bps, Source: "measured", What: what}
	}
	stages := result.BackupStages{
		SourceRead: r(1e9, "sequential read 1 MiB QD8, /data"), SourceWrite: r(9e8, "sequential write 1 MiB QD8, /data"),
		TargetWrite: r(4e8, "sequential write 1 MiB QD8, /backup on the agent"), TargetRead: r(6e8, "sequential read 1 MiB QD8, /backup on the agent"),
		NetworkOut: []result.StreamRate{{Streams: 1, Rate: *r(117e6, "net stream")}, {Streams: 4, Rate: *r(375e6, "net stream")}},
		NetworkIn:  []result.StreamRate{{Streams: 1, Rate: *r(115e6, "net stream --reverse")}, {Streams: 4, Rate: *r(370e6, "net stream --reverse")}},
		Codecs: []result.CodecRate{
			{Codec: "zstd-3", Side: result.SideSource, CompressPerCore: 410e6, DecompressPerCore: 1.3e9, Ratio: 4.2, Sample: "synthetic", Source: "measured"},
			{Codec: "gzip-6", Side: result.SideSource, CompressPerCore: 52e6, DecompressPerCore: 310e6, Ratio: 4.6, Sample: "synthetic", Source: "measured"},
		},
		SourceCores: 8, TargetCores: 4,
	}
	p, err := advisor.PlanBackup(advisor.BackupInput{Stages: stages, Sizes: []int64{100e9, 1e12, 10e12},
		Compressions: []string{"none", "zstd", "gzip"}, Engine: result.EngineSQLServer, Files: 1, RTO: 4 * time.Hour})
	if err != nil {
		panic(err)
	}
	rep := result.NewReport("plan backup", "db2:7447", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	rep.Agent = "0.1.0"
	rep.BackupPlan = &p
	rep.Findings = advisor.Advise(rep)
	return rep
}

// replicaFixture is a replica plan: two SQL Server databases sampled over
// the same seconds, one stream window-bound at 2.2 MB/s across 40 ms, four
// streams at 11.5 MB/s, the replica host's tcp_rmem capped at 128 KiB, and
// the plan at 80 ms.
func replicaFixture() *result.Report {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	sec := result.Seconds(time.Second)
	what := "'Log Bytes Flushed/sec' per database (sys.dm_os_performance_counters), every 1.00 s for 3.00 s"
	logs := []result.LogRate{
		{Database: "Sales", Mean: 1.8e6, Peak: 3.1e6, Samples: []float64{1.1e6, 3.1e6, 1.2e6}, Interval: sec, Bytes: 5.4e6, Watch: 3 * sec, Source: "measured", What: what},
		{Database: "HR", Mean: 0.4e6, Peak: 0.6e6, Samples: []float64{0.6e6, 0.3e6, 0.3e6}, Interval: sec, Bytes: 1.2e6, Watch: 3 * sec, Source: "measured", What: what},
	}
	s := result.ReplicaStream{Capacity: 2.2e6, LimitedBy: result.LimitWindow, RTT: result.Seconds(40300 * time.Microsecond), MinRTT: result.Seconds(40 * time.Millisecond),
		PeerWindow: 90112, MSS: 1448, Link: 11.5e6, LinkStreams: 4, ReceiverRmemMax: 131072, SenderWmemMax: 4 << 20, ReceiverOS: "linux", Source: "measured"}
	p, err := advisor.PlanReplica(advisor.ReplicaInput{Engine: "sqlserver", Log: logs, Stream: s, RTT: 80 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	rep := result.NewReport("plan replica", "dr1:7447", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	rep.Agent = "0.1.0"
	rep.ReplicaPlan = &p
	rep.Findings = advisor.Advise(rep)
	return rep
}

// chattyFixture is a chatty plan from a db ping across 2 ms without an
// agent (the network between its bounds), 5,000 queries of 2 round trips,
// asked about 200 µs and 10 ms.
func chattyFixture() *result.Report {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lo, hi, q, rest := ms(2.1), ms(2.3), ms(2.45), ms(0.35)
	p, err := advisor.PlanChatty(advisor.ChattyInput{Queries: 5000, RoundTripsPerQuery: 2, RTTs: []time.Duration{200 * time.Microsecond, 10 * time.Millisecond},
		Figures: result.ChattyFigures{NetworkRTT: lo, NetworkRTTLow: &lo, NetworkRTTHigh: &hi, QueryRTT: &q, ServerAndClient: &rest,
			NetworkFrom:         "db ping on postgres://narrows@db1:5432/postgres: kernel RTT of 5 TCP handshakes, p50 2.10 ms (connect call p50 2.20 ms); at most 2.30 ms, the empty query p50 2.30 ms over 40 round trips",
			ServerAndClientFrom: "a query's mean round trip, 2.45 ms over 2,040 queries (SELECT 1), less the network's",
			Floor:               result.Seconds(advisor.SameHostRTT), FloorFrom: advisor.SameHostFrom, RequestBytes: 13, ResponseBytes: 64}})
	if err != nil {
		panic(err)
	}
	rep := result.NewReport("plan chatty", "postgres://narrows@db1:5432/postgres", result.Tool{Version: "0.1.0", Commit: "abc1234", Protocol: 1}, at)
	rep.ChattyPlan = &p
	rep.Findings = advisor.Advise(rep)
	return rep
}
