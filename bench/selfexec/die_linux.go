package selfexec

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the child if the parent dies without
// stopping it, so no child outlives its benchmark.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
