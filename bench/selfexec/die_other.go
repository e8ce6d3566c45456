//go:build !linux

package selfexec

import "os/exec"

// dieWithParent: only Linux can tie a child's life to its parent's; here a
// parent that dies unstopped may leave its children running.
func dieWithParent(*exec.Cmd) {}
