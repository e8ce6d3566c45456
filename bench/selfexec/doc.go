// Package selfexec runs the benchmark binary again as a child process in a
// role of its own (a reactor, a replica), so that the child's CPU time is
// its own and a signal stops or kills it as it would a deployed reactor.
// The parent passes a JSON spec in an environment variable and waits for
// the child's JSON ready file; the child writes that file with WriteReady.
//
// It owns only the process plumbing: what a child runs, and what its spec
// and ready file hold, belong to the benchmark that uses it.
package selfexec
