package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// maxLine bounds one record read back: a doctor's summary holds every
// step's report and interval records.
const maxLine = 64 << 20

// Read reads what a Writer wrote (a saved run, or several) and calls each
// for every summary record with the interval records written since the
// summary before it. name names r in errors; a line that is not a narrows
// record is an error naming its number. Records of other types are
// skipped. A saved run is a file anyone can write: every string in it
// comes out escaped (untrusted.Clean), for the terminal and the page.
func Read(r io.Reader, name string, each func(rep *result.Report, ivs []result.Interval)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	var ivs []result.Interval
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil || head.Type == "" {
			return fmt.Errorf("%s: line %d is not a narrows JSON record (save a run with --json > FILE)", name, n)
		}
		switch head.Type {
		case result.TypeInterval:
			var iv result.Interval
			if err := json.Unmarshal(line, &iv); err != nil {
				return fmt.Errorf("%s: line %d: %v", name, n, err)
			}
			untrusted.Clean(&iv)
			ivs = append(ivs, iv)
		case result.TypeSummary:
			rep := new(result.Report)
			if err := json.Unmarshal(line, rep); err != nil {
				return fmt.Errorf("%s: line %d: %v", name, n, err)
			}
			untrusted.Clean(rep)
			each(rep, ivs)
			ivs = nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

// Last is the last run in r: its summary and its interval records, or an
// error saying r holds none.
func Last(r io.Reader, name string) (*result.Report, []result.Interval, error) {
	var last *result.Report
	var kept []result.Interval
	err := Read(r, name, func(rep *result.Report, ivs []result.Interval) { last, kept = rep, ivs })
	if err == nil && last == nil {
		err = fmt.Errorf("%s holds no summary record: save a whole run with --json > FILE", name)
	}
	return last, kept, err
}
