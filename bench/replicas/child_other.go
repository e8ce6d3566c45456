//go:build !linux

package main

import "os/exec"

// dieWithParent: only Linux can tie a child's life to its parent's; here a
// benchmark that dies unstopped may leave its replicas running.
func dieWithParent(*exec.Cmd) {}
