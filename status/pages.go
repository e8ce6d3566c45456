package status

import (
	"embed"
	"html/template"
)

//go:embed pages/*.html
var pageFiles embed.FS

type page = *template.Template

// pages are the parsed templates, one set per page, each with the layout.
type pages struct {
	overview, table, jobs, fail page
}

func parsePages() pages {
	parse := func(name string) page {
		return template.Must(template.New("layout.html").ParseFS(pageFiles, "pages/layout.html", "pages/jobs.tmpl.html", "pages/"+name))
	}
	return pages{overview: parse("overview.html"), table: parse("table.html"), jobs: parse("jobs.html"), fail: parse("fail.html")}
}
