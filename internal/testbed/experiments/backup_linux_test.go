//go:build linux

package experiments

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// backupCase is the database size (pgbench scale) and the line.
func backupCase() (scale int, rate int64, rtt time.Duration) {
	if long() {
		return 30, 100_000_000, 20 * time.Millisecond // about 450 MB
	}
	return 3, 100_000_000, 20 * time.Millisecond // about 70 MB: 6 s a copy across the line
}

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
		t.Logf("plan stage: %v on the %v: compress %.1f MB/s a core, decompress %.1f MB/s, ratio %.2f (%v)", m["codec"], m["side"],
			jnum(m, "compress_bytes_per_second_per_core")/1e6, jnum(m, "decompress_bytes_per_second_per_core")/1e6, jnum(m, "ratio"), m["sample"])
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
			BackupBy: m["backup_bottleneck"].(string), RestoreBy: m["restore_bottleneck"].(string), StoreBytes: jnum(m, "backup_bytes")}
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
	if err := recv.Start(); err != nil {
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

// within says how far a prediction is from the truth, as a ratio.
func within(pred, real float64) float64 { return pred / real }

// TestPlanBackupAgainstPGBaseBackup is the experiment: the predicted
// backup time for the database's size against a real pg_basebackup
// across a 100 Mbit/s, 20 ms line, without compression (within 15%) and
// with gzip on the backup host (within 20%), each naming the stage the
// real run was bound by; gzip on the database server (server-gzip),
// where one core of gzip, not the line, is the limit (the line idles);
// and the restore: the backup copied back and unpacked on A.
func TestPlanBackupAgainstPGBaseBackup(t *testing.T) {
	setUp(t)
	scale, rate, rtt := backupCase()
	l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: rate})
	pg := startPG(t, l)
	ctx := context.Background()
	if err := pg.StopStandby(ctx); err != nil { // the standby would share the line
		t.Fatal(err)
	}
	if out, err := pg.Tool(ctx, pg.Primary, nil, "pgbench", "-i", "-s", strconv.Itoa(scale), "-q", "-h", pg.Primary.Sock, "-p", strconv.Itoa(pg.Primary.Port), "-U", "postgres", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	psql(t, pg, pg.Primary, "CHECKPOINT")
	agentDir := t.TempDir()
	itest.StartAgent(t, []string{"--listen", agentAddr(l), "--disk-path", agentDir}, inNS(l.B)...)

	cells := plan(t, l, pg, agentDir, "--compression", "none,gzip-6")
	none, gz := cells["none"], cells["gzip"]

	// The truth: pg_basebackup on B, plain and with gzip on B (client side).
	before := l.Stats()
	took, size, plainDir := basebackup(t, pg, "bb-none", "")
	lineNone := lineRecord(before, l.Stats())
	tookGz, sizeGz, gzDir := basebackup(t, pg, "bb-gzip", "client-gzip:6")
	// gzip on the database server: the line carries a fifth; one core of
	// gzip on A sets the pace.
	before = l.Stats()
	tookSrv, _, _ := basebackup(t, pg, "bb-server-gzip", "server-gzip:6")
	atob := float64(l.Stats().AtoB.Bytes - before.AtoB.Bytes)
	srvLineUse := atob * 8 / tookSrv.Seconds() / float64(rate)
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
		"backup none: predicted %.1f s (%s), real %.1f s (%.3f); gzip-6 on B: predicted %.1f s (%s), real %.1f s (%.3f); "+
		"server-gzip-6 on A: predicted %.1f s (%s), real %.1f s (%.3f), line %.0f%% used; "+
		"restore none: predicted %.1f s (%s), real %.1f s (%.3f); restore gzip: predicted %.1f s (%s), real %.1f s (%.3f); %s",
		rtt, rate/1_000_000, none.Size/1e6, scale, float64(size)/1e6, float64(sizeGz)/1e6,
		none.Backup, none.BackupBy, took.Seconds(), within(none.Backup, took.Seconds()),
		gz.Backup, gz.BackupBy, tookGz.Seconds(), within(gz.Backup, tookGz.Seconds()),
		srv.Backup, srv.BackupBy, tookSrv.Seconds(), within(srv.Backup, tookSrv.Seconds()), 100*srvLineUse,
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
	// Not held to a bound, and docs/testbed.md says why: the server-side
	// gzip run is bound by the walsender's one core, which compresses
	// slower inside pg_basebackup (~60 MB/s of these pages, 2.6 s for 159 MB
	// with no line at all) than zlib alone (88 MB/s) or narrows' gzip (72-81
	// MB/s) does; and the compressed restore, a 10 MB copy, is over in a
	// second or so, where starting the pipeline's programs weighs as much
	// as the line.
	if none.BackupBy != "network" || gz.BackupBy != "network" {
		t.Errorf("across a 100 Mbit/s line the backup is bound by the line (pg_basebackup compresses on B, after it): narrows named %s and %s", none.BackupBy, gz.BackupBy)
	}
	// The real server-side run left the line idle part of the time: the
	// CPU, not the line, set its pace; narrows must say so.
	if srvLineUse > 0.8 {
		t.Errorf("pg_basebackup with server-gzip used %.0f%% of the line: not the compression-bound case this experiment needs", 100*srvLineUse)
	}
	if srv.BackupBy != "compression_cpu" {
		t.Errorf("with gzip on the database server the real run left the line %.0f%% idle, bound by one core of gzip; narrows named %s", 100*(1-srvLineUse), srv.BackupBy)
	}
}
