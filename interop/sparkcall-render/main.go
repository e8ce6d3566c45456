// Command sparkcall-render prints, as JSON, the Spark procedure calls that
// stand for the job reactor's one-shot command of the same kind would run
// on a table now: planner.ManualJob builds the job exactly as `reactor
// compact|rewrite-deletes|expire|orphans|rewrite-manifests` does, and
// sparkcall.Render renders it. The interop harness (interop/run) runs every
// statement in Spark and checks its result columns.
//
//	sparkcall-render --catalog-uri URI --warehouse W --catalog-name lake \
//	    --kind compact [--partition KEY]... [--thresholds FILE] db.events
//
// It exits 0 with {"job": ..., "statements": [...]}, 3 with {"error": ...}
// when the job has no Spark form, 2 on bad arguments, 1 on other errors.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/sparkcall"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

type partitionList []string

func (l *partitionList) String() string     { return strings.Join(*l, ",") }
func (l *partitionList) Set(s string) error { *l = append(*l, s); return nil }

type output struct {
	Job *jobSummary `json:"job,omitempty"`
	// ExtraPartitions are partitions planner.ManualJob put in the job
	// although --partition did not name them (a reactor bug while it
	// happens); they are left out of the statements.
	ExtraPartitions []string              `json:"manualjob_extra_partitions,omitempty"`
	Statements      []sparkcall.Statement `json:"statements,omitempty"`
	Error           string                `json:"error,omitempty"`
}

type jobSummary struct {
	Kind       jobkind.Kind `json:"kind"`
	Table      string       `json:"table"`
	Partitions []string     `json:"partitions,omitempty"`
}

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("sparkcall-render", flag.ContinueOnError)
	uri := fs.String("catalog-uri", "", "SQL catalog DSN (SQLite file URI)")
	warehouse := fs.String("warehouse", "", "warehouse location")
	name := fs.String("catalog-name", "lake", "catalog name, shared by iceberg-go's SQL catalog and Spark's JdbcCatalog")
	sparkCatalog := fs.String("spark-catalog", "", "Spark catalog name (default: --catalog-name)")
	thresholdsFile := fs.String("thresholds", "", "thresholds YAML file")
	kind := fs.String("kind", "", "job kind: compact, rewrite_position_deletes, sort, expire_snapshots, remove_orphans, rewrite_manifests")
	var partitions partitionList
	fs.Var(&partitions, "partition", "partition key, repeatable (default: every partition)")
	olderThan := fs.Duration("older-than", 0, "expiry horizon or orphan margin (0: configured)")
	retainLast := fs.Int("retain-last", 0, "retain_last (0: configured)")
	orphanDelete := fs.Bool("orphan-delete", false, "remove_orphans may delete (dry_run => false)")
	sortOrder := fs.String("sort-order", "", "sort: the order in Spark's syntax (zorder(...) for a z-order)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *uri == "" || *kind == "" {
		fmt.Fprintln(os.Stderr, "usage: sparkcall-render --catalog-uri URI --kind KIND [flags] namespace.table")
		return 2
	}
	if *sparkCatalog == "" {
		*sparkCatalog = *name
	}
	cfg := thresholds.Default()
	if *thresholdsFile != "" {
		var err error
		if cfg, err = thresholds.Load(*thresholdsFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	ctx := context.Background()
	cat, err := catalog.Load(ctx, *name, iceberg.Properties{
		"type": "sql", "uri": *uri, "warehouse": *warehouse,
		"sql.driver": sqliteshim.ShimName, "sql.dialect": "sqlite",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open catalog:", err)
		return 1
	}
	tableArg := fs.Arg(0)
	ident, err := tablename.Parse(tableArg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load table:", err)
		return 1
	}
	now := time.Now()
	strategy := thresholds.StrategySort
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(*sortOrder)), "zorder") {
		strategy = thresholds.StrategyZOrder
	}
	k, err := jobkind.Parse(*kind)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, k, planner.ManualOptions{
		Partitions: partitions, OlderThan: *olderThan, RetainLast: *retainLast, OrphanDelete: *orphanDelete,
		Strategy: strategy, SortOrder: *sortOrder,
	}, now)
	if err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		return 2
	}
	var extra []string
	if len(partitions) > 0 {
		want := map[string]bool{}
		for _, k := range partitions {
			want[k] = true
		}
		kept := job.Partitions[:0:0]
		for _, p := range job.Partitions {
			if want[p.Key] {
				kept = append(kept, p)
			} else {
				extra = append(extra, p.Key)
			}
		}
		job.Partitions = kept
	}
	out := output{Job: &jobSummary{Kind: job.Kind, Table: job.Table.String(), Partitions: job.PartitionKeys()}, ExtraPartitions: extra}
	code := 0
	out.Statements, err = sparkcall.Render(job, tbl.Metadata(), sparkcall.Options{Catalog: *sparkCatalog, Now: now})
	if err != nil {
		out.Error = err.Error()
		code = 1
		if errors.Is(err, sparkcall.ErrNoSparkForm) || errors.Is(err, sparkcall.ErrNotExpressible) {
			code = 3
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return 1
	}
	return code
}
