package disk

import (
	"fmt"
	"slices"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/result"
)

// RW is the kind of I/O a pattern issues.
type RW string

// Kinds of I/O.
const (
	Read      RW = "read"      // sequential reads
	Write     RW = "write"     // sequential writes
	RandRead  RW = "randread"  // random reads
	RandWrite RW = "randwrite" // random writes
	Mix       RW = "mix"       // random reads and writes, ReadPercent of them reads
)

// RWs are the kinds --rw accepts, in the order help lists them.
var RWs = []RW{Read, Write, RandRead, RandWrite, Mix}

// Syncs are the sync modes --sync accepts.
var Syncs = []string{result.SyncNone, result.SyncFdatasync, result.SyncDsync}

// Pattern is one measured shape: what I/O, how large, how many at once.
type Pattern struct {
	Profile     string
	RW          RW
	ReadPercent int   // Mix: share of reads, 0..100
	Block       int64 // bytes per I/O
	QD          int   // outstanding I/Os per thread
	Threads     int
	Sync        string // result.SyncNone, SyncFdatasync or SyncDsync
}

// Random says whether offsets are random (else sequential).
func (p Pattern) Random() bool { return p.RW == RandRead || p.RW == RandWrite || p.RW == Mix }

// Writes says whether the pattern writes at all.
func (p Pattern) Writes() bool { return p.RW != Read && p.RW != RandRead }

// readPercent is the share of reads the offset generator draws.
func (p Pattern) readPercent() int {
	switch p.RW {
	case Read, RandRead:
		return 100
	case Mix:
		return p.ReadPercent
	}
	return 0
}

// sysWords are this system's own names for how the I/O is done, for the
// result (result.DiskIO) and the words that name the mechanism: the flag
// that bypasses the cache, what makes a dsync write durable and the name
// patterns give it, the flush of the fdatasync pattern, and the cache.
type sysWords struct{ direct, dsync, dsyncName, flush, cache string }

// Name is how outputs label the pattern: "randread 8 KiB QD8",
// "mix 70/30 8 KiB QD8", "write 16 KiB + fdatasync", "write 16 KiB O_DSYNC"
// (on Windows "write 16 KiB + FlushFileBuffers", "write 16 KiB
// write-through": the names say what was done).
func (p Pattern) Name() string { return p.name(true) }

// Shape is Name without the queue depth: what a sweep of depths steps
// ("randread 8 KiB").
func (p Pattern) Shape() string { return p.name(false) }

func (p Pattern) name(qd bool) string {
	var b strings.Builder
	b.WriteString(string(p.RW))
	if p.RW == Mix {
		fmt.Fprintf(&b, " %d/%d", p.ReadPercent, 100-p.ReadPercent)
	}
	b.WriteString(" " + metric.FormatBytes(p.Block))
	switch p.Sync {
	case result.SyncFdatasync:
		b.WriteString(" + " + words.flush)
	case result.SyncDsync:
		b.WriteString(" " + words.dsyncName)
	}
	if qd && (p.QD > 1 || p.Sync == result.SyncNone) {
		fmt.Fprintf(&b, " QD%d", p.QD)
	}
	if p.Threads > 1 {
		fmt.Fprintf(&b, " ×%d threads", p.Threads)
	}
	return b.String()
}

// Profiles are the built-in profiles: a DBA's name for a set of patterns.
var Profiles = map[string]func() []Pattern{
	result.ProfileData:   dataProfile,
	result.ProfileLog:    logProfile,
	result.ProfileBackup: backupProfile,
}

// ProfileOrder is the order profiles run and print in; custom has no
// fixed patterns (its flags make one).
var ProfileOrder = []string{result.ProfileData, result.ProfileLog, result.ProfileBackup, result.ProfileCustom}

// DefaultProfiles run when --profile is not given.
var DefaultProfiles = []string{result.ProfileData, result.ProfileLog, result.ProfileBackup}

