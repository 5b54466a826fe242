package result

// Fleet is `narrows fleet disk`: the same disk test on every agent of a
// fleet, started together, as VMFleet runs DiskSpd in every VM.
type Fleet struct {
	Config FleetConfig `json:"config"`
	// Hosts are the fleet's, in the order given: each its own figures, or
	// why it has none.
	Hosts []FleetHost `json:"hosts"`
	// Start is how together the hosts began: the instant each was given,
	// against when each says it began (its own clock, its offset taken
	// off). Absent when fewer than one host began.
	Start *FleetStart `json:"start,omitempty"`
	// Patterns are the fleet's figures, one per pattern run: the hosts'
	// sums and their spread.
	Patterns []FleetPattern `json:"patterns"`
	// Sweep is --sweep's: the patterns above are each shape at each queue
	// depth, the fleet stepped through them together; here they are read
	// as curves, with the knee against the objective. Absent without
	// --sweep.
	Sweep *FleetSweep `json:"sweep,omitempty"`
}

// FleetSweep is the fleet stepped through queue depths together, as
// VMFleet sweeps DiskSpd's.
type FleetSweep struct {
	Depths []int `json:"queue_depths"` // a host's outstanding I/Os, each step
	// SLO is the objective each step's fleet latency is held to; absent
	// without --slo (then no knee).
	SLO    *FleetSLO    `json:"slo,omitempty"`
	Curves []FleetCurve `json:"curves"` // one per shape, in the order run
}

// FleetSLO is a latency objective: the fleet's quantile (from the hosts'
// histograms merged) at most Bound.
type FleetSLO struct {
	Name     string  `json:"name"` // p50, p90, p99 or p99.9
	Quantile float64 `json:"quantile"`
	Bound    Seconds `json:"bound_seconds"`
}

// FleetCurve is one shape ("randread 8 KiB") at each depth.
type FleetCurve struct {
	Shape  string       `json:"shape"`
	Points []FleetPoint `json:"points"`
	// Knee is the index in Points of the step with the most fleet IOPS
	// whose latency held the objective: what the fleet gives within it.
	// Absent without an objective, or when no step held it.
	Knee *int `json:"knee,omitempty"`
}

// FleetPoint is one step of a curve: Patterns[Pattern]'s figures.
type FleetPoint struct {
	QD      int     `json:"queue_depth"`
	Pattern int     `json:"pattern"` // its index in Fleet.Patterns
	Hosts   int     `json:"hosts"`   // that ran it to its end
	IOPS    float64 `json:"iops"`
	// Latency is the objective's quantile of the fleet's merged latency,
	// and Held whether it was within the bound: absent without an
	// objective, or when the step has no merged latency (a host's
	// histogram missing: not judged).
	Latency *Seconds `json:"latency_seconds,omitempty"`
	Held    *bool    `json:"held,omitempty"`
}

// FleetConfig is what was asked for.
type FleetConfig struct {
	Hosts    int        `json:"hosts"`
	Disk     DiskConfig `json:"disk"`
	Path     string     `json:"path,omitempty"` // the directory on each agent; "" each agent's only one
	Patterns []string   `json:"patterns"`       // their names, as each host ran them
}

// FleetHost is one agent of the fleet.
type FleetHost struct {
	Name string `json:"name"` // as given: db7, db7:7447
	Addr string `json:"addr"`
	// Error says why the host has no figures, or fewer: it did not
	// answer, refused, or failed mid-run.
	Error string `json:"error,omitempty"`
	// ClockOffset is its clock less this host's (from the probe of the
	// shortest round trip), ClockRTT that round trip: the offset is known
	// to within half of it.
	ClockOffset Seconds `json:"clock_offset_seconds"`
	ClockRTT    Seconds `json:"clock_rtt_seconds"`
	// StartedAfter is how long after the fleet's instant it began, by its
	// own clock with its offset taken off (negative: before it).
	StartedAfter *Seconds `json:"started_after_seconds,omitempty"`
	Disk         *Disk    `json:"disk,omitempty"`
}

// FleetStart is the start's spread over the hosts that began.
type FleetStart struct {
	Hosts int `json:"hosts"`
	// MedianAfter and MaxAfter are the hosts' StartedAfter, median and
	// largest; Skew is the largest less the smallest.
	MedianAfter Seconds `json:"median_after_seconds"`
	MaxAfter    Seconds `json:"max_after_seconds"`
	Skew        Seconds `json:"skew_seconds"`
}

// FleetPattern is one pattern over the fleet: the hosts that ran it to
// its end, their sums, and each one's share of the median.
type FleetPattern struct {
	Name  string `json:"name"`
	Hosts int    `json:"hosts"` // with figures for it
	// IOPS and Throughput are the hosts' sums; MedianIOPS the median
	// host's; IOPSPerGiB the sum over the test files' sizes together.
	IOPS       float64 `json:"iops"`
	Throughput float64 `json:"bytes_per_second"`
	MedianIOPS float64 `json:"median_host_iops"`
	IOPSPerGiB float64 `json:"iops_per_gib"`
	// MedianP99 is the median host's p99 latency.
	MedianP99 Seconds `json:"median_host_p99_seconds"`
	// Latency is the fleet's: every host's I/Os together, from their
	// histograms merged (the true fleet p99, never a mean of p99s), each
	// quantile within Precision of the pooled I/Os' (a host's histogram
	// travels coarsened to fit the agent's frame) and never below it.
	// Absent when a host sent none.
	Latency   *Latencies `json:"latency,omitempty"`
	Precision float64    `json:"latency_precision,omitempty"`
	// HistogramsMissing says which hosts' histograms were left out, and why.
	HistogramsMissing []string `json:"histograms_missing,omitempty"`
}
