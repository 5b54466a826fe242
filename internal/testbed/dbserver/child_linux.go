//go:build linux

package dbserver

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// asChild makes cmd die with the test process (signal sig when it goes)
// and, as root, run as user u.
func asChild(cmd *exec.Cmd, u string, sig syscall.Signal) error {
	attr := &syscall.SysProcAttr{Pdeathsig: sig, Setpgid: true}
	if u != "" && os.Geteuid() == 0 {
		usr, err := user.Lookup(u)
		if err != nil {
			return err
		}
		uid, _ := strconv.Atoi(usr.Uid)
		gid, _ := strconv.Atoi(usr.Gid)
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	cmd.SysProcAttr = attr
	return nil
}
