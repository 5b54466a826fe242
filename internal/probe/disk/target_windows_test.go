package disk

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestEngines: the iocp engine and the portable one run the shapes of
// every profile — random pages at a queue depth, write-through writes,
// write then FlushFileBuffers, a stream — on handles they open and close
// themselves, say what they did, and leave nothing: once the Target is
// closed its file is gone (Windows refuses to remove a file a handle
// still holds).
func TestEngines(t *testing.T) {
	for _, engine := range []string{EngineIOCP, EnginePortable} {
		t.Run(engine, func(t *testing.T) { engineRun(t, engine) })
	}
}

func engineRun(t *testing.T, engine string) {
	// A directory of its own, removed only if empty (t.TempDir's RemoveAll
	// fails under Wine 8 on Go 1.26's unlinkat).
	dir, err := os.MkdirTemp("", "narrows-iocp-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("the test left something in its directory: %v", err)
		}
	}()
	cfg := Config{Dir: dir, Size: 8 << 20, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond,
		Engine: engine, Seed: 1, Profiles: []string{result.ProfileCustom}, Patterns: []Pattern{
			{Profile: result.ProfileCustom, RW: Mix, ReadPercent: 70, Block: 8 << 10, QD: 8, Threads: 2, Sync: result.SyncNone},
			{Profile: result.ProfileCustom, RW: Write, Block: 16 << 10, QD: 4, Threads: 1, Sync: result.SyncDsync},
			{Profile: result.ProfileCustom, RW: Write, Block: 16 << 10, QD: 1, Threads: 1, Sync: result.SyncFdatasync},
			{Profile: result.ProfileCustom, RW: Read, Block: 1 << 20, QD: 4, Threads: 1, Sync: result.SyncNone},
		}}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	tg, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := tg.Path()
	defer tg.Close()
	if err := tg.Layout(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := tg.Run(context.Background(), func(result.Interval) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != engine || !res.Direct || res.IO == nil || res.IO.Direct != "FILE_FLAG_NO_BUFFERING" || res.IO.Dsync != "FILE_FLAG_WRITE_THROUGH" {
		t.Errorf("engine %q, direct %v, io %+v: want %s with FILE_FLAG_NO_BUFFERING", res.Engine, res.Direct, res.IO, engine)
	}
	for _, p := range res.Patterns {
		if p.IOs <= 0 || p.Stopped != "" || p.P50 <= 0 {
			t.Errorf("%s: %d I/Os, p50 %v, stopped %q", p.Name, p.IOs, p.P50, p.Stopped)
		}
		if p.Sync == result.SyncFdatasync && (p.Flushes != p.IOs || p.FlushLatency == nil || p.WriteLatency == nil) {
			t.Errorf("%s: %d flushes of %d writes, flush latency %v", p.Name, p.Flushes, p.IOs, p.FlushLatency)
		}
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is still there after Close: %v", path, err)
	}
}

// TestProcessAlive: Windows (and Wine at once) hands a freed process ID
// to the next process; the marker's start time tells the writer from a
// later process under its ID.
func TestProcessAlive(t *testing.T) {
	me := os.Getpid()
	if !processAlive(me, time.Now()) {
		t.Error("this process, its marker written now, reads as gone")
	}
	if processAlive(me, time.Now().Add(-time.Hour)) {
		t.Error("a marker written an hour before this process began reads as this process's")
	}
}

// TestClock: I/O is timed to the microsecond, not to Go's Windows clock's
// tick (15.6 ms, 1 ms at best), and clockNow keeps time with time.Now.
func TestClock(t *testing.T) {
	distinct, last := 0, clockNow()
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		if c := clockNow(); !c.Equal(last) {
			if c.Before(last) {
				t.Fatalf("the clock went back: %v after %v", c, last)
			}
			distinct, last = distinct+1, c
		}
	}
	if distinct < 200 {
		t.Errorf("clockNow moved %d times in 20 ms: coarser than 100 µs", distinct)
	}
	if d := time.Until(clockNow()).Abs(); d > 50*time.Millisecond {
		t.Errorf("clockNow is %v off time.Now", d)
	}
}
