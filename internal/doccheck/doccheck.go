// Package doccheck reads the links and headings of Herald's Markdown
// documents, so that a test can check that every relative link points at
// a file of the repository and, for a #fragment into a Markdown file, at
// one of its headings.
package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is a link target found in a Markdown document.
type Link struct {
	// Line is the 1-based line the link is on.
	Line int
	// Target is the link's destination as written, such as
	// "docs/delivery.md#replay", "#security" or "https://example.com".
	Target string
}

// Relative reports whether the link points into the repository: it has no
// URL scheme (http:, mailto:, ...) and is not protocol-relative.
func (l Link) Relative() bool {
	t := l.Target
	if strings.HasPrefix(t, "//") {
		return false
	}
	if i := strings.IndexAny(t, ":/#?"); i > 0 && t[i] == ':' {
		return false
	}
	return true
}

// Split returns the link's path and its fragment (without '#'); the query,
// if any, is dropped. The path is "" for a link within the same document.
func (l Link) Split() (path, fragment string) {
	t := l.Target
	if i := strings.IndexByte(t, '#'); i >= 0 {
		t, fragment = t[:i], t[i+1:]
	}
	if i := strings.IndexByte(t, '?'); i >= 0 {
		t = t[:i]
	}
	return t, fragment
}

var (
	// inlineLink matches [text](target) and ![alt](target "title").
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink matches a link reference definition: [label]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// codeSpan matches an inline code span of single or double backticks.
	codeSpan = regexp.MustCompile("``[^`]*``|`[^`]*`")
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// Links returns the links of a Markdown document, leaving out those in
// fenced code blocks and in code spans.
func Links(markdown string) []Link {
	var links []Link
	forLines(markdown, func(n int, line string) {
		if m := refLink.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: n, Target: m[1]})
			return
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: m[1]})
		}
	})
	return links
}

// Anchors returns the fragment identifiers GitHub gives the headings of a
// Markdown document: the heading's text in lower case, without
// punctuation, spaces made '-', and "-1", "-2", ... added to repeats.
func Anchors(markdown string) map[string]bool {
	anchors := make(map[string]bool)
	seen := make(map[string]int)
	forLines(markdown, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// markup matches the Markdown of a heading's text that does not show:
// link targets, brackets, emphasis stars and code backticks.
var markup = regexp.MustCompile(`\]\([^)]*\)|[\[\]*` + "`" + `]`)

// Slug is the fragment identifier of a heading's text, as GitHub makes
// it.
func Slug(text string) string {
	text = markup.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// forLines calls fn with each line of markdown outside fenced code
// blocks, and its 1-based number.
func forLines(markdown string, fn func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			c := trimmed[:1]
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, c))]
			continue
		}
		fn(i+1, line)
	}
}
