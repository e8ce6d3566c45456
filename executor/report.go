package executor

import "github.com/icereactor/reactor/planner"

// Count is one named result count.
type Count struct {
	Name  string
	Value int64
}

// ProcedureCounts returns the report as the result columns of the Spark
// procedure equivalent to the job's kind, in the procedure's order, so that
// reactor's numbers read like the ones users compare them with
// (rewrite_data_files, expire_snapshots, remove_orphan_files,
// rewrite_manifests).
func (r Report) ProcedureCounts(kind planner.JobKind) []Count {
	switch kind {
	case planner.KindCompact, planner.KindSort:
		return []Count{
			{"rewritten_data_files_count", int64(r.RewrittenDataFiles)},
			{"added_data_files_count", int64(r.AddedDataFiles)},
			{"rewritten_bytes_count", r.RewrittenBytes},
			{"failed_data_files_count", int64(r.FailedDataFiles)},
			{"removed_delete_files_count", int64(r.RemovedDeleteFiles)},
		}
	case planner.KindRewritePositionDeletes:
		return []Count{
			{"rewritten_delete_files_count", int64(r.RewrittenDeleteFiles)},
			{"added_delete_files_count", int64(r.AddedDeleteFiles)},
			{"rewritten_bytes_count", r.RewrittenDeleteBytes},
			{"added_bytes_count", r.AddedDeleteBytes},
			{"dangling_deletes_removed_count", r.DanglingDeleteRows},
		}
	case planner.KindExpireSnapshots:
		// Files expiry unlinks are deleted min_reader_margin later, by the
		// delete_expired_files pass that reports them: here they are
		// deferred, not deleted (unless the margin is zero).
		x := r.Expiry
		deferred := int64(0)
		if x.Deferred {
			deferred, x = int64(x.Files()), ExpiryCounts{ExpiredSnapshots: x.ExpiredSnapshots}
		}
		return append(expiryCounts(x), Count{"expired_snapshots_count", int64(x.ExpiredSnapshots)},
			Count{"deletion_deferred_files_count", deferred})
	case planner.KindRemoveOrphans:
		return []Count{
			{"orphan_files_count", int64(len(r.Orphans.Orphans))},
			{"orphan_bytes_count", r.Orphans.OrphanBytes},
			{"deleted_files_count", int64(r.Orphans.DeletedFiles)},
			// reactor's own: candidates kept because the history
			// references them, the store says they are younger than the
			// margin, or they were refused (see reactor_orphans_refused_total).
			{"still_referenced_files_count", int64(r.Orphans.StillReferenced)},
			{"too_young_files_count", int64(r.Orphans.TooYoung)},
			{"refused_files_count", int64(r.Orphans.RefusedFiles)},
		}
	case planner.KindDeleteExpiredFiles:
		return append(expiryCounts(r.Expiry), Count{"still_referenced_files_count", int64(r.Orphans.StillReferenced)})
	case planner.KindRewriteManifests:
		return []Count{
			{"rewritten_manifests_count", int64(r.ManifestsRewritten)},
			{"added_manifests_count", int64(r.ManifestsAdded)},
		}
	}
	return nil
}

// CountMap is ProcedureCounts keyed by name (for JSON).
func (r Report) CountMap(kind planner.JobKind) map[string]int64 {
	counts := r.ProcedureCounts(kind)
	m := make(map[string]int64, len(counts))
	for _, c := range counts {
		m[c.Name] = c.Value
	}
	return m
}

// expiryCounts are expire_snapshots' deleted-file columns.
func expiryCounts(x ExpiryCounts) []Count {
	return []Count{
		{"deleted_data_files_count", int64(x.DeletedDataFiles)},
		{"deleted_position_delete_files_count", int64(x.DeletedPositionDeleteFiles)},
		{"deleted_equality_delete_files_count", int64(x.DeletedEqualityDeleteFiles)},
		{"deleted_manifest_files_count", int64(x.DeletedManifests)},
		{"deleted_manifest_lists_count", int64(x.DeletedManifestLists)},
		{"deleted_statistics_files_count", int64(x.DeletedStatisticsFiles)},
	}
}
