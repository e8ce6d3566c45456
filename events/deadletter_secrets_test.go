package events

import (
	"errors"
	"testing"
	"time"

	"github.com/icereactor/reactor/redact/redacttest"
)

// A dead letter's error header masks every shape of secret, whichever
// caller built it; the payload, the producer's own bytes, is kept as is.
func TestDeadLetterMasksSecrets(t *testing.T) {
	for _, s := range redacttest.Shapes {
		dl := NewDeadLetter("iceberg.commits.db.t", ReasonUnknownTable, errors.New("load db.t: "+s.Text), []byte(`{}`), time.Unix(0, 0))
		for k, vs := range dl.Headers() {
			for _, v := range vs {
				redacttest.AssertMasked(t, s.Name+" in "+k, v)
			}
		}
	}
}
