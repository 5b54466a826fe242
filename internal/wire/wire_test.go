package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/sysinfo"
)

func TestFrameRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		typ  Type
		msg  any
		into any
	}{
		{"hello", THello, Hello{MinVersion: 1, MaxVersion: 1, Role: RoleControl, Nonce: NewNonce()}, &Hello{}},
		{"test", TTest, TestSpec{Kind: KindStream, Direction: Forward, Streams: 4, Duration: 3 * time.Second, Interval: time.Second, Block: 128 << 10}, &TestSpec{}},
		{"disk test", TTest, TestSpec{Kind: KindDisk, Duration: 3 * time.Second, Interval: time.Second, Disk: &DiskSpec{Path: "/backup", Size: 1 << 30,
			Profiles: []string{"log"}, Patterns: []DiskPattern{{Profile: "log", RW: "write", Block: 4096, QD: 1, Threads: 1, Sync: "fdatasync"}}, Engine: "auto", Seed: 1}}, &TestSpec{}},
		{"error", TError, RemoteError{Code: CodeBusy, Message: "busy", RetryAfter: 5 * time.Second}, &RemoteError{}},
		{"empty", TStart, Start{}, &Start{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteFrame(&buf, c.typ, c.msg); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFrame(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if f.Type != c.typ {
				t.Fatalf("type %s, want %s", f.Type, c.typ)
			}
			if c.typ == TError {
				// Decoding an error frame as itself gives the message.
				if err := f.Decode(TError, c.into); err != nil {
					t.Fatal(err)
				}
			} else if err := f.Decode(c.typ, c.into); err != nil {
				t.Fatal(err)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes left over", buf.Len())
			}
		})
	}
}

func TestFrameDecodeErrors(t *testing.T) {
	var buf bytes.Buffer
	WriteFrame(&buf, TError, RemoteError{Code: CodeAuth, Message: "authentication failed"})
	f, _ := ReadFrame(&buf)
	var w Welcome
	err := f.Decode(TWelcome, &w)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeAuth {
		t.Fatalf("error frame decoded as %v, want *RemoteError auth", err)
	}
	buf.Reset()
	WriteFrame(&buf, TStart, Start{})
	f, _ = ReadFrame(&buf)
	if err := f.Decode(TTest, &TestSpec{}); err == nil || !strings.Contains(err.Error(), "expected test frame, got start") {
		t.Fatalf("wrong type: %v", err)
	}
	bad := Frame{Type: TTest, Body: []byte("{not json")}
	if err := bad.Decode(TTest, &TestSpec{}); err == nil || !strings.Contains(err.Error(), "malformed test frame") {
		t.Fatalf("malformed body: %v", err)
	}
}

func TestFrameLimits(t *testing.T) {
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:], MaxFrame+1)
	hdr[4] = byte(THello)
	// A reader that would hand out endless bytes: the decoder must refuse
	// from the header alone, without reading or allocating the body.
	r := io.MultiReader(bytes.NewReader(hdr[:]), neverEnding{})
	if _, err := ReadFrame(r); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized frame: %v, want ErrFrameTooLarge", err)
	}
	if err := WriteFrame(io.Discard, THello, strings.Repeat("x", MaxFrame)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized write: %v", err)
	}
	// A truncated body is an unexpected EOF, not a frame.
	var buf bytes.Buffer
	WriteFrame(&buf, TStart, Start{})
	trunc := buf.Bytes()[:buf.Len()-1]
	if _, err := ReadFrame(bytes.NewReader(trunc)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated: %v", err)
	}
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestMagic(t *testing.T) {
	var buf bytes.Buffer
	WriteMagic(&buf)
	if err := ReadMagic(&buf); err != nil {
		t.Fatal(err)
	}
	if err := ReadMagic(strings.NewReader("GET / HTTP/1.1\r\n")); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("http request: %v", err)
	}
}

