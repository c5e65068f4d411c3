package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README is read from the repository's root, two folders up.
const (
	readmePath    = "../../README.md"
	recipePath    = "../../docs/ab-recipe.sh"
	ciPath        = "../../.ci/run"
	referencePath = "../../docs/reference.md"
	recipeHeading = "## A/B-test an engine change"
)

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(b)
}

// shBlocks are the ```sh fenced blocks of a Markdown text after the line
// after (all of them when after is ""), in order.
func shBlocks(md, after string) []string {
	lines := strings.Split(md, "\n")
	start := 0
	if after != "" {
		start = -1
		for i, l := range lines {
			if l == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil
		}
	}
	var out []string
	var cur []string
	in := false
	for _, l := range lines[start:] {
		switch {
		case !in && l == "```sh":
			in, cur = true, nil
		case in && l == "```":
			in = false
			out = append(out, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, l)
		}
	}
	return out
}

// TestREADMERecipe: README's "A/B-test an engine change" block is the script
// CI runs (.ci/ab-recipe), line for line, so the two cannot drift apart.
func TestREADMERecipe(t *testing.T) {
	blocks := shBlocks(readRepoFile(t, readmePath), recipeHeading)
	if len(blocks) == 0 {
		t.Fatalf("README.md has no ```sh block under %q", recipeHeading)
	}
	script := readRepoFile(t, recipePath)
	// The script's header runs to its first blank line; the rest is the recipe.
	_, body, ok := strings.Cut(script, "\n\n")
	if !ok {
		t.Fatalf("%s: no blank line after its header", recipePath)
	}
	if blocks[0] != body {
		t.Errorf("README's recipe block and %s differ; make them equal.\nREADME:\n%s\nscript:\n%s", recipePath, blocks[0], body)
	}
}

// TestREADMETestCommand: README's first block names the test command, and
// CI runs exactly it, and README's recipe.
func TestREADMETestCommand(t *testing.T) {
	blocks := shBlocks(readRepoFile(t, readmePath), "")
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```sh block")
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(blocks[0]), "\n") {
		c, _, _ := strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(c))
	}
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "go run ./cmd/llmrec ") || !strings.HasPrefix(cmds[1], "go test ") {
		t.Fatalf("README's first block is not the two commands (run, test): %q", cmds)
	}
	ci := readRepoFile(t, ciPath)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmds[1]) + `$`).MatchString(ci) {
		t.Errorf(".ci/run does not run README's test command %q on a line of its own", cmds[1])
	}
	if !regexp.MustCompile(`(?m)^\.ci/ab-recipe$`).MatchString(ci) {
		t.Error(".ci/run does not run README's A/B recipe (.ci/ab-recipe) on a line of its own")
	}
}

// invocation is `llmrec CMD` (or ./llmrec, or `go run ./cmd/llmrec`) and
// what follows it on a line of a shell block; flags are -x or --x.
var (
	invocation = regexp.MustCompile(`(?:^|[\s;&|(])(?:\./|go run \./cmd/)?llmrec (help |)([a-z]+)((?: [^|;&#>]*)?)`)
	flagWord   = regexp.MustCompile(`(?:^|\s)--?([a-z][a-z0-9-]*)(?:[=\s]|$)`)
	helpFlag   = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	codeSpan   = regexp.MustCompile("`((?:\\./)?llmrec [^`\n]+)`")
)

// TestDocumentedFlagsExist: every flag the README and the reference pass to
// an llmrec command in their shell blocks and code spans is one that
// command's -h lists.
func TestDocumentedFlagsExist(t *testing.T) {
	helps := map[string]string{}
	flagsOf := func(cmd string) string {
		if h, ok := helps[cmd]; ok {
			return h
		}
		var out, errOut bytes.Buffer
		args := []string{cmd, "-h"}
		if cmd == "import" {
			args = []string{"import", "prometheus", "-h"}
		}
		_ = run(context.Background(), &out, &errOut, args)
		helps[cmd] = out.String() + errOut.String()
		return helps[cmd]
	}
	checked := 0
	for _, path := range []string{readmePath, referencePath} {
		md := readRepoFile(t, path)
		// The shell blocks, and the code spans of the prose that start with
		// llmrec, one to a line.
		texts := shBlocks(md, "")
		var spans []string
		for _, m := range codeSpan.FindAllStringSubmatch(md, -1) {
			spans = append(spans, m[1])
		}
		texts = append(texts, strings.Join(spans, "\n"))
		for _, block := range texts {
			// A trailing backslash continues the line.
			text := strings.ReplaceAll(block, "\\\n", " ")
			for _, line := range strings.Split(text, "\n") {
				for _, m := range invocation.FindAllStringSubmatch(line, -1) {
					cmd, rest := m[2], m[3]
					if cmd == "help" { // "llmrec help CMD", a placeholder
						continue
					}
					if _, ok := commands()[cmd]; !ok {
						t.Errorf("%s: %q: llmrec has no command %q", path, strings.TrimSpace(line), cmd)
						continue
					}
					have := map[string]bool{"h": true, "help": true}
					for _, f := range helpFlag.FindAllStringSubmatch(flagsOf(cmd), -1) {
						have[f[1]] = true
					}
					// Each flag word, found by a scan that lets matches share
					// the space between them.
					for i := 0; i < len(rest); {
						loc := flagWord.FindStringSubmatchIndex(rest[i:])
						if loc == nil {
							break
						}
						name := rest[i+loc[2] : i+loc[3]]
						if !have[name] {
							t.Errorf("%s: %q: %s has no flag -%s (see llmrec %s -h)", path, strings.TrimSpace(line), cmd, name, cmd)
						}
						checked++
						i += loc[3]
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d documented flags found: the scan no longer reads the blocks", checked)
	}
}
