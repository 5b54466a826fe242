//go:build !linux && !windows

package disk

import "errors"

const (
	noURing = "io_uring is only available on Linux"
	noIOCP  = "the iocp engine (I/O completion ports) is only available on Windows"
)

// chooseEngine: io_uring is a Linux interface and I/O completion ports
// Windows', so the portable engine serves here.
func chooseEngine(want string) (engine, note string, err error) {
	switch want {
	case EnginePortable:
		return EnginePortable, "", nil
	case EngineURing:
		return "", "", userErrorf(nil, "--engine io_uring: %s", noURing)
	case EngineIOCP:
		return "", "", userErrorf(nil, "--engine iocp: %s", noIOCP)
	}
	return EnginePortable, noURing + ": using the portable engine (threads doing pread/pwrite)", nil
}

func (j *job) uringWorker(m *meter, offs *offsets, n int) error {
	return errors.New("disk: " + noURing)
}

func (j *job) iocpWorker(m *meter, offs *offsets, n int) error {
	return errors.New("disk: " + noIOCP)
}