// dataProfile: data-file pages. 8 KiB is the page of PostgreSQL and SQL
// Server (an extent read is 64 KiB, but lookups read pages); random reads
// alone, then 70/30 reads/writes as an OLTP checkpoint and lookups mix;
// at 1, 8 and 32 outstanding — one session, a few, a busy server.
func dataProfile() []Pattern {
	var ps []Pattern
	for _, rw := range []RW{RandRead, Mix} {
		for _, qd := range []int{1, 8, 32} {
			p := Pattern{Profile: result.ProfileData, RW: rw, Block: 8 << 10, QD: qd, Threads: 1, Sync: result.SyncNone}
			if rw == Mix {
				p.ReadPercent = 70
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// logProfile: the transaction log. Each commit writes from one 8 KiB
// page (PostgreSQL's WAL page, the size plan sync takes as a small
// commit's flush and pg_test_fsync times) to 60 KiB (SQL Server's largest
// log block) and waits until it is durable, one at a time: with
// fdatasync after the write (PostgreSQL's default on Linux, MySQL's
// fsync; through the page cache there, see logWriter), and with O_DSYNC,
// where the write itself returns once durable (SQL Server's
// write-through, PostgreSQL open_datasync, both bypassing the cache).
func logProfile() []Pattern {
	var ps []Pattern
	for _, bs := range []int64{8 << 10, 16 << 10, 60 << 10} {
		for _, s := range []string{result.SyncFdatasync, result.SyncDsync} {
			ps = append(ps, Pattern{Profile: result.ProfileLog, RW: Write, Block: bs, QD: 1, Threads: 1, Sync: s})
		}
	}
	return ps
}

// backupProfile: backup and restore stream large sequential I/O with a
// few buffers in flight (SQL Server's BACKUP uses 1 MiB transfers).
func backupProfile() []Pattern {
	return []Pattern{
		{Profile: result.ProfileBackup, RW: Read, Block: 1 << 20, QD: 8, Threads: 1, Sync: result.SyncNone},
		{Profile: result.ProfileBackup, RW: Write, Block: 1 << 20, QD: 8, Threads: 1, Sync: result.SyncNone},
	}
}

// Limits on a custom pattern.
const (
	MaxBlock   = 64 << 20
	MaxQD      = 256
	MaxThreads = 64
	// DirectAlign is the alignment O_DIRECT I/O keeps: offsets and sizes
	// are whole multiples of it (4 KiB covers 512e and 4Kn devices).
	DirectAlign = 4096
)

// Check says what is wrong with a pattern, in the words of its flags.
func (p Pattern) Check(direct bool) error {
	if !slices.Contains(RWs, p.RW) {
		return fmt.Errorf("--rw %q: use read, write, randread, randwrite or mix", p.RW)
	}
	if p.RW == Mix && (p.ReadPercent < 0 || p.ReadPercent > 100) {
		return fmt.Errorf("--mix %d: the share of reads, from 0 to 100", p.ReadPercent)
	}
	if p.Block < 512 || p.Block > MaxBlock {
		return fmt.Errorf("--block %s: use 512 bytes to 64M", metric.FormatBytes(p.Block))
	}
	if direct && p.Block%DirectAlign != 0 {
		return fmt.Errorf("--block %s bytes: %s needs a multiple of 4K (4,096 bytes: K and KiB are binary, KB decimal); use --buffered for other sizes", metric.FormatCount(p.Block), words.direct)
	}
	if p.QD < 1 || p.QD > MaxQD {
		return fmt.Errorf("--qd %d: use 1 to %d", p.QD, MaxQD)
	}
	if p.Threads < 1 || p.Threads > MaxThreads {
		return fmt.Errorf("--threads %d: use 1 to %d", p.Threads, MaxThreads)
	}
	if !slices.Contains(Syncs, p.Sync) {
		return fmt.Errorf("--sync %q: use none, fdatasync or dsync", p.Sync)
	}
	if p.Sync != result.SyncNone && !p.Writes() {
		return fmt.Errorf("--sync %s with --rw %s: a sync mode needs writes", p.Sync, p.RW)
	}
	if p.Sync == result.SyncFdatasync && p.QD != 1 {
		// A log writer waits for its flush before the next write; several
		// committers are --threads, each at queue depth 1.
		return fmt.Errorf("--sync fdatasync with --qd %d: each write waits for its flush, so use --qd 1 (and --threads N for N committers)", p.QD)
	}
	return nil
}
