// Package selfexec runs the benchmark binary again as a child process in a
// role of its own (a reactor, a replica), so that the child's CPU time is
// its own and a signal stops or kills it as it would a deployed reactor.
// The parent passes a JSON spec in an environment variable and waits for
// the child's JSON ready file; the child writes that file with WriteReady.
//
//   - process.go: Start (the child, its spec and ready file, its log), Process
//     (Pid, Stop with a grace, Kill, Exited, Err) and WriteReady.
//   - die_linux.go, die_other.go: on Linux the kernel kills a child whose
//     parent died (elsewhere nothing does).
//
// It owns only the process plumbing: what a child runs, and what its spec
// and ready file hold, belong to the benchmark that uses it.
package selfexec
