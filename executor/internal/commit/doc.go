// Package commit stages and validates the snapshots reactor's rewrites
// commit, so that a commit attempt costs about what a writer's own commit
// costs however long the table's history is
// (docs/design.md#rule-outputs-written-once).
//
//   - staged.go: Staged, a snapshot that replaces files, its manifests
//     written once; Prepare reads the snapshot it is staged on and decides
//     which delete files are dead.
//   - staged_attempt.go: Advance (follow the commits since the last
//     attempt), ManifestsFor (the next attempt's manifest list), Summary.
//   - validate.go: RewriteInputs, CheckSince, EntriesSince: a commit since
//     the plan that removed an input or added deletes against one ends the
//     rewrite (ErrInputsGone, ErrNewDeletes, ErrDiverged).
//   - filekey.go: FileKey, a removed file's identity (a deletion vector is
//     a blob of a shared Puffin file).
//   - prune.go: the partition filter that skips manifests whose partition
//     summaries prove they hold none of the rewrite's partitions.
//   - summary.go: the snapshot summary iceberg-go would write (file counts,
//     per-partition entries, totals rebased on the parent's).
//   - snapshotwriter.go: SnapshotWriter writes manifests and manifest lists
//     and commits one attempt through the catalog (Commit).
//
// It owns the content of a rewrite's snapshot and its validation against
// concurrent commits. It must not decide what to rewrite or when to retry
// (the executor's). The only files it deletes are the partial ones of its
// own failed writes and the metadata files a table asks to drop after a
// commit (write.metadata.delete-after-commit.enabled, as iceberg-go does).
package commit
