// Package jsonl writes records as JSON lines: each interval as it happens,
// then the summary Report, one object per line (docs/json-schema.md).
package jsonl

import (
	"encoding/json"
	"io"

	"github.com/narrows/narrows/internal/result"
	"github.com/narrows/narrows/internal/untrusted"
)

// Writer writes records to w.
type Writer struct{ enc *json.Encoder }

// New returns a Writer. Its JSON shows DEL, C1 controls and bidirectional
// overrides as \u escapes, which Go's encoder leaves raw: a run's file is
// safe to cat, and decodes to the same strings.
func New(w io.Writer) *Writer {
	enc := json.NewEncoder(untrusted.NewWriter(w))
	enc.SetEscapeHTML(false)
	return &Writer{enc: enc}
}

// Interval writes one interval record.
func (w *Writer) Interval(iv result.Interval) error { return w.enc.Encode(iv) }

// Report writes the summary record.
func (w *Writer) Report(r *result.Report) error { return w.enc.Encode(r) }
