package executor

import (
	"context"
	"errors"
	"log/slog"

	"github.com/icereactor/reactor/planner"
)

// rewritePositionDeletes is implemented in this file (in progress).
func (e *Executor) rewritePositionDeletes(ctx context.Context, log *slog.Logger, job planner.Job) (planner.Result, Report) {
	return planner.Result{Outcome: planner.Failed, Err: errors.New("rewrite_position_deletes: not implemented yet")}, Report{}
}
