//go:build linux

package itest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// StartTied starts cmd so that the kernel kills it (SIGKILL) when the test
// process ends, whatever ends it: a test binary killed at its timeout
// left the experiments' agents listening in their namespaces, and their
// narrows runs going, after it. The signal goes when the thread that
// started the child ends, not the process (prctl(2)), and Go ends a
// thread whose goroutine exits locked to it (the testbed's Host.Do may),
// so every tied child is started from one thread kept for the process's
// life (golang/go#27505).
func StartTied(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	starter() <- func() { done <- cmd.Start() }
	return <-done
}

// starter is the goroutine, locked to its thread and never returning,
// that starts the tied children.
var starter = sync.OnceValue(func() chan<- func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for start := range ch {
			start()
		}
	}()
	return ch
})
