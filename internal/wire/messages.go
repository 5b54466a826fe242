package wire

import (
	"fmt"
	"time"

	"github.com/narrows/narrows/internal/sysinfo"
)

// The protocol versions this build speaks. A peer whose range does not
// overlap gets a TError with code CodeVersion naming both ranges.
const (
	Version    = 1
	MinVersion = 1
)

// DefaultPort is the agent's TCP port.
const DefaultPort = 7447

// Connection roles, sent in Hello.
const (
	RoleControl = "control"
	RoleData    = "data"
)

// Hello is the first frame on every connection.
type Hello struct {
	MinVersion   int      `json:"min_version"`
	MaxVersion   int      `json:"max_version"`
	Role         string   `json:"role"`
	Capabilities []string `json:"capabilities,omitempty"`
	Nonce        []byte   `json:"nonce,omitempty"` // control: the client's challenge to the agent
	Token        []byte   `json:"token,omitempty"` // data: which accepted slot this connection fills
	Software     string   `json:"software,omitempty"`
}

// Challenge answers a control Hello.
type Challenge struct {
	Version      int      `json:"version"`
	Capabilities []string `json:"capabilities,omitempty"`
	Session      string   `json:"session"`
	Nonce        []byte   `json:"nonce"`
	AuthRequired bool     `json:"auth_required"`
	Software     string   `json:"software,omitempty"`
}

// Auth carries the client's proof.
type Auth struct {
	MAC []byte `json:"mac,omitempty"`
}

// Welcome carries the agent's own proof and its limits.
type Welcome struct {
	MAC    []byte `json:"mac,omitempty"`
	Limits Limits `json:"limits"`
}

// Limits are what an agent allows one client.
type Limits struct {
	MaxTests    int           `json:"max_tests"`
	MaxDuration time.Duration `json:"max_duration_ns"`
	MaxStreams  int           `json:"max_streams"`
	MaxBlock    int64         `json:"max_block_bytes"`
}

// Error codes.
const (
	CodeAuth       = "auth"
	CodeVersion    = "version"
	CodeBusy       = "busy"
	CodeLimit      = "limit"
	CodeBadRequest = "bad_request"
	CodeInternal   = "internal"
)

// RemoteError is a TError frame: the peer's final word before it closes.
type RemoteError struct {
	Code       string        `json:"code"`
	Message    string        `json:"message"`
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	MinVersion int           `json:"min_version,omitempty"`
	MaxVersion int           `json:"max_version,omitempty"`
}

func (e *RemoteError) Error() string { return fmt.Sprintf("agent: %s", e.Message) }

// Test kinds and directions.
const (
	KindStream = "stream"
	KindRR     = "rr"

	Forward = "forward" // client sends, agent receives
	Reverse = "reverse" // agent sends
	Bidir   = "bidir"
)

// TestSpec asks the agent to run one test.
type TestSpec struct {
	Kind      string        `json:"kind"`
	Direction string        `json:"direction,omitempty"`
	Streams   int           `json:"streams,omitempty"` // per direction
	Duration  time.Duration `json:"duration_ns"`
	Interval  time.Duration `json:"interval_ns"`
	Block     int64         `json:"block_bytes,omitempty"`
	Window    int64         `json:"window_bytes,omitempty"`
	Request   int64         `json:"request_bytes,omitempty"`
	Response  int64         `json:"response_bytes,omitempty"`
}

// Slot roles, from the agent's side of the data connection.
const (
	SlotSink   = "sink"   // agent reads and counts
	SlotSource = "source" // agent writes
	SlotEcho   = "echo"   // agent answers each request
)

// Slot is one data connection the client must open.
type Slot struct {
	ID    int    `json:"id"`
	Role  string `json:"role"`
	Token []byte `json:"token"`
}

// Accepted answers a TestSpec.
type Accepted struct {
	TestID string `json:"test_id"`
	Slots  []Slot `json:"slots"`
}

// Start tells the agent all data connections are open.
type Start struct{}

// Stop ends a test early.
type Stop struct {
	Reason string `json:"reason,omitempty"`
}

// Ready answers a data Hello.
type Ready struct {
	Slot int `json:"slot"`
}

// SlotSample is one data connection as the agent saw it at an interval's end.
type SlotSample struct {
	Slot  int   `json:"slot"`
	Bytes int64 `json:"bytes"` // cumulative: read (sink), written (source), round trips (echo)
	// Elapsed is when the slot finished, after Start; zero while it runs.
	Elapsed time.Duration    `json:"elapsed_ns,omitempty"`
	TCP     *sysinfo.TCPInfo `json:"tcp,omitempty"`
}

// Interval is the agent's figures at the end of one interval.
type Interval struct {
	Index   int           `json:"index"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Slots   []SlotSample  `json:"slots"`
	CPU     time.Duration `json:"cpu_ns"` // agent process CPU since Start
}

// Done is the agent's final account of a test.
type Done struct {
	Slots   []SlotSample  `json:"slots"`
	Elapsed time.Duration `json:"elapsed_ns"`
	CPU     time.Duration `json:"cpu_ns"`
	Reason  string        `json:"reason,omitempty"` // why it ended early, if it did
}
