// Package docs holds reactor's reference pages (Markdown, beside this file):
// design.md (the design, safety rules and pitfalls), configuration.md,
// cli.md, events.md, operations.md, alerts.md, status-page.md and
// development.md (with the one layout list of the repository); the front
// page is the repository's README.md and the benchmarks page its
// BENCHMARKS.md.
//
// It has no code, only tests that keep the pages true to the tree:
//
//   - links_test.go: every relative link of every Markdown page in the
//     repository names a file that exists and, with an anchor, an anchor
//     that page has (an explicit <a id> or a heading).
//   - citations_test.go: every anchor of design.md a Go file cites is there.
//   - packagedocs_test.go: every package's doc names each of its non-test Go
//     files and none that does not exist; development.md#layout lists every
//     Go package and every directory at the top.
//   - trace_test.go: design.md#one-event, the newcomer's trace of one commit
//     event, has at most 12 steps, and every function it names is declared
//     in its package, in a file the step links.
//   - filecount_test.go: no library package holds more than 20 non-test Go
//     files at its top level (cmd/, bench/ and interop/ aside).
//   - vocabulary_test.go: no Go file outside jobkind and sparkcall spells
//     two or more job kinds as strings (a copied kind list).
package docs
