package executor

// CrashAt makes e's rewrites stop at point ("before-commit": outputs
// written, nothing committed; "after-commit": committed, intent not yet
// removed) as a killed process would: nothing after it runs.
func CrashAt(e *Executor, point string) { e.crash = func(p string) bool { return p == point } }

// AtCrashPoint runs do at each crash point of e's rewrites and lets the
// job go on.
func AtCrashPoint(e *Executor, do func(point string)) {
	e.crash = func(p string) bool { do(p); return false }
}
