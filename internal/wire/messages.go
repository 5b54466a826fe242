package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
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
	// MaxDataConns is how many data connections one test may open, all
	// directions together; 0 from an agent that did not announce it.
	MaxDataConns int `json:"max_data_conns,omitempty"`
	// MaxTestMemory is the most buffer memory (TestSpec.Buffers) one test
	// may hold on the agent; 0 from an agent that did not announce it.
	MaxTestMemory int64 `json:"max_test_memory_bytes,omitempty"`
}

// Error codes.
const (
	CodeAuth       = "auth"
	CodeAuthLimit  = "auth_limit" // an address refused after too many failed proofs
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

// MaxSlots is the most data connections one test can have: the agent's
// report of an interval carries one SlotSample per connection, and the
// report must fit in one frame with every figure at its largest.
var MaxSlots = maxSlots()

func maxSlots() int {
	tcp := &sysinfo.TCPInfo{}
	fill(reflect.ValueOf(tcp).Elem())
	one := SlotSample{Slot: math.MaxInt32, TCP: tcp}
	fill(reflect.ValueOf(&one).Elem())
	sample, err1 := json.Marshal(one)
	// Done is the larger envelope; the empty slice's "[]" stands for its brackets.
	env := Done{Elapsed: math.MaxInt64, CPU: math.MaxInt64, Reason: string(make([]byte, 256)), Slots: []SlotSample{}}
	rest, err2 := json.Marshal(env)
	if err1 != nil || err2 != nil {
		panic("wire: cannot size a report")
	}
	return (MaxFrame - len(rest)) / (len(sample) + 1)
}

// fill sets every integer field of the struct v to its largest value.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInt() && f.CanSet() {
			f.SetInt(math.MaxInt64 >> (64 - f.Type().Bits()))
		}
	}
}

// DataConns is how many data connections a test asks for.
func (t TestSpec) DataConns() int {
	switch t.Kind {
	case KindRR:
		return 1
	case KindStream:
		if t.Direction == Bidir {
			return 2 * t.Streams
		}
		return t.Streams
	}
	return 0
}

// SinkBuffer is the read size of the receiving end of a stream of blocks
// of this size: iperf3's 128 KiB at least, large enough that a read is
// rarely the limit, and the block itself up to 4 MiB.
func SinkBuffer(block int64) int64 { return max(128<<10, min(block, 4<<20)) }

// Buffers is the memory an end holds for a test's data: one block that
// every sending connection writes from (its bytes are only read), a read
// buffer per receiving connection, and a request and a response for a
// round-trip test.
func (t TestSpec) Buffers() int64 {
	switch t.Kind {
	case KindRR:
		return t.Request + t.Response
	case KindStream:
		var n int64
		if t.Direction != Forward {
			n += t.Block
		}
		if t.Direction != Reverse {
			n += int64(t.Streams) * SinkBuffer(t.Block)
		}
		return n
	}
	return 0
}
