// Package events owns reactor's wire formats: the commit event streaming
// writers publish, the bucket notifications object stores publish, the
// dead-letter record reactor publishes for input it cannot use, the job
// lifecycle events it publishes, and the decoders for the inputs.
//
// It decodes and validates bytes into typed values and nothing else: it must
// not talk to NATS, the catalog or the planner, so that every format can be
// tested and benchmarked on its own.
package events
