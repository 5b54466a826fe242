package history

import (
	"net/url"
	"strconv"

	_ "modernc.org/sqlite" // pure Go: the binary stays static and cross-builds
)

const driverName = "sqlite"

// dsn opens path (a plain file name: the driver takes the query off it)
// with a busy timeout, so a second narrows waits for the first's write,
// and write transactions that take the write lock at BEGIN, so two
// writers never deadlock upgrading a read lock. synchronous=NORMAL in WAL
// mode: a crash never leaves the store inconsistent; a power cut may lose
// the last runs, not the history.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}
