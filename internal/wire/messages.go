package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/narrows/narrows/internal/result"
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
	// Software was the agent's release, told to anyone who connected: a
	// scanner learnt which known bugs to try. An agent tells it in its
	// Welcome now, after the client's proof; this is read only from an
	// older agent, which still sends it here.
	Software string `json:"software,omitempty"`
}

// Auth carries the client's proof.
type Auth struct {
	MAC []byte `json:"mac,omitempty"`
}

// Welcome carries the agent's own proof and its limits.
type Welcome struct {
	MAC    []byte `json:"mac,omitempty"`
	Limits Limits `json:"limits"`
	// Facts are the agent's host and the interface its route back to the
	// client leaves by, so a report names both ends without another round
	// trip; nil from an agent before them.
	Facts *result.Facts `json:"facts,omitempty"`
	// Software is the agent's release (narrows' version), told only to a
	// client that proved it holds the secret; "" from an older agent,
	// which told it in its Challenge.
	Software string `json:"software,omitempty"`
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
	// DiskPaths are the directories the agent's operator allows disk tests
	// in (its --disk-path, as given, made absolute): a client that holds
	// the secret may see them, and names one, or a directory inside one,
	// as DiskSpec.Path. None: the agent runs no disk tests.
	DiskPaths []string `json:"disk_paths,omitempty"`
	// MaxDiskSize is the largest test file a disk test may ask for (its
	// --max-disk-size); 0 from an agent without disk tests.
	MaxDiskSize int64 `json:"max_disk_size_bytes,omitempty"`
	// AllowTry says the agent's operator allows a test to change its
	// settings for the test's length and put them back (its
	// --allow-try): TestSpec.Steer, TestSpec.Coalesce, TestSpec.Offloads.
	// False from an older agent.
	AllowTry bool `json:"allow_try,omitempty"`
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
	// CodeRefused: a far-side test cannot run where it was asked (no
	// space, a read-only filesystem, no permission, no such directory);
	// the message says what to change.
	CodeRefused = "refused"
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
	// KindDisk is a far-side test: the agent runs `narrows disk` patterns
	// on its own storage (TestSpec.Disk), with no data connections; its
	// Interval frames carry the probe's records and its Done the result.
	KindDisk = "disk"
	// KindCPU is a far-side test: the agent measures compression and
	// decompression per core on its own CPUs (TestSpec.CPU), with no data
	// connections; its Done carries the result.
	KindCPU = "cpu"
	// KindCommit is synchronous log shipping, emulated (TestSpec.Commit):
	// the client sends log blocks of TestSpec.Block on one data connection
	// (SlotLog); the agent writes each to a file of its own in a directory
	// its operator allowed and acknowledges it at CommitSpec.Ack. It is a
	// far-side test with a data connection: its Done carries the agent's
	// part (Done.Commit).
	KindCommit = "commit"
	// KindHost is a far-side test: the agent runs `narrows host`'s
	// experiments on its own machine (the CPU wake-up experiment, for up
	// to Duration) and reads its power settings, with no data
	// connections; its Done carries its side (Done.Host).
	KindHost = "host"

	Forward = "forward" // client sends, agent receives
	Reverse = "reverse" // agent sends
	Bidir   = "bidir"
)

// KindCapability is how an agent announces, in its Challenge, a far-side
// test kind it runs. An agent from before far-side tests announces none
// (and refuses such a kind as unknown): a client checks first, and says
// in words that the agent needs an upgrade.
func KindCapability(kind string) string { return "kind:" + kind }

