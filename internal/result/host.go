package result

// Host is `narrows host`: what each end's own machine adds to a round
// trip, measured by experiment on that machine (host.go). Today: CPUs
// waking from idle. Here is this host; Agent is the agent's, nil when the
// run had no agent (or the agent cannot measure it: AgentMissing says why).
type Host struct {
	Here         *HostSide `json:"here"`
	Agent        *HostSide `json:"agent,omitempty"`
	AgentMissing string    `json:"agent_missing,omitempty"`
	// SameHost: the agent answered on this host's own address (loopback),
	// so the two sides are one machine and are counted once.
	SameHost bool `json:"same_host,omitempty"`
	// Coalescing is --try-coalescing's experiment on the agent's NIC
	// (net rr's), when asked for.
	Coalescing *CoalescingTry `json:"coalescing_try,omitempty"`
	// Database says what this host's experiment timed when it was given a
	// database (--dsn): its own queries in place of narrows' pair.
	Database *HostDatabase `json:"database,omitempty"`
	// Job says what this host's experiment timed when it was given the
	// operator's own job (narrows host -- COMMAND): the whole job, run
	// again and again.
	Job *HostJob `json:"job,omitempty"`
	// Queries is the report the arithmetic is for (--queries); with a
	// job, how many queries the job issues (0: not said).
	Queries int64  `json:"queries"`
	Stopped string `json:"stopped,omitempty"`
}

// HostDatabase is the database whose queries this host's wake-up
// experiment timed: one query after another on one session, sent and read
// in the engine's own protocol by one thread (as libpq and the C MySQL
// client do), with this host's CPUs as they are and kept awake. The
// Wakeup's PerWake is half a query's difference, as the pair's is of a
// round trip; the whole difference is what this host's CPUs add to each
// query, both ends' wake-ups when the server is on this host (Local),
// the client's alone when it is not.
type HostDatabase struct {
	Engine string `json:"engine"` // PostgreSQL, MySQL
	Server string `json:"server"` // host:port
	Query  string `json:"query"`
	Local  bool   `json:"local"`
}

// HostJob is the operator's own job whose runs this host's experiment
// timed, whole, with this host's CPUs as they are and kept awake: each
// block's one round trip is a run of the job, and the Wakeup's PerWake
// half the job's difference, as a query's is. Only the program's name is
// kept: its command line may carry a password.
type HostJob struct {
	Program string `json:"program"`
}

// HostSide is one machine: its power settings as the OS tells them, and
// the wake-up experiment run on it.
type HostSide struct {
	Power  *Power  `json:"power,omitempty"`
	Wakeup *Wakeup `json:"wakeup,omitempty"`
}

// Power is what decides how deeply an idle CPU sleeps and how fast it
// wakes, as the OS tells it (empty where it does not).
type Power struct {
	// OS is the host's (linux, windows, darwin): what to change follows
	// it, whatever else could be read.
	OS string `json:"os"`
	// Missing says what could not be read, and why.
	Missing []string `json:"missing,omitempty"`
	// Hypervisor is the virtual machine's host ("KVM", "Hyper-V", "VMware",
	// "Xen"), "" on bare metal or where it cannot be told.
	Hypervisor string `json:"hypervisor,omitempty"`
	// IdleDriver and IdleGovernor are Linux's cpuidle driver and governor
	// ("none": an idle CPU simply halts, and no latency request is read).
	IdleDriver   string      `json:"idle_driver,omitempty"`
	IdleGovernor string      `json:"idle_governor,omitempty"`
	IdleStates   []IdleState `json:"idle_states,omitempty"`
	// FreqGovernor is cpufreq's scaling governor (performance, powersave,
	// schedutil...), "" where the OS does not scale the frequency (most VMs).
	FreqGovernor string `json:"freq_governor,omitempty"`
	// HaltPoll are the haltpoll cpuidle driver's parameters (guest halt
	// polling: guest_halt_poll_ns 0 means it is off).
	HaltPoll map[string]string `json:"haltpoll,omitempty"`
	// LatencyRequestMicros is the CPU latency every CPU is held to by the
	// requests open now (/dev/cpu_dma_latency; tuned's latency-performance
	// holds 1 or 0); -1: none is held; nil: not readable.
	LatencyRequestMicros *int64 `json:"latency_request_us,omitempty"`
	// Scheme is Windows' active power scheme ("High performance",
	// "Balanced", "Power saver", or its GUID).
	Scheme     string `json:"power_scheme,omitempty"`
	SchemeGUID string `json:"power_scheme_guid,omitempty"`
}

