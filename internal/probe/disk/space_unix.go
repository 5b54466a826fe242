//go:build unix && !linux

package disk

import "golang.org/x/sys/unix"

func statFS(dir string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsInfo{}, err
	}
	bs := int64(st.Bsize)
	return fsInfo{total: int64(st.Blocks) * bs, avail: int64(st.Bavail) * bs}, nil
}
