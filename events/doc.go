// Package events owns reactor's wire formats: the commit event streaming
// writers publish, the bucket notifications object stores publish, the
// dead-letter record reactor publishes for input it cannot use, the job
// lifecycle events it publishes, and the decoders for the inputs.
//
// It decodes and validates bytes into typed values and nothing else: it must
// not talk to NATS, the catalog or the planner, so that every format can be
// tested and benchmarked on its own.
//
// # Files
//
//   - commit.go: [CommitEvent], the commit event streaming writers publish,
//     its decoder and limits; [ErrMalformed] marks input to dead-letter.
//   - notification.go: bucket notifications, MinIO's envelope and plain S3
//     Records, decoded into object events with the source's key encoding.
//   - job.go: the job lifecycle events reactor publishes and their subjects
//     ([DefaultJobSubjectPrefix], [JobSubject]).
//   - deadletter.go: [DeadLetter], the record of input reactor acknowledged
//     without applying: the original payload as the body, what happened in
//     headers, and its decoder.
package events
