//go:build !unix && !windows

package disk

func statFS(dir string) (fsInfo, error) { return fsInfo{}, errNotHere }
