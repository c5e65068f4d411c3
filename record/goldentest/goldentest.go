// Package goldentest compares a test's output with a golden file, and
// rewrites the file instead when the tests run with -update:
//
//	go test ./render -update
//
// It is the one golden helper of the project's tests (record, analyze,
// render import it), so every package's -update means the same.
package goldentest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// Update reports whether the tests run with -update.
func Update() bool { return *update }

// Check compares got with the file at path; with -update it writes got
// there instead. A difference fails t with the first lines that differ.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("output differs from %s (go test -update rewrites it, after checking):\n%s", path, Diff(string(want), string(got)))
	}
}

// Diff lists the first 20 lines that differ between want and got, each
// cut to 300 bytes.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(w), len(g)) && n < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %.300q\n  got  %.300q\n", i+1, wl, gl)
			n++
		}
	}
	if len(w) != len(g) {
		fmt.Fprintf(&b, "%d lines, want %d\n", len(g), len(w))
	}
	return b.String()
}
