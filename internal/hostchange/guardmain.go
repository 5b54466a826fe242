package hostchange

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// guardEnv marks this program started as a guardian (startSelfGuard).
const guardEnv = "NARROWS_HOSTCHANGE_GUARDIAN"

// A program started as a change's guardian is the guardian and nothing
// else: any program that can change a setting imports this package, its
// tests' binaries too, so the guardian is started before main (or the
// tests) would run, as Docker's reexec does.
func init() {
	if os.Getenv(guardEnv) == "1" {
		os.Exit(Guard())
	}
}

// Guard is the guardian's life: it waits for its standard input to end;
// a line "done" means the change was put back; anything else (the pipe
// closed by its starter's death, whatever killed it) puts back what its
// arguments name. It ignores the signals a terminal or a service manager
// sends a group (it runs in a session of its own). Its exit code.
func Guard() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if line == "done\n" {
		return 0
	}
	if err := undoFrom(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "narrows: putting a setting back:", err)
		return 1
	}
	return 0
}
