// Package docs holds reactor's reference pages (Markdown, beside this file):
// design.md (the design, safety rules and pitfalls), configuration.md,
// cli.md, events.md, operations.md and development.md; the front page is the
// repository's README.md and the benchmarks page its BENCHMARKS.md.
//
// It has no code. Its test checks that every relative link of every
// Markdown page in the repository names a file that exists and, with an
// anchor, an anchor that page has (an explicit <a id> or a heading).
package docs
