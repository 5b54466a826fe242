package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The log flush's peers: what a DBA checks narrows' log flush against.
// PostgreSQL's pg_test_fsync times 8 kB writes each made durable, its
// fdatasync line writing through the page cache into a preallocated file;
// fio, given the same pattern, times the flush alone.

// PgTestFsync finds PostgreSQL's pg_test_fsync (Debian installs it under
// /usr/lib/postgresql/VERSION/bin), or skips the test.
func PgTestFsync(t testing.TB) string {
	t.Helper()
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_test_fsync")
	if p, err := exec.LookPath("pg_test_fsync"); err == nil {
		found = append(found, p)
	}
	if len(found) == 0 {
		t.Skip("pg_test_fsync not found (Debian: apt-get install -y postgresql)")
	}
	slices.Sort(found)
	return found[len(found)-1]
}

// PgTestFsyncRate runs pg_test_fsync with its test file in dir, secs
// seconds a test, and returns its "one 8kB write" fdatasync line in
// operations per second.
func PgTestFsyncRate(t testing.TB, bin, dir string, secs int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(30*secs+60)*time.Second)
	defer cancel()
	file := filepath.Join(dir, "pg_test_fsync.out")
	out, err := exec.CommandContext(ctx, bin, "-f", file, "-s", strconv.Itoa(secs)).CombinedOutput()
	os.Remove(file)
	if err != nil {
		t.Fatalf("pg_test_fsync: %v\n%s", err, out)
	}
	// Compare file sync methods using one 8kB write:
	// ...
	//         fdatasync                          7257.102 ops/sec     138 usecs/op
	section := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "using one 8kB write") {
			section = true
			continue
		}
		f := strings.Fields(line)
		if section && len(f) >= 3 && f[0] == "fdatasync" && f[2] == "ops/sec" {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil || v <= 0 {
				break
			}
			return v
		}
	}
	t.Fatalf("pg_test_fsync printed no fdatasync rate for one 8kB write:\n%s", out)
	return 0
}

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
	file := filepath.Join(dir, "fio-log.dat")
	defer os.Remove(file)
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zero)) {
		if _, err := f.Write(zero[:min(int64(len(zero)), size-off)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
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

// Median is the median of xs (the mean of the middle two of an even count).
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
