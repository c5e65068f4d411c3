package goldentest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that notes whether a check failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

// Equal output passes; different output fails naming the lines; a missing
// golden file fails; -update writes the file instead of comparing.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	os.WriteFile(path, []byte("a\nb\n"), 0o644)
	for _, c := range []struct {
		got  string
		fail bool
	}{{"a\nb\n", false}, {"a\nc\n", true}} {
		r := &recorder{TB: t}
		Check(r, path, []byte(c.got))
		if r.failed != c.fail {
			t.Errorf("%q: failed %v, want %v", c.got, r.failed, c.fail)
		}
	}
	r := &recorder{TB: t}
	Check(r, path+".missing", []byte("a"))
	if !r.failed {
		t.Error("a missing golden file passed")
	}
	*update = true
	defer func() { *update = false }()
	if !Update() {
		t.Fatal("Update is false under -update")
	}
	Check(t, path, []byte("new\n"))
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("-update wrote %q", b)
	}
}

func TestDiff(t *testing.T) {
	d := Diff("a\nb\nc", "a\nx\nc\nd")
	for _, want := range []string{"line 2:", `want "b"`, `got  "x"`, "line 4:", "4 lines, want 3"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}