// IdleState is one cpuidle state of CPU 0.
type IdleState struct {
	Name            string `json:"name"`
	ExitLatencyUsec int64  `json:"exit_latency_us"`
	Disabled        bool   `json:"disabled,omitempty"`
}

// Wakeup is the experiment: two threads on two CPUs answer each other
// over a loopback TCP connection, one message outstanding, blocking in
// the kernel as a database's client and server do, in short blocks that
// alternate between the CPUs as they are and the CPUs kept awake (How).
type Wakeup struct {
	// How kept the CPUs awake ("cpu_dma_latency 0", "idle-priority
	// spinning threads"); Cannot says why they could not be (then only
	// as-is blocks ran, and nothing is judged).
	How    string `json:"how,omitempty"`
	Cannot string `json:"cannot,omitempty"`
	// Blocks are the alternating blocks in the order they ran.
	Blocks []WakeupBlock `json:"blocks,omitempty"`
	// AsIs and Awake are the mean time per round trip over each kind of
	// block counted (seconds).
	AsIs  Seconds `json:"as_is_trip_seconds,omitempty"`
	Awake Seconds `json:"awake_trip_seconds,omitempty"`
	// PerWake is what one wake-up of an idle CPU costs here: half the
	// difference per round trip (a round trip wakes each thread once),
	// with the half-width of its 95% confidence interval.
	PerWake       Seconds `json:"per_wake_seconds"`
	PerWakeMargin Seconds `json:"per_wake_margin_seconds"`
	// Verdict is WakeupCosts, WakeupFree or WakeupUnjudged.
	Verdict string `json:"verdict"`
	// Why is what left a run that ran unjudged (its difference within
	// noise, or an interruption), in words; Cannot says it of one that
	// could not run.
	Why string `json:"why,omitempty"`
}

// How the CPUs were kept awake, in Wakeup.How: the advice follows it
// (the request works where tuned's profile would; spinning is what only
// idle=poll gives every program).
const (
	HowLatencyRequest = "cpu_dma_latency 0"
	HowSpinners       = "idle-priority spinning threads"
)

// WakeupBlock is one block: its kind, round trips and their mean.
type WakeupBlock struct {
	Awake      bool    `json:"awake"`
	RoundTrips int64   `json:"round_trips"`
	Mean       Seconds `json:"mean_seconds"`
	// Settling marks a block as is that ran nearer the awake pace than
	// the machine's own: still under the after-effect of the block awake
	// before it, it measured the experiment, not the machine, and its
	// pair is not counted.
	Settling bool `json:"settling,omitempty"`
	// Disturbed marks a block awake that ran nearer the pace as is than
	// the awake one: something else held the CPUs, and its pair is not
	// counted.
	Disturbed bool `json:"disturbed,omitempty"`
	// Others is the share of all the machine's CPU time, while the block
	// measured, that went to work other than narrows (absent where it
	// could not be read): a machine busy with other work is not judged.
	Others *float64 `json:"others_cpu_share,omitempty"`
}

// The wake-up verdicts.
const (
	WakeupCosts    = "costs"    // significantly slower as is, by more than the floor
	WakeupFree     = "free"     // the difference is shown to be within the floor
	WakeupUnjudged = "unjudged" // neither, within the budget; or it could not run
)
