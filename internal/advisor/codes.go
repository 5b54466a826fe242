package advisor

import (
	"slices"

	"github.com/narrows/narrows/internal/result"
)

// Code is a finding code the advisor can emit, with what it claims. The
// list is the vocabulary the verdict matrix holds narrows to (every code
// said where it is true, forbidden where it is false) and the invariant
// checker refuses a code not in it; TestCodesAreEmitted keeps it equal to
// what the source can emit, both ways.
type Code struct {
	Name    string
	Meaning string
}

// Codes lists every finding code, grouped by probe; the dynamic ones
// (repl.<verdict>, plan.replica_<verdict>, plan.replica_link_<verdict>)
// are spelled out, one per verdict.
var Codes = []Code{
	// net stream
	{"stream.single_stream_capacity", "what one stream carried, the figure replication can count on"},
	{"stream.cpu_limited", "one core at one end was saturated: CPU, not the network, set the stream's rate"},
	{"stream.packet_core_limited", "one core at an end had no idle time in the run, much of it handling packets (softirq, DPCs): that core, not the link, set the stream's rate"},
	{"stream.limit_unknown", "the platform gives no TCP_INFO: what limited the stream cannot be told"},
	{"stream.window_limited", "the receive window or send buffer held the stream below the path (window ÷ RTT)"},
	{"stream.loss_limited", "loss on the path held the stream down: retransmits through the steady state, not only slow start's, at a rate a loss-held sender can reach, and N streams faster"},
	{"stream.per_stream_limited", "something caps each connection: more streams carried more though one stream was held by nothing it could see"},
	{"stream.host_limited", "the agent is on this machine: the rate is the host's copying, not a link's"},
	{"stream.link_limited", "nothing in the stream held it back (retransmits only in its start-up, or ones that did not set its rate): the link or a shaper on it set the rate"},
	{"stream.parallel_comparison", "N streams against one: room one stream cannot use, or none"},
	{"stream.rps_helped", "--try-rps: with the receiving end's protocol work moved off the core that did it, single streams carried 1.1× or more than as is, in pairs of runs in turn, beyond their noise: that core's packet work held it"},
	{"stream.rps_no_gain", "--try-rps: with the receiving end's protocol work moved off its busiest core, single streams carried clearly less than 1.1× more (the gain's 95% interval under it): where that work ran did not hold it"},
	{"stream.rps_unjudged", "--try-rps tried, and what it gives could not be told: the pairs of runs differed as much as the gain, or another program changed the steering while the test ran"},
	{"stream.rps_not_tried", "--try-rps could not try (the agent does not allow it, not root, not Linux, no core read) or the steered stream did not finish"},
	{"stream.offloads_helped", "--try-offloads: with the offloads each end's part uses turned on (the sender's tso and gso, the receiver's gro), single streams carried 1.1× or more than as is, in pairs of runs in turn, beyond their noise: handling every packet at the MTU's size held it"},
	{"stream.offloads_no_gain", "--try-offloads: with the offloads turned on, single streams carried clearly less than 1.1× more (the gain's 95% interval under it): their being off did not hold it"},
	{"stream.offloads_unjudged", "--try-offloads tried, and what the offloads give could not be told: the pairs of runs differed as much as the gain, or another program turned one off while the test ran"},
	{"stream.offloads_not_tried", "--try-offloads could not try (the agent does not allow it, not root, not Linux, a driver refuses), had nothing to try (all on), or its stream did not finish"},
	{"stream.wire_overhead", "what the payload rate is on the wire, with the headers and retransmits"},
	// net rr and db ping
	{"rr.wire_time", "what N sequential queries spend on round trips alone"},
	{"rr.tail", "the round trips' p99 is far above their p50: a tail a chatty session feels"},
	{"rr.coalescing_costs", "--try-coalescing: with the agent's receive interrupt coalescing at its least, round trips were faster beyond noise and the floor: what it adds to each"},
	{"rr.coalescing_free", "--try-coalescing: the agent's receive interrupt coalescing adds nothing measurable to a round trip, or is at its least already"},
	{"rr.coalescing_unjudged", "--try-coalescing: the pairs of blocks did not tell a difference from noise, or the change could not be put back"},
	{"rr.coalescing_not_tried", "--try-coalescing could not try: the agent does not allow it, its NIC keeps no coalescing or refuses the change, not root, not Linux"},
	{"rr.under_load_ok", "a load filling the path barely moved the round trips: no deep queue on the path"},
	{"rr.under_load_tail", "under load the median round trip held but the tail grew"},
	{"rr.under_load_unfilled", "the load did not fill the path (no loss, no queue on its own connections): the round trips held, but no queue on the path was tested"},
	{"rr.bufferbloat", "under load a queue builds on the path and every round trip waits behind it"},
	{"rr.self_queue", "the loaded connections' own round trip, against a separate connection's"},
	// net commit
	{"commit.session_rate", "how many synchronous commits one session can make a second over this path"},
	{"commit.log_throughput", "how much log the replica accepted with several blocks in flight"},
	{"commit.split", "how a synchronous commit splits between the replica's storage and the round trip"},
	// net mtu
	{"mtu.black_hole", "full-size packets vanish without an ICMP word back: a path-MTU black hole"},
	{"mtu.nothing_passes", "not even small packets arrive on a test connection"},
	{"mtu.mismatch", "the two ends' interfaces have different MTUs"},
	{"mtu.ok", "full-size packets pass each way tested and the interfaces agree"},
	// host
	{"host.cpu_wakeups", "idle CPUs waking add a measured time to each round trip, at one end or both: shown by experiment (CPUs kept awake against as they are), significant and above the floor"},
	{"host.cpu_wakeups_none", "with the CPUs kept awake the round trips were no faster, within the experiment's margin, at every end measured"},
	{"host.cpu_wakeups_unjudged", "what waking CPUs costs at an end could not be told: the experiment could not run there, or its difference stayed within noise"},
	// disk
	{"disk.cpu_limited", "a CPU limit held narrows off the CPU during some patterns: their figures are the limit's, and nothing is concluded from them"},
	{"disk.memory_backed", "the tested path is on memory (tmpfs): the figures are not a disk's"},
	{"disk.buffered", "measured through the page cache, not straight to the device"},
	{"disk.small_test_file", "the test file is small enough for a controller or SAN cache to serve the reads"},
	{"disk.log_commit_floor", "each commit waits for its log flush: the commits per second that flush allows one session"},
	{"disk.log_tail", "a rare log flush takes far longer than the median"},
	{"disk.log_sync_method", "two ways of flushing the log compared"},
	{"disk.log_flush_fast", "a flush so fast a write cache answered it, not the media"},
	{"disk.custom_pattern", "the figures of a pattern the user asked for"},
	{"disk.data_random_reads", "random page reads, one at a time and many in flight"},
	{"disk.backup_time", "how long reading the data for a backup takes at the measured rate"},
	// db ping, db load, db repl
	{"db.round_trip_time", "what N queries spend on the database's round trips"},
	{"db.tail", "the queries' p99 is far above their p50"},
	{"db.connect_time", "how long opening a session took, by phase"},
	{"db.network_share", "how much of a query's time is the network and how much the server and driver"},
	{"db.connection_lost", "the session to the database was lost during the run: those stretches have no figures"},
	{"load.rate", "the log the load generated, against what was asked"},
	{"load.commit_latency", "what each of the load's commits took, and the commit rate one session allows"},
	{"load.below_target", "the server took less than the asked rate"},
	{"load.table_left", "the scratch table could not be dropped"},
	{"repl." + result.VerdictKeepingUp, "the replica keeps up at its last poll"},
	{"repl." + result.VerdictCatchingUp, "the replica is behind and catching up (or not growing fast enough to call a trend)"},
	{"repl." + result.VerdictSendQueue, "the send queue grows: the sender or the network does not keep up with generation"},
	{"repl." + result.VerdictDisk, "the standby's disk is the bottleneck: received log is not flushed fast enough"},
	{"repl." + result.VerdictReplay, "replay is the bottleneck: received log is not replayed fast enough"},
	{"repl." + result.VerdictSilent, "the replica is silent: its lag is unknown, not 0"},
	{"repl." + result.VerdictUnknown, "no position figures for the replica in the last poll"},
	{"repl.no_replicas", "no replica is connected to this primary, nor was one seen during the run"},
	{"repl.run", "a replica spent time not keeping up during the run, which the last poll does not show"},
	{"repl.connection_lost", "the monitoring session was lost during the run: those stretches have no figures"},
	// fleet disk
	{"fleet.outlier", "a host of the fleet gave far less than the median host (under 60% of its IOPS, or over 3× its p99) while all worked at once"},
	{"fleet.even", "every host of the fleet gave 80-125% of the median host's IOPS in every pattern, all working at once"},
	{"fleet.host_failed", "a host of the fleet gave no figures (unreachable, refused, failed): the others ran without it"},
	{"fleet.knee", "a sweep's knee: the most IOPS the fleet gave, all hosts at once, with its merged latency within the objective (--slo)"},
	{"fleet.slo_missed", "no step of a sweep held the latency objective (--slo) with all hosts at once, not even the shallowest queue"},
	// fleet net
	{"fleetnet.weak_path", "a replica received its streams far below the median replica (under 60%) while this host's link, its rate known, had room: that replica's path is the weak one"},
	{"fleetnet.slow_replica", "a replica received its streams far below the median replica, and whether its path or this host's link held it cannot be told (the link's rate not known, or the link full)"},
	{"fleetnet.nic_limited", "the replicas' streams together used 90% or more of this host's link rate on the wire (a physical NIC's speed, or as given): this host's link, not the paths, was the limit"},
	{"fleetnet.even", "every replica received its streams at 80-125% of the median replica's rate, all at once"},
	// plan backup
	{"plan.backup_largest", "how long the largest backup and restore take and which stage limits each"},
	{"plan.rto_missed", "a restore takes longer than the RTO"},
	{"plan.more_files", "the backup and restore with more files in parallel"},
	{"plan.compression", "the backup and restore with a compression codec"},
	{"plan.backup_cannot_judge", "pg_basebackup compressing on the database server: its time cannot be planned from stages, only its least"},
	// plan chatty
	{"plan.chatty_wire", "how much of a chatty report's time is on the wire now"},
	{"plan.chatty_what_if", "the chatty report at another round-trip time"},
	{"plan.chatty_round_trips", "the chatty report with one round trip per query"},
	{"plan.chatty_most_saved", "the most any move of the app server can save"},
	{"plan.chatty_bandwidth", "more bandwidth cannot help a chatty report"},
	// plan replica
	{"plan.replica_" + result.VerdictKeepsUp, "one stream carries the replica's log at its peak"},
	{"plan.replica_" + result.VerdictFallsBehindAtPeak, "one stream carries the mean but not the peak: the send queue grows during the peak, then catches up"},
	{"plan.replica_" + result.VerdictFallsBehind, "one stream carries less than the mean log rate: the replica never catches up"},
	{"plan.replica_cannot_judge", "the primary wrote too little log while watched (or a rate of 0 was given) to judge a replica by: what to run instead"},
	{"plan.replica_link_" + result.VerdictFallsBehindAtPeak, "the streams together exceed the link at their peak"},
	{"plan.replica_link_" + result.VerdictFallsBehind, "the streams together exceed the link at their mean"},
	{"plan.replica_window", "the window the busiest stream needs at the path's RTT, and the settings that give it"},
	{"plan.replica_log_factor", "the replica plan with a multiple of the log"},
	{"plan.replica_rtt", "the replica plan at another RTT"},
	// plan sync
	{"plan.sync_commit", "what a synchronous replica adds to each commit"},
	{"plan.sync_operation", "what a synchronous replica adds to a large operation"},
	{"plan.sync_flush_disagree", "cannot judge the replica's storage: two measures of its log flush in one run disagree"},
}

// KnownCode reports whether name is one of Codes.
func KnownCode(name string) bool {
	return slices.ContainsFunc(Codes, func(c Code) bool { return c.Name == name })
}