func TestAuthProofs(t *testing.T) {
	secret := []byte("0123456789abcdef")
	cn, an := NewNonce(), NewNonce()
	p := Proof(secret, "client", "s1", cn, an)
	cases := []struct {
		name                string
		secret              []byte
		role, session       string
		clientNonce, agentN []byte
		want                bool
	}{
		{"same inputs", secret, "client", "s1", cn, an, true},
		{"wrong secret", []byte("0123456789abcdeX"), "client", "s1", cn, an, false},
		{"agent role cannot replay the client's proof", secret, "agent", "s1", cn, an, false},
		{"other session", secret, "client", "s2", cn, an, false},
		{"other client nonce", secret, "client", "s1", NewNonce(), an, false},
		{"other agent nonce", secret, "client", "s1", cn, NewNonce(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Verify(c.secret, c.role, c.session, c.clientNonce, c.agentN, p); got != c.want {
				t.Fatalf("Verify = %v, want %v", got, c.want)
			}
		})
	}
	if bytes.Equal(NewNonce(), NewNonce()) {
		t.Fatal("two nonces are equal")
	}
}

func TestOverlap(t *testing.T) {
	cases := []struct{ minA, maxA, minB, maxB, want int }{
		{1, 1, 1, 1, 1},
		{1, 3, 2, 5, 3},
		{2, 2, 1, 1, 0},
		{1, 1, 2, 9, 0},
	}
	for _, c := range cases {
		if got := Overlap(c.minA, c.maxA, c.minB, c.maxB); got != c.want {
			t.Errorf("Overlap(%d-%d, %d-%d) = %d, want %d", c.minA, c.maxA, c.minB, c.maxB, got, c.want)
		}
	}
}

// FuzzReadFrame feeds arbitrary bytes to the decoder: it must never panic,
// never return a body over MaxFrame, and decode what it accepts.
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	WriteFrame(&buf, THello, Hello{MinVersion: 1, MaxVersion: 1, Role: RoleControl})
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte("NRWS\x00\x00\x00\x02\x06{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			fr, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(fr.Body) > MaxFrame {
				t.Fatalf("body of %d bytes", len(fr.Body))
			}
			var h Hello
			_ = fr.Decode(THello, &h)
			var s TestSpec
			_ = fr.Decode(TTest, &s)
		}
	})
}

// TestChangesFitOneFrame: a test's report that says what it changed,
// its one slot and every change at its largest, fits in one frame: a
// round trip's coalescing, a stream's steering and offloads (with its
// busiest core). A change never comes with more slots: the agent takes
// TestSpec.Coalesce of a round-trip test only, Steer and Offloads of one
// stream only.
func TestChangesFitOneFrame(t *testing.T) {
	tcp := &sysinfo.TCPInfo{}
	fill(reflect.ValueOf(tcp).Elem())
	one := SlotSample{Slot: math.MaxInt32, TCP: tcp}
	fill(reflect.ValueOf(&one).Elem())
	d := Done{Elapsed: math.MaxInt64, CPU: math.MaxInt64, Reason: string(make([]byte, 256)), Slots: []SlotSample{one}, Cores: largestCores(),
		Coalescing: largestCoalescing(), Steering: largestSteering(), Offloads: largestOffloads()}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxFrame {
		t.Fatalf("%d bytes, more than a frame's %d", len(b), MaxFrame)
	}
	t.Logf("%d bytes of a frame's %d", len(b), MaxFrame)
}

// TestMaxSlotsFitOneFrame: the agent's report for a test with MaxSlots data
// connections, every figure at its largest, fits in one frame; a report the
// agent could not send ended big tests with "connection lost: EOF".
func TestMaxSlotsFitOneFrame(t *testing.T) {
	if MaxSlots < 64 {
		t.Fatalf("MaxSlots %d: too few for a useful test", MaxSlots)
	}
	tcp := &sysinfo.TCPInfo{}
	fill(reflect.ValueOf(tcp).Elem())
	slots := make([]SlotSample, MaxSlots)
	for i := range slots {
		slots[i] = SlotSample{Slot: math.MaxInt32, Bytes: math.MaxInt64, Elapsed: math.MaxInt64, TCP: tcp}
	}
	for _, f := range []struct {
		typ Type
		v   any
	}{
		{TInterval, Interval{Index: math.MaxInt64, Elapsed: math.MaxInt64, Slots: slots, CPU: math.MaxInt64}},
		{TDone, Done{Slots: slots, Elapsed: math.MaxInt64, CPU: math.MaxInt64, Reason: strings.Repeat("x", 256),
			Cores: largestCores()}},
	} {
		if err := WriteFrame(io.Discard, f.typ, f.v); err != nil {
			t.Errorf("%s with %d slots: %v", f.typ, MaxSlots, err)
		}
	}
	if err := WriteFrame(io.Discard, TDone, Done{Slots: append(slots, slots...)}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("twice MaxSlots fits one frame (%v): MaxSlots is needlessly low", err)
	}
}

