package main

import (
	"path/filepath"
	"strings"
)

// self is how the user ran llmrec, for the commands a hint tells them to
// run next: "llmrec" from PATH, "./llmrec" as typed, or "go run
// ./cmd/llmrec" for a binary "go run" built in a temporary folder (a hint
// naming "llmrec" would name a command that user never built).
var self = "llmrec"

// selfName is self for a program started as arg0 (os.Args[0]).
func selfName(arg0 string) string {
	// go run builds into $TMPDIR/go-buildNNN/bNNN/exe/NAME and starts that.
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") && strings.Contains(filepath.ToSlash(arg0), "/exe/") {
		return "go run ./cmd/llmrec"
	}
	if arg0 == "" || !strings.ContainsRune(arg0, filepath.Separator) {
		return "llmrec" // found in PATH (or unknown)
	}
	return arg0
}
