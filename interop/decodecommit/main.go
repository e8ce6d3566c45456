// Command decodecommit reads one commit event from standard input and decodes
// it with reactor's own decoder (events.DecodeCommit): it prints the decoded
// event as JSON, with the table reactor will refresh, and exits 0; a message
// reactor would dead-letter is reported on standard error with exit status 1.
// The commit reporter's tests (reporter/, Maven Surefire) pipe every event the
// Java side publishes through it, so the Java encoder and the Go decoder
// cannot drift apart; interop/run builds it and passes its path in
// REACTOR_DECODE_COMMIT.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/icereactor/reactor/events"
)

func main() {
	data, err := io.ReadAll(io.LimitReader(os.Stdin, events.MaxPayloadBytes+1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "decodecommit: read:", err)
		os.Exit(2)
	}
	ev, err := events.DecodeCommit(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decodecommit:", err)
		os.Exit(1)
	}
	out := struct {
		events.CommitEvent
		QualifiedName string `json:"qualified_name"`
	}{ev, ev.QualifiedName()}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "decodecommit: write:", err)
		os.Exit(2)
	}
}
