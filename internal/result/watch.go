package result

import (
	"math"
	"time"
)

// ProbeWatch is the probe name of `narrows watch`'s interval records.
const ProbeWatch = "watch"

// The fixed label values of a watch's figures.
const (
	LoadIdle   = "idle"   // round trips while no stream runs
	LoadLoaded = "loaded" // round trips while a stream loads the link
	DirUp      = "up"     // this host sends to the agent (net stream's forward)
	DirDown    = "down"   // the agent sends to this host (net stream's --reverse)
)

// Loads and Directions list those values in the order outputs show them.
var (
	Loads      = []string{LoadIdle, LoadLoaded}
	Directions = []string{DirUp, DirDown}
)

// WatchBuckets are the upper bounds of a watch's round-trip histogram,
// from 50 µs (a LAN round trip) to 10 s (a link about to be declared dead),
// WatchBucketRatio apart, each rounded to 3 significant digits:
// Prometheus's classic histogram, one series per bound. histogram_quantile
// interpolates linearly inside a bucket, so a bucket's width is its error:
// 1-2-5 bounds read the median of an 8.07-8.5 ms path as 7.87 ms, below
// the path's minimum (issue 25, defect 12); at 2^(1/8), a native
// histogram's schema-3 resolution, a quantile is within 9% wherever the
// round trips lie.
var WatchBuckets = watchBuckets()

// WatchBucketRatio is the ratio of one bound to the one before.
var WatchBucketRatio = math.Pow(2, 1.0/8)

func watchBuckets() []time.Duration {
	const lo, hi = 50 * time.Microsecond, 10 * time.Second
	var out []time.Duration
	for i := 0; ; i++ {
		v := float64(lo) * math.Pow(2, float64(i)/8)
		if v >= float64(hi) {
			return append(out, hi)
		}
		// 3 significant digits: readable le labels, still 9% apart.
		p := math.Pow(10, math.Floor(math.Log10(v))-2)
		out = append(out, time.Duration(math.Round(v/p)*p))
	}
}

// WatchRTT is the round trips of one load since the watch began: counts
// at or below each of WatchBuckets' bounds (cumulative, as Prometheus
// has them), and the count and sum of all.
type WatchRTT struct {
	Count   uint64   `json:"count"`
	Sum     Seconds  `json:"sum_seconds"`
	Buckets []uint64 `json:"buckets"` // Buckets[i]: round trips ≤ WatchBuckets[i]
}

// WatchStream is the last short stream in one direction.
type WatchStream struct {
	Direction  string    `json:"direction"` // DirUp or DirDown
	At         time.Time `json:"at"`        // when it ended
	Throughput float64   `json:"throughput_bits_per_second"`
	// RPM is responsiveness (metric.Responsiveness) from the round trips
	// made while it ran; 0 when none was made.
	RPM float64 `json:"responsiveness_rpm,omitempty"`
	// Loaded is how many round trips RPM stands on.
	Loaded int64 `json:"loaded_round_trips"`
	// Self is the stream's own smoothed RTT (its sender's TCP_INFO,
	// trimmed mean of the samples): the round trip on the loaded
	// connection that RPM also stands on.
	Self Seconds `json:"self_rtt_seconds,omitempty"`
}

// WatchInterval is one interval of `narrows watch`: that interval's round
// trips, and the watch's state so far (counters since it began, the last
// figures of its periodic steps).
type WatchInterval struct {
	Up          bool    `json:"up"`
	RoundTrips  int64   `json:"round_trips"` // in this interval
	Rate        float64 `json:"round_trips_per_second"`
	LoadedTrips int64   `json:"loaded_round_trips"` // of RoundTrips, under a stream's load
	RTT         Latency `json:"rtt"`                // this interval's round trips

	// Since the watch began.
	TotalRoundTrips int64            `json:"total_round_trips"`
	Errors          map[string]int64 `json:"errors_total"` // by kind: WatchErrorKinds
	Sessions        int64            `json:"sessions_total"`
	DownSeconds     Seconds          `json:"down_seconds_total"`
	Idle            WatchRTT         `json:"idle"`
	Loaded          WatchRTT         `json:"loaded"`
	Streams         []WatchStream    `json:"streams,omitempty"` // the last in each direction run so far
	// MTUs: this host's interface routing to the agent and the agent's
	// routing back (from the session's facts); PathMTU once a path-MTU
	// step measures it. 0: not known.
	MTUHere  int `json:"interface_mtu_here_bytes,omitempty"`
	MTUAgent int `json:"interface_mtu_agent_bytes,omitempty"`
	PathMTU  int `json:"path_mtu_bytes,omitempty"`
	// LastError is the last failure, its kind first ("rr: ..."), as a
	// person reads it: an agent's words among them, so never a label.
	LastError string `json:"last_error,omitempty"`
}

// Error kinds of a watch, the label values of its errors counter.
const (
	WatchErrConnect = "connect" // dialling or authenticating a session
	WatchErrRR      = "rr"      // a round-trip test ended in error (the agent went away, the link dropped)
	WatchErrStream  = "stream"  // a short stream failed (busy agent, lost link)
	WatchErrMTU     = "mtu"     // a path-MTU check failed
)

// WatchErrorKinds lists them.
var WatchErrorKinds = []string{WatchErrConnect, WatchErrRR, WatchErrStream, WatchErrMTU}

// Watch is the summary of `narrows watch`.
type Watch struct {
	Config     WatchConfig      `json:"config"`
	Duration   Seconds          `json:"duration_seconds"`
	RoundTrips int64            `json:"round_trips"`
	Errors     map[string]int64 `json:"errors_total"`
	Sessions   int64            `json:"sessions_total"`
	Down       Seconds          `json:"down_seconds"`
	Idle       Latency          `json:"idle"`
	Loaded     Latency          `json:"loaded"`
	LoadedN    int64            `json:"loaded_round_trips"`
	Streams    []WatchStream    `json:"streams,omitempty"`
	StreamRuns int64            `json:"stream_runs"`
	LastError  string           `json:"last_error,omitempty"` // as WatchInterval's
}

// WatchConfig is what was asked for.
type WatchConfig struct {
	Name           string  `json:"name,omitempty"`
	Rate           float64 `json:"rate_per_second"`
	RequestBytes   int64   `json:"request_bytes"`
	ResponseBytes  int64   `json:"response_bytes"`
	Interval       Seconds `json:"interval_seconds"`
	Duration       Seconds `json:"duration_seconds,omitempty"`
	StreamEvery    Seconds `json:"stream_every_seconds,omitempty"`
	StreamDuration Seconds `json:"stream_duration_seconds,omitempty"`
	StreamDir      string  `json:"stream_direction,omitempty"`
}
