//go:build linux

package disk

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// fsInfo is what statfs says about the filesystem under a directory.
type fsInfo struct {
	total, avail int64  // bytes; total 0: the filesystem reports no size
	name         string // ext4, xfs, tmpfs, ...; "" when unknown
	sector       int64  // 0: O_DIRECT's 4 KiB (DirectAlign) covers every device
}

// Linux's words for the result and the messages that name the mechanism.
var words = sysWords{direct: "O_DIRECT", dsync: "RWF_DSYNC", dsyncName: "O_DSYNC", flush: "fdatasync", cache: "page cache"}

func statFS(dir string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsInfo{}, err
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	fi := fsInfo{total: int64(st.Blocks) * unit, avail: int64(st.Bavail) * unit, name: mountType(dir)}
	if fi.name == "" {
		fi.name = magicNames[uint32(st.Type)]
	}
	return fi, nil
}

// memory is the machine's free and total RAM, for filesystems that report
// no size of their own (ramfs lives in RAM and grows until it runs out).
func memory() (free, total int64, err error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, err
	}
	return int64(si.Freeram) * int64(si.Unit), int64(si.Totalram) * int64(si.Unit), nil
}

var magicNames = map[uint32]string{
	unix.EXT4_SUPER_MAGIC: "ext4", unix.XFS_SUPER_MAGIC: "xfs", unix.BTRFS_SUPER_MAGIC: "btrfs",
	unix.TMPFS_MAGIC: "tmpfs", unix.RAMFS_MAGIC: "ramfs", unix.NFS_SUPER_MAGIC: "nfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlay", unix.F2FS_SUPER_MAGIC: "f2fs", unix.MSDOS_SUPER_MAGIC: "vfat",
	unix.FUSE_SUPER_MAGIC: "fuse", unix.SMB2_SUPER_MAGIC: "smb2", unix.CIFS_SUPER_MAGIC: "cifs",
	0x2fc12fc1: "zfs",
}

// mountType finds the filesystem type of the mount holding dir in
// /proc/self/mountinfo (ext4 and ext3 share a magic number; the mount
// table tells them apart).
func mountType(dir string) string {
	path, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	path, _ = filepath.Abs(path)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, fstype := -1, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /root /mnt rw,noatime master:1 - ext4 /dev/vda rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, typ := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(typ) < 1 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if (path == mp || mp == "/" || strings.HasPrefix(path, mp+"/")) && len(mp) >= best {
			best, fstype = len(mp), typ[0]
		}
	}
	return fstype
}

// enableDirect turns O_DIRECT on for an open file. A filesystem that
// cannot do direct I/O refuses it here (EINVAL), as it would at open.
func enableDirect(f *os.File) error {
	return setFlag(f, unix.O_DIRECT, true)
}

func disableDirect(f *os.File) error { return setFlag(f, unix.O_DIRECT, false) }

func setFlag(f *os.File, flag int, on bool) error {
	fd := f.Fd()
	fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if on {
		fl |= flag
	} else {
		fl &^= flag
	}
	_, err = unix.FcntlInt(fd, unix.F_SETFL, fl)
	return err
}

// directRefused says the error marks a filesystem that does not do O_DIRECT.
func directRefused(err error) bool { return errors.Is(err, unix.EINVAL) }

// dropCache evicts the file's pages from the page cache, as fio's
// invalidate does, so buffered reads start from the device.
func dropCache(f *os.File) {
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// allocAligned returns page-aligned memory outside the Go heap: the
// kernel reads and writes it while io_uring operations are in flight.
func allocAligned(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("disk: allocating %d bytes of I/O buffers: %w", n, err)
	}
	return b, nil
}

func freeAligned(b []byte) { unix.Munmap(b) }

// fileIO is positioned I/O on the open file for the portable engine.
type fileIO struct {
	fd int
	f  *os.File // kept so the descriptor stays open
}

// newFileIO: O_DIRECT is a flag of the open file (enableDirect), so
// direct changes nothing here.
func newFileIO(f *os.File, path string, direct bool) (*fileIO, error) {
	return &fileIO{fd: int(f.Fd()), f: f}, nil
}

func (x *fileIO) close() {}

func (x *fileIO) pread(b []byte, off int64) (int, error) { return unix.Pread(x.fd, b, off) }

// pwrite writes; with dsync the write returns once durable: RWF_DSYNC is
// O_DSYNC for one write (the kernel marks the I/O IOCB_DSYNC either way).
func (x *fileIO) pwrite(b []byte, off int64, dsync bool) (int, error) {
	if dsync {
		return unix.Pwritev2(x.fd, [][]byte{b}, off, unix.RWF_DSYNC)
	}
	return unix.Pwrite(x.fd, b, off)
}

func (x *fileIO) datasync() error { return unix.Fdatasync(x.fd) }

// openDevice opens a block device read-only: nothing this program does
// can write to it.
func openDevice(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC, 0)
}

const directAvailable = true

// logThroughCache: on Linux the databases write their log through the
// page cache and make it durable with fdatasync, one system call each
// (PostgreSQL's WAL with wal_sync_method = fdatasync, its default here;
// MySQL's redo log, whose innodb_flush_method = O_DIRECT covers only the
// data files). The log profile's fdatasync patterns do the same (see
// Target.logWriter).
const logThroughCache = true
