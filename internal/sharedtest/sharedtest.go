// Package sharedtest finds, for tests, the material kept beside the
// repository in ../shared (real captures, real runs), which is never
// copied into it.
package sharedtest

import (
	"os"
	"testing"
)

// Required names the environment variable under which an absent item of
// ../shared fails its test instead of skipping it. .ci/run sets it to
// "true" when ../shared is beside the clone: a real run renamed or moved
// there fails, where a clone with no ../shared at all skips (and .ci/run
// says so).
const Required = "LLMREC_SHARED_REQUIRED"

// Need skips t when path (what, for the message) is absent, or fails it
// under Required=true.
func Need(t testing.TB, path, what string) {
	t.Helper()
	_, err := os.Stat(path)
	// Present: nothing to say.
	if err == nil {
		return
	}
	if os.Getenv(Required) == "true" {
		t.Fatalf("%s absent under %s=true (../shared is beside the repository): %v", what, Required, err)
	}
	t.Skipf("%s absent (the shared material beside the repository, ../shared): %v", what, err)
}
