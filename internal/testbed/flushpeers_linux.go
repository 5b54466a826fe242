package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The log flush's peer: fio, given the pattern a database writes its log
// in, times the flush alone. (PostgreSQL's pg_test_fsync rewrites one
// block at offset 0: bench/commit.sh sets it beside narrows.)

// Fio finds fio, or skips the test.
func Fio(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio not found (Debian: apt-get install -y fio)")
	}
	return p
}

// FioFlush is what fio measured of a log written as the database writes
// it: writes per second, and its fdatasync's median.
type FioFlush struct {
	IOPS     float64
	SyncP50  time.Duration
	WriteP50 time.Duration
}

// FioLogFlush runs fio's log pattern in dir for d: a file of size bytes
// laid out with zeros and made durable first (a preallocated, zero-filled
// WAL segment), then block-sized writes through the page cache
// (ioengine psync: one pwrite, then one fdatasync), each made durable
// before the next, front to back and round again.
//
// think, when set, is an idle between one write's flush and the next
// write (fio's thinktime, a sleep), as a replica waits on the network for
// the next block: on VMs whose idle vCPUs halt, a flush after an idle
// reads slower than one back to back.
func FioLogFlush(t testing.TB, bin, dir string, size, block int64, d, think time.Duration) FioFlush {
	t.Helper()
	file := FioLogFile(t, dir, size)
	defer os.Remove(file)
	return FioLogFlushOn(t, bin, file, size, block, d, think)
}

// FioLogFile lays out fio's log file in dir: size bytes of zeros, made
// durable (a preallocated, zero-filled WAL segment). The caller removes it.
func FioLogFile(t testing.TB, dir string, size int64) string {
	t.Helper()
	file := filepath.Join(dir, "fio-log.dat")
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zero := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zero)) {
		if _, err := f.Write(zero[:min(int64(len(zero)), size-off)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return file
}

// FioLogFlushOn runs fio's log pattern (see FioLogFlush) on file, laid
// out by FioLogFile, for d.
func FioLogFlushOn(t testing.TB, bin, file string, size, block int64, d, think time.Duration) FioFlush {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	args := []string{"--name=log", "--filename=" + file, fmt.Sprintf("--size=%d", size), fmt.Sprintf("--bs=%d", block),
		"--rw=write", "--ioengine=psync", "--fdatasync=1", "--fallocate=none", "--time_based", fmt.Sprintf("--runtime=%dms", d.Milliseconds()),
		"--output-format=json"}
	if us := think.Microseconds(); us > 0 {
		args = append(args, fmt.Sprintf("--thinktime=%d", us))
	}
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatalf("fio: %v\n%s", err, out)
	}
	var r struct {
		Jobs []struct {
			Write struct {
				IOPS float64 `json:"iops"`
				Clat struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"write"`
			Sync struct {
				Lat struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"lat_ns"`
			} `json:"sync"`
		} `json:"jobs"`
	}
	s := string(out)
	if i := strings.Index(s, "{"); i > 0 {
		s = s[i:] // some versions print notes before the JSON
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil || len(r.Jobs) != 1 {
		t.Fatalf("fio's output: %v\n%s", err, out)
	}
	j := r.Jobs[0]
	sync, write := j.Sync.Lat.Percentile["50.000000"], j.Write.Clat.Percentile["50.000000"]
	if j.Write.IOPS <= 0 || sync <= 0 {
		t.Fatalf("fio measured no flushed writes:\n%s", out)
	}
	return FioFlush{IOPS: j.Write.IOPS, SyncP50: time.Duration(sync), WriteP50: time.Duration(write)}
}
