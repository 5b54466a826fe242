package result

// ProbeFleetWatch is the probe name of `narrows fleet watch`'s interval
// records: one record per interval for the whole fleet, however many
// links, so that its output stays bounded (each link's figures go to
// Prometheus).
const ProbeFleetWatch = "fleet watch"

// FleetWatchListed bounds the links an interval record names (the down
// ones, the slowest).
const FleetWatchListed = 5

// FleetWatchInterval is one interval of a fleet watch: how many links are
// up, and the few worth a look.
type FleetWatchInterval struct {
	Links      int     `json:"links"`
	Up         int     `json:"up"`
	Down       int     `json:"down"`
	RoundTrips int64   `json:"round_trips"` // in this interval, all links
	Rate       float64 `json:"round_trips_per_second"`
	// DownLinks are down links (at most FleetWatchListed, longest out of
	// reach first) with why; Slowest the links up with the highest p99
	// this interval (at most FleetWatchListed, slowest first).
	DownLinks []FleetWatchLink `json:"down_links,omitempty"`
	Slowest   []FleetWatchLink `json:"slowest,omitempty"`
}

// FleetWatchLink is one link as an interval record names it.
type FleetWatchLink struct {
	Name        string  `json:"name"`
	RoundTrips  int64   `json:"round_trips,omitempty"`
	P50         Seconds `json:"rtt_p50_seconds,omitempty"`
	P99         Seconds `json:"rtt_p99_seconds,omitempty"`
	DownSeconds Seconds `json:"down_seconds_total,omitempty"`
	LastError   string  `json:"last_error,omitempty"`
}

// FleetWatch is the summary of `narrows fleet watch`: each link watched
// at the end, as `narrows watch` sums up one.
type FleetWatch struct {
	// Config is every link's (its name empty); Targets where the links
	// came from (@FILE or the list given).
	Config   WatchConfig `json:"config"`
	Targets  string      `json:"targets"`
	Duration Seconds     `json:"duration_seconds"`
	// Reloads are the targets file's reloads that took, ReloadFailures
	// those refused (the links before them kept).
	Reloads        int64 `json:"reloads"`
	ReloadFailures int64 `json:"reload_failures"`
	// Links are the links watched at the end, by name; a link removed by
	// a reload was summed up when it went.
	Links []FleetWatchSummary `json:"links"`
}

// FleetWatchSummary is one link's whole watch.
type FleetWatchSummary struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	Watch *Watch `json:"watch"`
}
