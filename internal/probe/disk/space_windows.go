//go:build windows

package disk

import "golang.org/x/sys/windows"

func statFS(dir string) (fsInfo, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return fsInfo{}, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return fsInfo{}, err
	}
	return fsInfo{total: int64(total), avail: int64(avail)}, nil
}
