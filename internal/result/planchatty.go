package result

// ChattyFigures are what a chatty plan is composed from: one query's time
// split into the network's round trip (what the path costs) and the rest
// (the server's work and the programs and stacks at both ends), measured
// (net rr, db ping), read from a saved run or given by hand.
type ChattyFigures struct {
	// NetworkRTT is one round trip of the path: the part a what-if
	// replaces.
	NetworkRTT Seconds `json:"network_rtt_seconds"`
	// NetworkRTTLow and NetworkRTTHigh bound it when it was not measured
	// apart from the queries (db ping without an agent: between the
	// kernel's RTT of TCP handshakes and a round trip that does no work);
	// NetworkRTT is then the low bound, what the path costs as ping reads
	// it.
	NetworkRTTLow  *Seconds `json:"network_rtt_low_seconds,omitempty"`
	NetworkRTTHigh *Seconds `json:"network_rtt_high_seconds,omitempty"`
	NetworkFrom    string   `json:"network_rtt_from"`
	// Measured is what the figures were measured to: the database (its
	// DSN, the password hidden) or the agent's address; "" when given.
	Measured string `json:"measured,omitempty"`
	// ServerAndClient is one query's time besides the network's round
	// trip; absent when nothing measured it (net rr measures the network
	// alone).
	ServerAndClient     *Seconds `json:"server_and_client_seconds,omitempty"`
	ServerAndClientFrom string   `json:"server_and_client_from,omitempty"`
	// QueryRTT is a whole query's median round trip, when one was
	// measured: the split's, like the network's medians it is set
	// against. QueryRTTMean is their mean, which a slow tail lifts.
	QueryRTT     *Seconds `json:"query_rtt_seconds,omitempty"`
	QueryRTTMean *Seconds `json:"query_rtt_mean_seconds,omitempty"`
	// Floor is a same-host round trip: the least any network can cost.
	Floor     Seconds `json:"floor_rtt_seconds"`
	FloorFrom string  `json:"floor_rtt_from"`
	// A query and its answer as the application sends them (about: the
	// protocol's framing included, TCP/IP and Ethernet headers not).
	RequestBytes  int64 `json:"request_bytes"`
	ResponseBytes int64 `json:"response_bytes"`
}

// Cases of a chatty plan.
const (
	ChattyNow          = "now"
	ChattyRTT          = "rtt"            // another network round trip (--rtt)
	ChattySameHost     = "same_host"      // the network at the floor: the most a faster one could save
	ChattyOneRoundTrip = "one_round_trip" // one round trip per query instead of --round-trips-per-query
)

// ChattyPlan is `narrows plan chatty`: how long a run of queries sent one
// after another in one session takes, how much of it is the wire, and
// what another network or fewer round trips would make of it.
type ChattyPlan struct {
	Queries            int64         `json:"queries"`
	RoundTripsPerQuery int           `json:"round_trips_per_query"`
	Figures            ChattyFigures `json:"figures"`
	// Cases: now first, then each what-if.
	Cases []ChattyCase `json:"cases"`
	// MostSaved is what the fastest network could save: all of the
	// network's round trips above the floor, never the server's time;
	// MostSavedHigh the same at the network's high bound.
	MostSaved     Seconds  `json:"most_saved_seconds"`
	MostSavedHigh *Seconds `json:"most_saved_high_seconds,omitempty"`
	// Bandwidth is what the link's rate adds to each round trip: the bits
	// of a query and its answer, serialized.
	Bandwidth []ChattyBandwidth `json:"bandwidth"`
	// Reference are the figures of field report 002, theirs, shown for
	// context.
	Reference []ChattyReference `json:"reference"`
	Notes     []string          `json:"notes"`
}

// ChattyCase is the queries' time with one network round trip and one
// number of round trips per query.
type ChattyCase struct {
	Case               string  `json:"case"` // Chatty*
	RTT                Seconds `json:"rtt_seconds"`
	RoundTripsPerQuery int     `json:"round_trips_per_query"`
	PerQuery           Seconds `json:"per_query_seconds"`
	// Wire is the time on round trips: queries × round trips × RTT.
	Wire Seconds `json:"wire_seconds"`
	// ServerAndClient is the rest, absent when not known.
	ServerAndClient  *Seconds `json:"server_and_client_seconds,omitempty"`
	Total            Seconds  `json:"total_seconds"`
	WireShare        float64  `json:"wire_share_ratio"`
	QueriesPerSecond float64  `json:"queries_per_second"` // in one session
	// Saved is now's total less this one's (negative: slower).
	Saved Seconds `json:"saved_seconds"`
	// With the network known between bounds, the totals at each end.
	WireLow   *Seconds `json:"wire_low_seconds,omitempty"`
	WireHigh  *Seconds `json:"wire_high_seconds,omitempty"`
	TotalLow  *Seconds `json:"total_low_seconds,omitempty"`
	TotalHigh *Seconds `json:"total_high_seconds,omitempty"`
}

// ChattyBandwidth is the serialization of one round trip at a link rate.
type ChattyBandwidth struct {
	LinkBitsPerSecond float64 `json:"link_bits_per_second"`
	// RoundTrip is the time a query's and its answer's bits take to
	// send, headers included; Total that for every round trip planned.
	RoundTrip Seconds `json:"serialization_per_round_trip_seconds"`
	Total     Seconds `json:"serialization_seconds"`
}

// ChattyReference is one figure of a field report, as reported.
type ChattyReference struct {
	Link             string  `json:"link"`
	QueriesPerSecond float64 `json:"queries_per_second"`
	PerQuery         Seconds `json:"per_query_seconds"`
	// Total is the plan's queries at that pace.
	Total  Seconds `json:"total_seconds"`
	Source string  `json:"source"`
}
