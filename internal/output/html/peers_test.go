package html

import (
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/result"
)

// TestPeersOfWindowsDisk: a run by the iocp engine (recorded as Windows
// records it) is reproduced with fio's windowsaio, its drive's colon
// escaped, and with DiskSpd in the caching mode the run used; a
// FlushFileBuffers pattern has no DiskSpd peer (DiskSpd flushes no write).
func TestPeersOfWindowsDisk(t *testing.T) {
	d := &result.Disk{Path: `D:\sql\data`, FileBytes: 1 << 30, Engine: "iocp", Direct: true, Config: result.DiskConfig{Duration: result.Seconds(3 * time.Second)},
		IO: &result.DiskIO{Direct: "FILE_FLAG_NO_BUFFERING", Dsync: "FILE_FLAG_WRITE_THROUGH", Flush: "FlushFileBuffers", Cache: "system file cache"}}
	mix := result.DiskPattern{Name: "mix 70/30 8 KiB QD8", RW: "mix", ReadPercent: 70, BlockBytes: 8192, QueueDepth: 8, Threads: 1, Sync: result.SyncNone}
	wt := result.DiskPattern{Name: "write 60 KiB write-through", RW: "write", BlockBytes: 60 << 10, QueueDepth: 1, Threads: 1, Sync: result.SyncDsync}
	fl := result.DiskPattern{Name: "write 4 KiB + FlushFileBuffers", RW: "write", BlockBytes: 4096, QueueDepth: 1, Threads: 1, Sync: result.SyncFdatasync}
	for _, c := range []struct {
		p         result.DiskPattern
		diskspd   string
		fioHas    string
		noDiskspd bool
	}{
		{mix, `diskspd -c1073741824 -d3 -b8192 -o8 -t1 -r -w30 -Su -L -Zr D:\sql\data\diskspd.dat`, "--ioengine=windowsaio --direct=1", false},
		{wt, `diskspd -c1073741824 -d3 -b61440 -o1 -t1 -s -w100 -Sh -L -Zr D:\sql\data\diskspd.dat`, "--sync=dsync", false},
		{fl, "", "--fdatasync=1", true},
	} {
		if got := diskspdCommand(d, c.p); got != c.diskspd {
			t.Errorf("%s: DiskSpd\n%s\nwant\n%s", c.p.Name, got, c.diskspd)
		}
		fio := fioCommand(d, c.p)
		if !strings.Contains(fio, `--directory=D\:\sql\data`) || !strings.Contains(fio, c.fioHas) {
			t.Errorf("%s: fio %s, want the colon escaped and %s", c.p.Name, fio, c.fioHas)
		}
	}
	// Linux's runs keep fio alone.
	if got := diskspdCommand(&result.Disk{Path: "/data", Engine: "io_uring", Direct: true}, mix); got != "" {
		t.Errorf("an io_uring run has a DiskSpd peer: %s", got)
	}
}
