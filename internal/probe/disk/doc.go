// Package disk is the storage probe: it measures a filesystem in the
// shapes a database uses it — random 8 KiB pages at some queue depth
// (data files), small sequential writes each made durable before the next
// (the transaction log), large sequential reads and writes (backup,
// restore) — through io_uring on Linux, or a portable pool of threads
// doing pread and pwrite elsewhere.
//
// It owns the safety of what it touches: it creates one file of its own,
// named narrows-*.dat, with O_CREAT|O_EXCL inside the directory it is
// given, never opens an existing file for writing, opens a block device
// only read-only, checks free space before it writes, and removes its
// file on every way out (Close). It never prints and never advises: it
// returns result.Disk and interval records.
package disk