// Has says whether the agent announced capability c.
func (ch Challenge) Has(c string) bool {
	for _, x := range ch.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

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
	// Disk is a KindDisk test; Duration is then each pattern's.
	Disk *DiskSpec `json:"disk,omitempty"`
	// CPU is a KindCPU test; Duration is then each codec's, each way.
	CPU *CPUSpec `json:"cpu,omitempty"`
	// Commit is a KindCommit test; Block is the log block.
	Commit *CommitSpec `json:"commit,omitempty"`
	// Steer asks the agent, receiving one stream (forward), to move the
	// protocol work of the packets it receives off a core for the test,
	// and put it back after (`net stream --try-rps`); only an agent whose
	// operator allows it (Limits.AllowTry) runs such a test.
	Steer *SteerSpec `json:"steer,omitempty"`
	// Coalesce asks the agent, answering round trips (KindRR), to turn
	// the receive interrupt coalescing of its interface toward the client
	// to its least for the test, and put it back after (`net rr
	// --try-coalescing`); only an agent whose operator allows it
	// (Limits.AllowTry) runs such a test, and one from before it answers
	// with no Done.Coalescing.
	Coalesce bool `json:"coalesce,omitempty"`
	// Offloads asks the agent, in one stream it sends or receives
	// (forward or reverse), to turn on the offloads its part uses where
	// they are off (result.OffloadsUsed) on its interface toward the
	// client for the test, and turn them off again after (`net stream
	// --try-offloads`); only an agent whose operator allows it
	// (Limits.AllowTry) runs such a test, and one from before it answers
	// with no Done.Offloads.
	Offloads bool `json:"offloads,omitempty"`
	// Hold asks a far-side test to wait, once prepared, for a TGo and to
	// start measuring at its instant: a fleet's hosts start together
	// (CapTogether). The agent waits for the Go no longer than its
	// --max-duration.
	Hold bool `json:"hold,omitempty"`
}

// SteerSpec is the core whose receive work a stream test moves (RPS) to
// the machine's other cores: the agent's busiest in the run before.
type SteerSpec struct {
	OffCore int `json:"off_core"`
}

// CommitSpec is a commit test: the client keeps up to InFlight log
// blocks unacknowledged; the agent acknowledges each at Ack (one of
// result.AckReceive, AckWrite, AckFlush), writing them to a log file of
// Size bytes in Path, round and round, as a log is written.
type CommitSpec struct {
	Ack      string `json:"ack"`
	Flush    string `json:"flush,omitempty"` // with AckFlush: result.FlushFdatasync or FlushDsync
	InFlight int    `json:"in_flight"`
	// Path is a directory on the agent, as DiskSpec.Path; none with
	// AckReceive, which writes nothing.
	Path string `json:"path,omitempty"`
	Size int64  `json:"size_bytes,omitempty"`
}

// Bounds on a commit test: the log block (a PostgreSQL WAL page is 8
// KiB, SQL Server's log blocks 512 B to 60 KiB), the blocks in flight,
// and the smallest log file (written in whole MiB).
const (
	MinCommitBlock    = 512
	MaxCommitBlock    = 1 << 20
	MaxCommitInFlight = 1024
	MinCommitFile     = 1 << 20
)

// CPUSpec asks the agent to measure codecs on the synthetic corpus of
// database pages (internal/probe/compress): the same seed and size give
// the same bytes on both ends.
type CPUSpec struct {
	Codecs      []string `json:"codecs"`
	SampleBytes int64    `json:"sample_bytes"`
	Seed        uint64   `json:"seed"`
}

// MaxCPUSample is the largest synthetic sample an agent generates.
const MaxCPUSample = 64 << 20

// DiskSpec is a disk test: patterns of `narrows disk`, each run for
// TestSpec.Duration, on a test file the agent creates in Path.
type DiskSpec struct {
	// Path is a directory on the agent: one of Limits.DiskPaths or a
	// directory inside one, absolute, without "..", and no symbolic link
	// on the way may lead outside them.
	Path     string        `json:"path"`
	Size     int64         `json:"size_bytes"`
	Profiles []string      `json:"profiles"` // for the record: what was asked for
	Patterns []DiskPattern `json:"patterns"` // what runs, in turn
	Buffered bool          `json:"buffered,omitempty"`
	Engine   string        `json:"engine"` // auto, io_uring or portable
	Seed     uint64        `json:"seed"`
	// Histograms asks for each pattern's latency histogram in Done.Disk
	// (a fleet's run).
	Histograms bool `json:"histograms,omitempty"`
}

// DiskPattern is one pattern's shape, as probe/disk.Pattern.
type DiskPattern struct {
	Profile     string `json:"profile"`
	RW          string `json:"rw"`
	ReadPercent int    `json:"read_percent,omitempty"`
	Block       int64  `json:"block_bytes"`
	QD          int    `json:"queue_depth"`
	Threads     int    `json:"threads"`
	Sync        string `json:"sync"`
}

// Bounds on a disk test that keep its messages within a frame: the most
// patterns (every profile and a custom one is 15), and the longest path.
const (
	MaxDiskPatterns = 16
	MaxDiskPath     = 1024
)

// DiskLayoutBuffer is what the disk probe holds while it lays its test
// file out: one write of 1 MiB (probe/disk's layoutChunk).
const DiskLayoutBuffer = 1 << 20

