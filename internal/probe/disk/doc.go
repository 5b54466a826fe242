// Package disk is the storage probe: it measures a filesystem in the
// shapes a database uses it — random 8 KiB pages at some queue depth
// (data files), small sequential writes each made durable before the next
// (the transaction log), large sequential reads and writes (backup,
// restore) — through io_uring on Linux, overlapped I/O on I/O completion
// ports on Windows (engine iocp, as SQL Server and DiskSpd), or a portable
// pool of threads doing pread and pwrite elsewhere. The cache is bypassed
// as databases bypass it: O_DIRECT on Linux, FILE_FLAG_NO_BUFFERING on
// Windows.
//
// It owns the safety of what it touches: it creates one file of its own
// inside the directory it is given — on Linux without a name (O_TMPFILE,
// or unlinked at once), so nothing outlives the process, not even kill
// -9; elsewhere named narrows-*.dat with O_CREAT|O_EXCL and removed on
// every way out (Close) — and marks it (stale.go) so that a file a killed
// run left can be proven its own and removed (FindStale, RemoveStale). It
// never opens an existing file for writing, opens a block device only
// read-only, and keeps FreeShare of the filesystem free before and while
// it writes. It never prints and never advises: it returns result.Disk
// and interval records.
package disk
