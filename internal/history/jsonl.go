package history

import (
	"os"

	"github.com/narrows/narrows/internal/output/jsonl"
	"github.com/narrows/narrows/internal/result"
)

// ReadFile reads a run saved with --json (JSON lines: its interval
// records, then its summary), for compare. A file of several runs gives
// the last one.
func ReadFile(path string) (*result.Report, []result.Interval, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return jsonl.Last(f, path)
}
