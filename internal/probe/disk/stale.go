package disk

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/narrows/narrows/internal/metric"
)

// The test file ends in one block that no pattern touches, the marker:
// MarkerMagic, then "key=value" lines (pid, host, uid, started), then
// zeros. It is written before anything else, so a file left by a killed
// run can be proven to be narrows' own: its name, its marker, its owner,
// and a writer that is no longer running on this host.
const (
	MarkerMagic = "narrows disk test file\n"
	markerSize  = DirectAlign
)

func marker(now time.Time) []byte {
	host, _ := os.Hostname()
	b := make([]byte, markerSize)
	copy(b, fmt.Sprintf("%spid=%d\nhost=%s\nuid=%d\nstarted=%s\n", MarkerMagic, os.Getpid(), host, os.Geteuid(), now.UTC().Format(time.RFC3339)))
	return b
}

func writeMarker(f *os.File, off int64) error {
	if _, err := f.WriteAt(marker(time.Now()), off); err != nil {
		return err
	}
	return nil
}

// createNamed creates a new narrows-<16 hex>.dat in dir with O_EXCL (this
// run's own new file or nothing; it also refuses to follow a symbolic
// link planted under the name) and writes its marker at off.
func createNamed(dir string, off int64) (*os.File, string, error) {
	for range 5 {
		var rnd [8]byte
		rand.Read(rnd[:])
		path := filepath.Join(dir, FilePrefix+hex.EncodeToString(rnd[:])+FileSuffix)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if err := writeMarker(f, off); err != nil {
			f.Close()
			os.Remove(path)
			return nil, "", err
		}
		return f, path, nil
	}
	return nil, "", fmt.Errorf("could not find a free name for the test file in %s", dir)
}

// Stale is a test file a killed run left behind.
type Stale struct {
	Path    string
	Bytes   int64
	PID     int
	Started time.Time
}

// FindStale lists the test files in dir that narrows can prove are its
// own and abandoned: named narrows-*.dat, a regular file (not a link)
// owned by this user, ending in a marker written on this host by a
// process that is no longer running. Anything else is left alone.
func FindStale(dir string) ([]Stale, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // name the files where they really are
	}
	names, err := filepath.Glob(filepath.Join(dir, FilePrefix+"*"+FileSuffix))
	if err != nil {
		return nil, err
	}
	var out []Stale
	for _, p := range names {
		if s, ok := staleFile(p); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemoveStale removes what FindStale finds, checking each file again
// just before it goes; it returns what it removed.
func RemoveStale(dir string) ([]Stale, error) {
	found, err := FindStale(dir)
	if err != nil {
		return nil, err
	}
	var gone []Stale
	for _, s := range found {
		if _, ok := staleFile(s.Path); !ok {
			continue
		}
		if err := os.Remove(s.Path); err != nil {
			return gone, fmt.Errorf("disk: removing %s: %w", s.Path, err)
		}
		gone = append(gone, s)
	}
	return gone, nil
}

func staleFile(path string) (Stale, bool) {
	li, err := os.Lstat(path)
	if err != nil || !li.Mode().IsRegular() || li.Size() < markerSize || !ownedByMe(li) {
		return Stale{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return Stale{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(li, fi) {
		return Stale{}, false
	}
	b := make([]byte, markerSize)
	if _, err := f.ReadAt(b, fi.Size()-markerSize); err != nil || !bytes.HasPrefix(b, []byte(MarkerMagic)) {
		return Stale{}, false
	}
	kv := map[string]string{}
	text, _, _ := bytes.Cut(b[len(MarkerMagic):], []byte{0})
	for _, line := range strings.Split(string(text), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			kv[k] = v
		}
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(kv["pid"])
	started, _ := time.Parse(time.RFC3339, kv["started"])
	if err != nil || pid <= 0 || kv["host"] != host || kv["uid"] != strconv.Itoa(os.Geteuid()) || processAlive(pid, started) {
		return Stale{}, false
	}
	return Stale{Path: path, Bytes: fi.Size(), PID: pid, Started: started}, true
}

// StaleNote is the notice for what killed runs left in dir (FindStale):
// how many files, their size and names, then fix, what removes them.
func StaleNote(dir string, st []Stale, fix string) string {
	var n int64
	names := make([]string, len(st))
	for i, s := range st {
		n += s.Bytes
		names[i] = filepath.Base(s.Path)
	}
	files := "test file"
	if len(st) > 1 {
		files = "test files"
	}
	return fmt.Sprintf("%s holds %d %s (%s) left by narrows runs that were killed (%s): %s",
		dir, len(st), files, metric.FormatBytes(n), strings.Join(names, ", "), fix)
}
