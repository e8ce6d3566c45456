package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a replica if the benchmark dies
// without stopping it, so no replica outlives its benchmark.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
