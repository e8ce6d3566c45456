package status

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/icereactor/reactor/redact/redacttest"
)

// TestPagesMaskEverySecretShape: a job's error and a failed table read
// holding every shape of secret package redact knows show none of them on
// any page.
func TestPagesMaskEverySecretShape(t *testing.T) {
	src := newFake()
	all := redacttest.All()
	failed := src.jobs.Recent[0]
	failed.Error = "commit: " + all
	src.jobs.Recent[0], src.jobs.Failures[0] = failed, failed
	src.jobs.Last[hostileTable] = failed
	src.perTable[hostileTable] = []Job{failed}
	src.inspect = func(string) (Inspection, error) { return Inspection{}, errors.New("load: " + all) }
	h := Handler(src, Options{Now: func() time.Time { return testNow }})
	for _, path := range []string{"/", "/jobs", "/tables/db.events", "/tables/" + hostileTable} {
		code, _, body := get(t, h, http.MethodGet, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		redacttest.AssertMasked(t, path, body)
	}
}