// DiskAccepted is what a client learns of a disk test once the agent has
// created its test file, before Start.
type DiskAccepted struct {
	// Target is where and how it measures (the directory with symbolic
	// links resolved, the filesystem, the file's size, the engine, direct
	// I/O or not), without patterns yet.
	Target *result.Disk `json:"target"`
	// File is the test file's name where it has one (not on Linux).
	File string `json:"file,omitempty"`
	// Notes are one-line notices for the person (what fell back to what,
	// where a symbolic link led, stale files left by killed runs).
	Notes []string `json:"notes,omitempty"`
}

// Slot roles, from the agent's side of the data connection.
const (
	SlotSink   = "sink"   // agent reads and counts
	SlotSource = "source" // agent writes
	SlotEcho   = "echo"   // agent answers each request
	SlotLog    = "log"    // agent reads log blocks, writes them, acknowledges each (KindCommit)
)

// Slot is one data connection the client must open.
type Slot struct {
	ID    int    `json:"id"`
	Role  string `json:"role"`
	Token []byte `json:"token"`
}

// Accepted answers a TestSpec.
type Accepted struct {
	TestID string        `json:"test_id"`
	Slots  []Slot        `json:"slots"`
	Disk   *DiskAccepted `json:"disk,omitempty"`
	// TCPBuffers are the agent's TCP buffer maxima, sent with a stream
	// test's Accepted (added in 0.1: an older agent leaves it out, an
	// older client ignores it; the protocol version is unchanged).
	TCPBuffers *sysinfo.TCPBuffers `json:"tcp_buffers,omitempty"`
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
	// A far-side test's frames: Record is one interval record as its
	// probe emitted it; a frame with Stage and no Record says the test is
	// still preparing (StagePrepare), sent every interval so that the
	// client's deadline holds.
	Stage  string           `json:"stage,omitempty"`
	Record *result.Interval `json:"record,omitempty"`
}

// StagePrepare: a far-side test is getting ready to measure (a disk test
// writes its file out); StageRun: it is measuring and has nothing to
// report yet (a cpu test reports at its end).
const (
	StagePrepare = "prepare"
	StageRun     = "run"
)

// Done is the agent's final account of a test.
type Done struct {
	Slots   []SlotSample  `json:"slots"`
	Elapsed time.Duration `json:"elapsed_ns"`
	CPU     time.Duration `json:"cpu_ns"`
	Reason  string        `json:"reason,omitempty"` // why it ended early, if it did
	// Code classifies Reason where a person can act on it (CodeRefused).
	Code string `json:"code,omitempty"`
	// Disk is a disk test's result, partial when it ended early.
	Disk *result.Disk `json:"disk,omitempty"`
	// Compression is a cpu test's result.
	Compression *result.Compression `json:"compression,omitempty"`
	// Commit is the agent's part of a commit test: the blocks it
	// acknowledged, its write and flush times, its flushes, its file.
	Commit *result.Commit `json:"commit,omitempty"`
	// Host is a host test's result: the agent's machine.
	Host *result.HostSide `json:"host,omitempty"`
	// Cores is how the agent's machine's cores spent a stream test (its
	// busiest core, split): the receiving end's packet work shows there.
	Cores *result.CoreLoad `json:"cores,omitempty"`
	// Steering is what a steered stream test changed on the agent and
	// whether it was put back (TestSpec.Steer).
	Steering *result.Steering `json:"steering,omitempty"`
	// Coalescing is what a round-trip test changed of the agent's
	// interrupt coalescing and whether it was put back (TestSpec.Coalesce).
	Coalescing *result.CoalescingChange `json:"coalescing,omitempty"`
	// Offloads is what a stream test turned on of the agent's offloads
	// and whether they were turned off again (TestSpec.Offloads).
	Offloads *result.OffloadChange `json:"offloads,omitempty"`
	// Started is when a held test began measuring, the agent's wall clock
	// in nanoseconds since 1970 (TestSpec.Hold).
	Started int64 `json:"started_unix_ns,omitempty"`
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
	// A stream's Done; one that says what the test changed (Steering,
	// Offloads, a round trip's Coalescing) comes with its one slot
	// (TestChangesFitOneFrame).
	env := Done{Elapsed: math.MaxInt64, CPU: math.MaxInt64, Reason: string(make([]byte, 256)), Slots: []SlotSample{}, Cores: largestCores()}
	rest, err2 := json.Marshal(env)
	if err1 != nil || err2 != nil {
		panic("wire: cannot size a report")
	}
	return (MaxFrame - len(rest)) / (len(sample) + 1)
}

