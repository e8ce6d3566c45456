package planner

// Timer is what the planner needs of a wake-up timer (Options.AfterFunc):
// *time.Timer is one.
type Timer interface {
	// Stop prevents the timer from firing; false if it already fired or
	// was stopped.
	Stop() bool
}
