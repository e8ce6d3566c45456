package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill reactor if the soak dies without
// stopping it (a crash, SIGKILL), so no reactor outlives its benchmark.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
