package record

import (
	"os"
	"testing"
)

// TestMain serves the cadence benchmark's hostile targets when the binary
// is started as their server (see hostileEnv).
func TestMain(m *testing.M) {
	if os.Getenv(hostileEnv) == "1" {
		serveHostile()
		return
	}
	os.Exit(m.Run())
}
