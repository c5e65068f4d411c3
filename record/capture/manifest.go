package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

const manifestSuffix = ".manifest.json"

// Manifest describes one recording session in a run folder.
type Manifest struct {
	SchemaVersion string           `json:"schema_version"`
	RunID         string           `json:"run_id"`
	Start         string           `json:"start"` // RFC 3339 with nanoseconds, UTC
	StartNs       int64            `json:"start_ns"`
	End           *string          `json:"end"` // null while recording or after a crash
	EndNs         *int64           `json:"end_ns"`
	Host          string           `json:"host"`
	Version       string           `json:"llmrec_version"`
	Targets       []ManifestTarget `json:"targets"`
	// Config is the effective configuration with secrets removed.
	Config any `json:"config"`
	// Engines holds what each target said about itself once at start.
	Engines map[string][]EngineInfo `json:"engines"`
}

// ManifestTarget is one recorded target.
type ManifestTarget struct {
	Name       string `json:"name"`
	URL        string `json:"url"` // credentials removed
	Engine     string `json:"engine,omitempty"`
	IntervalNs int64  `json:"interval_ns"`
	TimeoutNs  int64  `json:"timeout_ns"`
	// PhaseNs offsets the target's ticks from the session start: tick k is
	// due at start_ns + phase_ns + k*interval_ns. Absent in
	// recordings made before ticks were spread, which had none.
	PhaseNs   int64    `json:"phase_ns,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
}

// EngineInfo is one engine-information endpoint fetched at start.
type EngineInfo struct {
	Path   string          `json:"path"`
	Status int             `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
	JSON   json.RawMessage `json:"json,omitempty"` // the body, when it is JSON
	Text   string          `json:"text,omitempty"` // the body, when it is not
}

// ManifestPath is where run's manifest lives in dir.
func ManifestPath(dir, run string) string { return filepath.Join(dir, run+manifestSuffix) }

// WriteManifest writes m atomically (temporary file, fsync, rename).
func WriteManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	path := ManifestPath(dir, m.RunID)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("sync manifest: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// ReadManifest reads one manifest file.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}
