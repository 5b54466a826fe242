//go:build linux

package hostchange

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// guardScript waits for its standard input to end: a line "done" means
// the settings were put back; anything else (the pipe closed by this
// process's death, whatever killed it) writes each file's value back.
// It ignores the signals a terminal or a service manager sends a group,
// and runs in a session of its own.
const guardScript = `trap '' INT TERM HUP QUIT PIPE
IFS= read -r line
[ "$line" = done ] && exit 0
while [ $# -ge 2 ]; do printf '%s\n' "$2" > "$1"; shift 2; done
`

// guard is the process that puts settings back if this one dies first.
type guard struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startGuard starts the guardian for files and the values to write back.
func startGuard(files, values []string) (*guard, error) {
	args := []string{"-c", guardScript, "narrows-undo"}
	for i, f := range files {
		args = append(args, f, values[i])
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("no process to put the setting back should narrows be killed (/bin/sh): %w; not changed", err)
	}
	return &guard{cmd: cmd, stdin: in}, nil
}

// startSelfGuard starts this program again as the guardian (Guarding
// tells it so), to put back what args name (undoFrom) should this
// process die first: a setting no shell writes back (an ioctl's).
func startSelfGuard(args []string) (*guard, error) {
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(os.Environ(), guardEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("no process to put the setting back should narrows be killed (this program, again): %w; not changed", err)
	}
	return &guard{cmd: cmd, stdin: in}, nil
}

// release tells the guardian the settings are back, and waits for it.
func (g *guard) release() {
	io.WriteString(g.stdin, "done\n") //nolint:errcheck // a guardian gone writes nothing back
	g.stdin.Close()
	g.wait()
}

// abandon lets the guardian write the settings back itself.
func (g *guard) abandon() {
	g.stdin.Close()
	g.wait()
}

func (g *guard) wait() {
	t := time.AfterFunc(5*time.Second, func() { g.cmd.Process.Kill() }) //nolint:errcheck
	g.cmd.Wait()                                                        //nolint:errcheck
	t.Stop()
}
