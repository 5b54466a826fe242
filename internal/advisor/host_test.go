package advisor

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

func side(verdict string, perWake time.Duration, how string, p *result.Power) *result.HostSide {
	return &result.HostSide{Power: p, Wakeup: &result.Wakeup{Verdict: verdict, How: how, PerWake: result.Seconds(perWake),
		PerWakeMargin: result.Seconds(perWake / 10), AsIs: result.Seconds(13*time.Microsecond + 2*perWake), Awake: result.Seconds(13 * time.Microsecond),
		Why: "after 4 pairs of blocks the difference is neither clearly above the floor nor below it"}}
}

// TestHostFindings: the cost is said where an end showed it, summed over
// the ends a round trip wakes (twice for one machine), and the remedy is
// the one its OS honours; nothing is said absent unless every end showed
// it absent; an end that could not be judged says so, and why.
func TestHostFindings(t *testing.T) {
	haltpoll := &result.Power{OS: "linux", Hypervisor: "KVM", IdleDriver: "haltpoll"}
	win := &result.Power{OS: "windows", Scheme: "Balanced", SchemeGUID: "381b4222-f694-41f0-9685-ff5bb260df2e"}
	for _, tc := range []struct {
		name        string
		h           result.Host
		want        string
		perTrip     time.Duration
		words, nots []string
	}{
		{name: "both ends cost", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Agent: side(result.WakeupCosts, 25*time.Microsecond, result.HowSpinners, win)},
			want: "host.cpu_wakeups", perTrip: 45 * time.Microsecond,
			words: []string{"45.0 µs to each round trip", "0.23 s more", "tuned-adm profile latency-performance", "powercfg /setactive SCHEME_MIN", "KVM",
				"with the least work after each", "pay more than this (narrows host --dsn times the database's own queries; narrows host -- COMMAND, your own job run whole"}},
		{name: "one machine, both ends", h: result.Host{Queries: 1000, SameHost: true, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowLatencyRequest, haltpoll)},
			want: "host.cpu_wakeups", perTrip: 40 * time.Microsecond, words: []string{"wake twice"}},
		{name: "no cpuidle driver", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowSpinners, &result.Power{OS: "linux", IdleDriver: "none"})},
			want: "host.cpu_wakeups", perTrip: 20 * time.Microsecond, words: []string{"idle=poll", "no agent was asked"}, nots: []string{"tuned-adm"}},
		// Not root: measured with spinners, yet the driver honours the
		// request: the tuned profile is the fix, not idle=poll.
		{name: "a driver, not root", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowSpinners, haltpoll)},
			want: "host.cpu_wakeups", perTrip: 20 * time.Microsecond, words: []string{"tuned-adm profile latency-performance", "narrows was not root"}, nots: []string{"idle=poll"}},
		// Windows whose plan could not be read (Wine): still the power
		// plan's words, never Linux's.
		{name: "windows, plan unread", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowSpinners, &result.Power{OS: "windows"})},
			want: "host.cpu_wakeups", perTrip: 20 * time.Microsecond, words: []string{"powercfg /setactive SCHEME_MIN", "power plan not known"}, nots: []string{"idle=poll", "tuned"}},
		{name: "free at both", h: result.Host{Queries: 5000, Here: side(result.WakeupFree, 0, result.HowLatencyRequest, haltpoll), Agent: side(result.WakeupFree, 0, result.HowLatencyRequest, haltpoll)},
			want: "host.cpu_wakeups_none"},
		{name: "free here, unjudged there", h: result.Host{Queries: 5000, Here: side(result.WakeupFree, 0, result.HowLatencyRequest, haltpoll), Agent: side(result.WakeupUnjudged, 0, "", nil)},
			want: "host.cpu_wakeups_unjudged", words: []string{"agent's host", "neither clearly above"}},
		{name: "could not run here", h: result.Host{Queries: 5000, Here: &result.HostSide{Wakeup: &result.Wakeup{Verdict: result.WakeupUnjudged, Cannot: "one CPU only"}}},
			want: "host.cpu_wakeups_unjudged", words: []string{"one CPU only"}},
		{name: "an old agent", h: result.Host{Queries: 5000, Here: side(result.WakeupFree, 0, result.HowLatencyRequest, haltpoll), AgentMissing: "the agent (narrows 0.1) does not run host experiments: upgrade it"},
			want: "host.cpu_wakeups_unjudged", words: []string{"upgrade it"}},
		{name: "costs here, unjudged there", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 20*time.Microsecond, result.HowLatencyRequest, haltpoll), Agent: side(result.WakeupUnjudged, 0, "", nil)},
			want: "host.cpu_wakeups,host.cpu_wakeups_unjudged", perTrip: 20 * time.Microsecond},
		// The database's own queries (--dsn): a query's whole difference
		// is this host's share, never doubled, whether the server is here
		// (both ends in it) or not (the client's alone).
		{name: "database on this host", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 30*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Database: &result.HostDatabase{Engine: "PostgreSQL", Server: "127.0.0.1:5432", Query: "SELECT 1", Local: true}},
			want: "host.cpu_wakeups", perTrip: 60 * time.Microsecond,
			words: []string{"60.0 µs to each of PostgreSQL's queries", "0.30 s more", "both ends' wake-ups", "SELECT 1 to 127.0.0.1:5432", "60.0 µs a query"},
			nots:  []string{"a wake-up (round trips", "wake twice"}},
		{name: "database elsewhere, its host's agent", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 15*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Agent:    side(result.WakeupCosts, 25*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Database: &result.HostDatabase{Engine: "MySQL", Server: "10.0.0.5:3306", Query: "SELECT 1"}},
			want: "host.cpu_wakeups", perTrip: 55 * time.Microsecond,
			words: []string{"each of MySQL's queries", "this host's share", "the agent's host adds one wake-up of its own"}},
		// The server here and the agent elsewhere (where the session's
		// client is): a query wakes each end once, this host's being half
		// its own queries' difference, not all of it.
		{name: "database on this host, an agent elsewhere", h: result.Host{Queries: 5000, Here: side(result.WakeupCosts, 30*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Agent:    side(result.WakeupCosts, 25*time.Microsecond, result.HowLatencyRequest, haltpoll),
			Database: &result.HostDatabase{Engine: "PostgreSQL", Server: "127.0.0.1:5432", Query: "SELECT 1", Local: true}},
			want: "host.cpu_wakeups", perTrip: 55 * time.Microsecond,
			words: []string{"55.0 µs to each of PostgreSQL's queries", "60.0 µs a query", "a query from the agent's host wakes this host once", "the agent's host 25.0 µs a wake-up",
				"a client that does more for each answer (a driver, an ORM) pays more than this (narrows host -- COMMAND times your own job"},
			nots: []string{"both ends' wake-ups are in"}},
		{name: "database, nothing to gain", h: result.Host{Queries: 5000, Here: side(result.WakeupFree, time.Microsecond, result.HowLatencyRequest, haltpoll),
			Database: &result.HostDatabase{Engine: "PostgreSQL", Server: "127.0.0.1:5432", Query: "SELECT 1", Local: true}},
			want: "host.cpu_wakeups_none", words: []string{"nothing measurable to PostgreSQL's queries", "2.00 µs ± 200 ns a query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := host(&tc.h)
			if got := codes(fs); got != tc.want {
				t.Fatalf("codes %q, want %q", got, tc.want)
			}
			for _, f := range fs {
				if f.Code == "host.cpu_wakeups" {
					if got := time.Duration(f.Values["per_round_trip_seconds"] * 1e9); got != tc.perTrip {
						t.Errorf("per round trip %v, want %v", got, tc.perTrip)
					}
				}
			}
			saysWords(t, fs, tc.words, tc.nots)
			// An unjudged end's summary says why, not only its detail.
			for _, f := range fs {
				if f.Code == "host.cpu_wakeups_unjudged" && (f.Detail == "" || !strings.Contains(f.Summary, strings.TrimSuffix(f.Detail, "."))) {
					t.Errorf("unjudged without its reason in the summary: %q (detail %q)", f.Summary, f.Detail)
				}
			}
		})
	}
}

