package docgen

import (
	"fmt"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	// Lang is the first word of the opening fence's info string ("go").
	Lang string
	// Text is the block's content: the lines between the fences, each
	// ending in a newline.
	Text string
	// Line is the 1-based line of the opening fence.
	Line int
	// Key and Value come from a marker comment `<!-- key: value -->` on the
	// line right above the opening fence; both are "" when there is none.
	Key, Value string
}

// Blocks returns the fenced code blocks of a Markdown document, in order.
// A fence is a line starting with three backticks at the left margin. It
// fails on a block that is never closed.
func Blocks(md string) ([]Block, error) {
	lines := strings.SplitAfter(md, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		open := strings.TrimRight(lines[i], "\n")
		if !strings.HasPrefix(open, "```") {
			continue
		}
		b := Block{Line: i + 1}
		if f := strings.Fields(strings.TrimPrefix(open, "```")); len(f) > 0 {
			b.Lang = f[0]
		}
		if i > 0 {
			b.Key, b.Value = marker(strings.TrimSpace(lines[i-1]))
		}
		var text strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimRight(lines[i], "\n") == "```" {
				closed = true
				break
			}
			text.WriteString(lines[i])
		}
		if !closed {
			return nil, fmt.Errorf("docgen: the code block opened on line %d is never closed", b.Line)
		}
		b.Text = text.String()
		if b.Text != "" && !strings.HasSuffix(b.Text, "\n") {
			b.Text += "\n"
		}
		out = append(out, b)
	}
	return out, nil
}

// marker parses `<!-- key: value -->`.
func marker(line string) (key, value string) {
	inner, ok := strings.CutPrefix(line, "<!--")
	if !ok {
		return "", ""
	}
	inner, ok = strings.CutSuffix(inner, "-->")
	if !ok {
		return "", ""
	}
	key, value, ok = strings.Cut(strings.TrimSpace(inner), ":")
	if !ok {
		return "", ""
	}
	return strings.TrimSpace(key), strings.TrimSpace(value)
}

// Contains reports whether the lines of block appear, in order and
// contiguous, among the lines of code, comparing each line without its
// leading tabs: a block may show at the left margin code that sits
// indented in a function body. A blank block is contained nowhere.
func Contains(code, block string) bool {
	if strings.TrimSpace(block) == "" {
		return false
	}
	want := untabbed(block)
	have := untabbed(code)
	for i := 0; i+len(want) <= len(have); i++ {
		match := true
		for j := range want {
			if have[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func untabbed(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return lines
}
