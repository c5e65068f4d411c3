// Package duckdbtest runs SQL in DuckDB itself, for the tests that check
// that recordings open there: the npm package @duckdb/node-api, which
// .ci/run installs, through .ci/duckdb/query.mjs.
package duckdbtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Query runs each statement and returns its rows. Outside CI it skips the
// test when node or the package is missing; in CI (CI=true) that fails.
func Query(t testing.TB, sql ...string) [][]map[string]any {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", ".ci", "duckdb", "query.mjs")
	modules := filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(modules)
	if nodeErr != nil || modErr != nil {
		msg := fmt.Sprintf("DuckDB unavailable (node: %v; module: %v); run: (cd .ci/duckdb && npm ci)", nodeErr, modErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command("node", append([]string{script}, sql...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var res [][]map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var rows []map[string]any
		if err := json.Unmarshal(line, &rows); err != nil {
			t.Fatalf("duckdb output %q: %v", line, err)
		}
		res = append(res, rows)
	}
	return res
}
