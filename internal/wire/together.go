package wire

// A fleet's hosts start a test together: the client learns each agent's
// clock by probes between tests (TClock, as NTP does over one round
// trip: the probe of the shortest round trip bounds the offset best),
// asks each for a held test (TestSpec.Hold), and once every agent has
// prepared (StageReady) sends each a TGo naming one instant in that
// agent's own clock. Each Done says when its agent began (Done.Started),
// so the start skew is measured, not assumed.

// CapTogether is announced by an agent that answers clock probes and
// holds a prepared far-side test for a Go.
const CapTogether = "together"

// Clock is a clock probe and its answer, in wall-clock nanoseconds
// since 1970: Client is the client's when it sent the probe (echoed
// back), Agent the agent's when it answered.
type Clock struct {
	Client int64 `json:"client_unix_ns"`
	Agent  int64 `json:"agent_unix_ns,omitempty"`
}

// MaxClockProbes bounds the clock probes one session may send: enough to
// find a short round trip many times over, and no way to keep a session
// busy without a test.
const MaxClockProbes = 64

// Go starts a held test's measuring at At, the agent's wall clock in
// nanoseconds since 1970 (at once when At has passed).
type Go struct {
	At int64 `json:"at_unix_ns"`
}

// StageReady: a held far-side test has prepared and waits for its Go.
const StageReady = "ready"
