package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

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
	return Read(f, path)
}

// Read is ReadFile of r, named name in errors.
func Read(r io.Reader, name string) (*result.Report, []result.Interval, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var rep *result.Report
	var ivs, cur []result.Interval
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			return nil, nil, fmt.Errorf("%s: line %d is not a narrows JSON record: %v", name, n, err)
		}
		switch head.Type {
		case result.TypeInterval:
			var iv result.Interval
			if err := json.Unmarshal([]byte(line), &iv); err != nil {
				return nil, nil, fmt.Errorf("%s: line %d: %v", name, n, err)
			}
			cur = append(cur, iv)
		case result.TypeSummary:
			rep = new(result.Report)
			if err := json.Unmarshal([]byte(line), rep); err != nil {
				return nil, nil, fmt.Errorf("%s: line %d: %v", name, n, err)
			}
			ivs, cur = cur, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	if rep == nil {
		return nil, nil, fmt.Errorf("%s holds no summary record: save a run with --json (narrows net stream ... --json > run.json)", name)
	}
	return rep, ivs, nil
}
