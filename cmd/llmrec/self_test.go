package main

import (
	"strings"
	"testing"
)

func TestSelfName(t *testing.T) {
	for _, c := range []struct{ arg0, want string }{
		{"llmrec", "llmrec"},
		{"./llmrec", "./llmrec"},
		{"bin/llmrec", "bin/llmrec"},
		{"/tmp/go-build3051/b001/exe/llmrec", "go run ./cmd/llmrec"},
		{"/root/.cache/go-build/ab/cd/exe/llmrec", "go run ./cmd/llmrec"},
		{"/usr/local/bin/llmrec", "/usr/local/bin/llmrec"},
		{"", "llmrec"},
	} {
		if got := selfName(c.arg0); got != c.want {
			t.Errorf("selfName(%q) = %q, want %q", c.arg0, got, c.want)
		}
	}
}

// A hint names the command the way the user ran it.
func TestHintsNameSelf(t *testing.T) {
	defer func(s string) { self = s }(self)
	self = "go run ./cmd/llmrec"
	var out, errOut strings.Builder
	err := run(t.Context(), &out, &errOut, []string{"inspect", "--jsn"})
	if err == nil || !strings.Contains(err.Error(), "see go run ./cmd/llmrec inspect -h") {
		t.Fatalf("mistyped flag: %v, want a pointer to 'go run ./cmd/llmrec inspect -h'", err)
	}
	out.Reset()
	usage(&out)
	if !strings.Contains(out.String(), `Run "go run ./cmd/llmrec COMMAND -h"`) {
		t.Errorf("usage does not name how llmrec was run:\n%s", out.String())
	}
}
