package sparkrun

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/sparkcall"
	"github.com/icereactor/reactor/thresholds"
)

// Decision is where a job runs and why.
type Decision struct {
	Backend string `json:"backend"`
	Why     string `json:"why"`
}

// Decide applies the spark rules to job: BackendSpark when a rule selects
// it, else BackendLocal, with the rule or the reason. It needs no table:
// whether Spark can express the job is known only once it is rendered
// (see [Explain], and the Runner, which runs such jobs locally).
func Decide(job jobs.Job, set thresholds.SparkSettings) Decision {
	if job.DryRun {
		return Decision{executor.BackendLocal, "a dry run (one-shot commands run locally)"}
	}
	m := set.Match(job.Table.String(), job.Kind, job.InputBytes, job.InputFiles)
	if m.Rule < 0 {
		return Decision{executor.BackendLocal, m.Why}
	}
	return Decision{executor.BackendSpark, m.Why}
}

// Explain is Decide, and for a job the rules send to Spark, whether
// sparkcall can render it from meta: a job it refuses stays local, and the
// decision says why.
func Explain(job jobs.Job, meta table.Metadata, set thresholds.SparkSettings, catalog string) Decision {
	d := Decide(job, set)
	if d.Backend != executor.BackendSpark {
		return d
	}
	if set.Catalog != "" {
		catalog = set.Catalog
	}
	stmts, err := sparkcall.Render(job, meta, sparkcall.Options{Catalog: catalog})
	switch {
	case errors.Is(err, sparkcall.ErrNotExpressible), errors.Is(err, sparkcall.ErrNoSparkForm):
		return Decision{executor.BackendLocal, fmt.Sprintf("%s, but Spark cannot run it faithfully: %v", d.Why, err)}
	case err != nil:
		return Decision{executor.BackendLocal, fmt.Sprintf("%s, but it cannot be rendered: %v", d.Why, err)}
	case len(stmts) == 0:
		return Decision{executor.BackendLocal, d.Why + ", but there is nothing to send (no partition)"}
	}
	return d
}