// largestCores is a stream's busiest core at its longest in JSON: every
// number at its widest, every name at the longest the client takes,
// each byte escaped.
func largestCores() *result.CoreLoad {
	name := string(make([]byte, 64))
	c := &result.CoreLoad{OS: "windows", Cores: math.MaxInt64, Core: math.MaxInt64, Busy: -math.MaxFloat64, User: -math.MaxFloat64, System: -math.MaxFloat64,
		IRQ: -math.MaxFloat64, SoftIRQ: -math.MaxFloat64, Steal: -math.MaxFloat64, OthersBusy: -math.MaxFloat64, NIC: name,
		NUMA: &result.CoreNUMA{Nodes: math.MinInt64, CoreNode: math.MinInt64, NICNode: math.MinInt64}, MHz: -math.MaxFloat64}
	for range result.MaxCoreIRQs {
		c.NICInterrupts = append(c.NICInterrupts, result.CoreIRQ{IRQ: math.MaxInt64, Name: name, PerSecond: -math.MaxFloat64})
	}
	return c
}

// MaxSteeringText bounds each of a Steering's strings in Done (its
// error, CPU list and masks): an agent shortens longer ones.
const MaxSteeringText = 512

func largestSteering() *result.Steering {
	t := string(make([]byte, MaxSteeringText))
	return &result.Steering{End: result.EndAgent, Error: t, Interface: t, Queues: math.MaxInt64, OffCore: math.MaxInt64,
		CPUs: t, Mask: t, Before: t, Restored: true}
}

// largestCoalescing is a coalescing change at its longest in JSON.
func largestCoalescing() *result.CoalescingChange {
	t := string(make([]byte, MaxSteeringText))
	m := map[string]int64{}
	for _, f := range result.CoalescingFields {
		m[f] = math.MaxUint32
	}
	return &result.CoalescingChange{End: result.EndAgent, Interface: t, Before: m, Set: m, Restored: true, Error: t}
}

// largestOffloads is an offloads change at its longest in JSON.
func largestOffloads() *result.OffloadChange {
	t := string(make([]byte, MaxSteeringText))
	return &result.OffloadChange{End: result.EndAgent, Role: result.RoleReceiving, Interface: t,
		On: append(slices.Clone(result.OffloadsUsed[result.RoleSending]), result.OffloadsUsed[result.RoleReceiving]...), Restored: true, Error: t}
}

// fill sets every integer field of the struct v to its largest value.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInt() && f.CanSet() {
			f.SetInt(math.MaxInt64 >> (64 - f.Type().Bits()))
		}
	}
}

// DataConns is how many data connections a test asks for (none for a
// far-side test).
func (t TestSpec) DataConns() int {
	switch t.Kind {
	case KindRR, KindCommit:
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
// round-trip test. A disk test runs its patterns one after another, each
// holding block × queue depth × threads (either engine), and lays its
// file out with DiskLayoutBuffer: it holds the largest of those. A
// commit test holds one block to acknowledge on receipt; to write, a
// block per block in flight (it writes from them), after laying its file
// out with DiskLayoutBuffer.
func (t TestSpec) Buffers() int64 {
	switch t.Kind {
	case KindCommit:
		if t.Commit == nil || t.Commit.Ack == result.AckReceive {
			return max(t.Block, 0)
		}
		return max(mulSat(t.Block, int64(t.Commit.InFlight)), DiskLayoutBuffer)
	case KindDisk:
		n := int64(DiskLayoutBuffer)
		if t.Disk != nil {
			for _, p := range t.Disk.Patterns {
				n = max(n, mulSat(p.Block, int64(p.QD), int64(p.Threads)))
			}
		}
		return n
	case KindCPU:
		// The sample, and each codec's window and buffers (zstd's and
		// gzip's are a few MiB).
		if t.CPU == nil {
			return 0
		}
		return t.CPU.SampleBytes + 16<<20
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

// mulSat multiplies sizes and counts a peer sent, saturating instead of
// wrapping, so that no product of huge figures passes a limit as small.
func mulSat(xs ...int64) int64 {
	n := int64(1)
	for _, x := range xs {
		if x <= 0 {
			return 0
		}
		if n > math.MaxInt64/x {
			return math.MaxInt64
		}
		n *= x
	}
	return n
}