// TestHostJobFindings: the operator's own job (narrows host -- COMMAND)
// is said in its own terms: what keeping the CPUs awake gave each whole
// run (twice the PerWake, as a query's), a query's share only where
// --queries said how many it issues, and nothing of an agent's host.
func TestHostJobFindings(t *testing.T) {
	haltpoll := &result.Power{OS: "linux", Hypervisor: "KVM", IdleDriver: "haltpoll"}
	job := func(verdict string, asis, awake time.Duration) *result.HostSide {
		w := &result.Wakeup{Verdict: verdict, How: result.HowLatencyRequest, AsIs: result.Seconds(asis), Awake: result.Seconds(awake),
			PerWake: result.Seconds((asis - awake) / 2), PerWakeMargin: result.Seconds(50 * time.Millisecond),
			Why: "the job (pgbench) took 3.2 s as is and 800 ms with the CPUs kept awake: 4 pairs of runs need 42s, more than --duration 34s: give --duration 42s or more, or a shorter job"}
		for range 4 {
			w.Blocks = append(w.Blocks, result.WakeupBlock{RoundTrips: 1, Mean: w.AsIs}, result.WakeupBlock{Awake: true, RoundTrips: 1, Mean: w.Awake})
		}
		return &result.HostSide{Power: haltpoll, Wakeup: w}
	}
	for _, tc := range []struct {
		name        string
		h           result.Host
		want        string
		gain        time.Duration
		words, nots []string
	}{
		{name: "costs, its queries said", h: result.Host{Queries: 50000, Job: &result.HostJob{Program: "pgbench"}, Here: job(result.WakeupCosts, 3200*time.Millisecond, 800*time.Millisecond)},
			want: "host.cpu_wakeups", gain: 2400 * time.Millisecond,
			words: []string{"add 2.40 s to each run of the job (pgbench): 3.20 s as they are, 800 ms with this host's CPUs kept awake (75% of its time): 48.0 µs a query of its 50,000.",
				"run whole 4 times each way", "its server's work after each wake-up", "tuned-adm profile latency-performance", "KVM"},
			nots: []string{"report waits", "each round trip", "a wake-up (round trips", "agent's host"}},
		{name: "costs, its queries not said", h: result.Host{Job: &result.HostJob{Program: "report.sh"}, Here: job(result.WakeupCosts, 3200*time.Millisecond, 800*time.Millisecond)},
			want: "host.cpu_wakeups", gain: 2400 * time.Millisecond,
			words: []string{"add 2.40 s to each run of the job (report.sh)"}, nots: []string{"a query"}},
		{name: "nothing to gain", h: result.Host{Queries: 50000, Job: &result.HostJob{Program: "pgbench"}, Here: job(result.WakeupFree, 810*time.Millisecond, 800*time.Millisecond)},
			want: "host.cpu_wakeups_none", words: []string{"nothing measurable to the job (pgbench)", "810 ms as this host's CPUs are and 800 ms with them kept from deep idle: 10.0 ms ± 100 ms a run"}},
		{name: "too long for the budget", h: result.Host{Job: &result.HostJob{Program: "pgbench"}, Here: job(result.WakeupUnjudged, 3200*time.Millisecond, 800*time.Millisecond)},
			want: "host.cpu_wakeups_unjudged", words: []string{"Cannot judge what waking idle CPUs costs the job (pgbench) on this host", "give --duration 42s or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := host(&tc.h)
			if got := codes(fs); got != tc.want {
				t.Fatalf("codes %q, want %q", got, tc.want)
			}
			for _, f := range fs {
				if f.Code == "host.cpu_wakeups" {
					if got := time.Duration(f.Values["job_seconds"] * 1e9); got != tc.gain {
						t.Errorf("the job's gain %v, want %v", got, tc.gain)
					}
					if _, ok := f.Values["per_query_seconds"]; ok != (tc.h.Queries > 0) {
						t.Errorf("per_query_seconds given %v, want %v (queries %d)", ok, tc.h.Queries > 0, tc.h.Queries)
					}
				}
			}
			saysWords(t, fs, tc.words, tc.nots)
		})
	}
}

// saysWords holds the findings' summaries and details, together, to say
// each of words and none of nots.
func saysWords(t *testing.T, fs []result.Finding, words, nots []string) {
	t.Helper()
	var text string
	for _, f := range fs {
		text += f.Summary + " " + f.Detail + " "
	}
	for _, w := range words {
		if !strings.Contains(text, w) {
			t.Errorf("no %q in:\n%s", w, text)
		}
	}
	for _, w := range nots {
		if strings.Contains(text, w) {
			t.Errorf("%q in:\n%s", w, text)
		}
	}
}