// fillAll sets every number in v to its largest value, every string to n
// bytes and every pointer to a value filled the same way, recursively.
func fillAll(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fillAll(v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.String:
		v.SetString(strings.Repeat("x", n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(math.MaxInt64 >> (64 - v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(math.MaxUint64 >> (64 - v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(-math.MaxFloat64)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// TestDiskFramesFit: a disk test's account, MaxDiskPatterns patterns with
// every figure at its largest and every latency split there, a path of
// MaxDiskPath bytes, and the error that cut a pattern short naming that
// path twice, fits one frame, as does what the agent says when it
// accepts the test.
func TestDiskFramesFit(t *testing.T) {
	var p result.DiskPattern
	fillAll(reflect.ValueOf(&p).Elem(), 64) // names, profiles, sync modes
	sum := &result.Disk{}
	fillAll(reflect.ValueOf(sum).Elem(), 256) // filesystem, engine and O_DIRECT notes
	sum.Path = strings.Repeat("x", MaxDiskPath)
	sum.Config.Profiles = []string{"backup", "backup", "backup", "custom"}
	sum.Patterns = make([]result.DiskPattern, MaxDiskPatterns)
	for i := range sum.Patterns {
		sum.Patterns[i] = p
	}
	sum.Patterns[MaxDiskPatterns-1].Stopped = strings.Repeat("x", 2*MaxDiskPath+256) // a run stops at its first error
	done := Done{Elapsed: math.MaxInt64, CPU: math.MaxInt64, Reason: strings.Repeat("x", 512), Code: CodeRefused, Disk: sum}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, TDone, done); err != nil {
		t.Errorf("a disk test's Done with %d patterns: %v", MaxDiskPatterns, err)
	}
	t.Logf("the largest disk Done: %d bytes of %d", buf.Len(), MaxFrame)
	acc := Accepted{TestID: "0123456789abcdef", Disk: &DiskAccepted{Target: sum, File: strings.Repeat("x", MaxDiskPath+32),
		Notes: []string{strings.Repeat("x", 2*MaxDiskPath), strings.Repeat("x", 256), strings.Repeat("x", 256), strings.Repeat("x", 4096)}}}
	if err := WriteFrame(io.Discard, TAccepted, acc); err != nil {
		t.Errorf("a disk test's Accepted: %v", err)
	}
}

// TestDiskBuffers: a disk test holds its largest pattern's buffers (block
// × queue depth × threads) or the layout's MiB; figures a peer sent that
// would overflow saturate rather than wrap below a limit.
func TestDiskBuffers(t *testing.T) {
	spec := func(ps ...DiskPattern) TestSpec { return TestSpec{Kind: KindDisk, Disk: &DiskSpec{Patterns: ps}} }
	cases := []struct {
		name string
		spec TestSpec
		want int64
	}{
		{"log: the layout's MiB", spec(DiskPattern{Block: 60 << 10, QD: 1, Threads: 1}), DiskLayoutBuffer},
		{"backup: 1 MiB × 8", spec(DiskPattern{Block: 8 << 10, QD: 32, Threads: 1}, DiskPattern{Block: 1 << 20, QD: 8, Threads: 1}), 8 << 20},
		{"custom threads", spec(DiskPattern{Block: 64 << 20, QD: 256, Threads: 64}), 1 << 40},
		{"overflowing figures", spec(DiskPattern{Block: math.MaxInt64 / 2, QD: 4, Threads: 1}), math.MaxInt64},
		{"no spec", TestSpec{Kind: KindDisk}, DiskLayoutBuffer},
	}
	for _, c := range cases {
		if got := c.spec.Buffers(); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
	if n := spec().DataConns(); n != 0 {
		t.Errorf("a disk test asks for %d data connections", n)
	}
}
