package result

// Step outcomes in a doctor run.
const (
	StepRan     = "ran"
	StepSkipped = "skipped" // it did not apply: Why says what would make it run
	StepFailed  = "failed"  // it ran and failed: Why says why; what it measured is still in Report
)

// Doctor is the summary of `narrows doctor`: every step it ran, each
// with the summary record (and the interval records) its own command
// would have written, and the verdicts of them all, most severe first.
type Doctor struct {
	// Budget is the time the steps share (--budget); Elapsed what they
	// took.
	Budget  Seconds      `json:"budget_seconds"`
	Elapsed Seconds      `json:"elapsed_seconds"`
	Steps   []DoctorStep `json:"steps"`
	// Verdicts are the findings of every step that matter, most severe
	// first: what the terminal and the report show first.
	Verdicts []Finding `json:"verdicts"`
}

// DoctorStep is one probe or plan of a doctor run.
type DoctorStep struct {
	// Name is the registry's key, e.g. "net stream", "disk local",
	// "plan backup"; Area groups steps in the report: "network",
	// "storage", "database", "replication", "backup".
	Name   string `json:"name"`
	Area   string `json:"area"`
	Status string `json:"status"` // StepRan, StepSkipped, StepFailed
	Why    string `json:"why,omitempty"`
	// Elapsed is the step's wall time; Budget what it was given.
	Elapsed Seconds `json:"elapsed_seconds"`
	Budget  Seconds `json:"budget_seconds,omitempty"`
	// Report is the step's summary, as its own command writes it (with
	// its findings); nil when skipped.
	Report *Report `json:"report,omitempty"`
	// Intervals are the step's interval records, for the report's charts
	// and for compare's statistics.
	Intervals []Interval `json:"intervals,omitempty"`
}

// Tally counts the steps by outcome: ran (and ended well), failed (ran,
// and failed) and skipped (never ran: not applicable, out of budget, or
// interrupted).
func (d *Doctor) Tally() (ran, failed, skipped int) {
	for _, s := range d.Steps {
		switch s.Status {
		case StepRan:
			ran++
		case StepFailed:
			failed++
		default:
			skipped++
		}
	}
	return ran, failed, skipped
}
