//go:build !linux

package disk

import "errors"

const noURing = "io_uring is only available on Linux"

// chooseEngine: io_uring is a Linux interface, so the portable engine
// serves here.
func chooseEngine(want string) (engine, note string, err error) {
	switch want {
	case EnginePortable:
		return EnginePortable, "", nil
	case EngineURing:
		return "", "", userErrorf(nil, "--engine io_uring: %s", noURing)
	}
	return EnginePortable, noURing + ": using the portable engine (threads doing pread/pwrite)", nil
}

func (j *job) uringWorker(m *meter, offs *offsets, n int) error {
	return errors.New("disk: " + noURing)
}
