package disk

import (
	"fmt"
	"io"

	"github.com/narrows/narrows/internal/metric"
)

// WriteAt writes b at off of the test file, once it is laid out: for a
// caller that writes the file in a shape of its own (net commit's log,
// written round and round). With dsync the write returns once durable
// (RWF_DSYNC, O_DSYNC for this one write; Windows: a handle opened
// FILE_FLAG_WRITE_THROUGH; elsewhere a handle opened O_SYNC). Errors a person fixes are UserErrors, as the patterns' are.
func (t *Target) WriteAt(b []byte, off int64, dsync bool) error {
	n, err := t.io.pwrite(b, off, dsync)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return t.placeErr(fmt.Sprintf("write %s at offset %d", metric.FormatBytes(int64(len(b))), off), err)
	}
	return nil
}

// Datasync makes what WriteAt wrote durable: fdatasync (Windows:
// FlushFileBuffers).
func (t *Target) Datasync() error {
	if err := t.io.datasync(); err != nil {
		return t.placeErr("flush ("+words.flush+") the test file", err)
	}
	return nil
}
