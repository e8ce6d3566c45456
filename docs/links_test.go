package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// inlineLink is a Markdown link or image: [text](target) or
	// [text](target "title").
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	explicitID = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
)

// TestRelativeLinks checks every relative link of every Markdown file in
// the repository: the file it names exists, and the anchor it names (if
// any) is an explicit <a id> or a heading of that file.
func TestRelativeLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]*page{}
	load := func(path string) (*page, error) {
		if p, ok := pages[path]; ok {
			return p, nil
		}
		p, err := readPage(path)
		if err != nil {
			return nil, err
		}
		pages[path] = p
		return p, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d Markdown files under %s", len(files), root)
	}
	for _, file := range files {
		p, err := load(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, l := range p.links {
			target, anchor, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			dest := file
			if target != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				info, err := os.Stat(dest)
				if err != nil {
					t.Errorf("%s:%d: link to %q: %v", rel, l.line, l.target, err)
					continue
				}
				if info.IsDir() || !strings.HasSuffix(dest, ".md") {
					if anchor != "" {
						t.Errorf("%s:%d: link to %q: an anchor in a file that is not Markdown", rel, l.line, l.target)
					}
					continue
				}
			}
			if anchor == "" {
				continue
			}
			dp, err := load(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !dp.anchors[anchor] {
				t.Errorf("%s:%d: link to %q: no anchor %q in %s", rel, l.line, l.target, anchor, filepath.Base(dest))
			}
		}
	}
}

type link struct {
	target string
	line   int
}

type page struct {
	links   []link
	anchors map[string]bool
}

// readPage collects a Markdown file's links (outside code) and anchors:
// explicit <a id="..."> and GitHub's heading anchors.
func readPage(path string) (*page, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, " ") {
			slug := slugify(m[1])
			if n := seen[slug]; n > 0 {
				p.anchors[slug+"-"+itoa(n)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			p.links = append(p.links, link{target: m[1], line: i + 1})
		}
	}
	return p, nil
}

// slugify is GitHub's heading anchor: lower case, markup and punctuation
// dropped (hyphens and underscores kept), spaces as hyphens.
func slugify(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
