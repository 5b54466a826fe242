package disk

import (
	"strings"
	"testing"

	"github.com/narrows/narrows/internal/errext"
)

// TestSectorRefusal: a volume whose sectors are larger than DirectAlign
// (Windows says its size; a 4Kn disk is 4 KiB, some arrays more) takes
// only blocks of whole sectors without the cache: a block that is not is
// refused in one line that says what to use, before anything is written.
// No machine here has such a volume, so the size is given.
func TestSectorRefusal(t *testing.T) {
	ps := []Pattern{{Profile: "custom", RW: RandRead, Block: 8 << 10, QD: 1, Threads: 1}}
	tg := &Target{cfg: Config{Dir: "/data", Patterns: ps}, fs: fsInfo{sector: 16 << 10}}
	err := tg.chooseDirect()
	if !errext.IsUser(err) || !strings.Contains(err.Error(), "--block 8 KiB: "+words.direct+" on /data needs whole sectors of 16 KiB") ||
		strings.Contains(err.Error(), "\n") || tg.direct {
		t.Fatalf("chooseDirect with 16 KiB sectors and 8 KiB blocks = %v (direct %v), want a one-line user error", err, tg.direct)
	}
	// Buffered, the cache takes any size.
	tg.cfg.Buffered = true
	if err := tg.chooseDirect(); err != nil {
		t.Fatalf("buffered: %v", err)
	}
}
