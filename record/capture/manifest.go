package capture

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
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
	// Warnings are what the recorder warned of at start (a target whose
	// TLS certificate is not checked); absent when none.
	Warnings []string `json:"warnings,omitempty"`
	// Import, when set, says the session was imported from a metrics
	// store (llmrec import): its rows have samples and no body.
	Import *Import `json:"import,omitempty"`
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
	// ProcessStartHeader is the response header the configuration says
	// carries the process start ("" none): a change of its value (in the
	// headers column) between answers is a restart.
	ProcessStartHeader string `json:"process_start_header,omitempty"`
	// Presence are the intervals the target was in the run's target set,
	// in order, for a run whose targets are discovered (file_sd files
	// re-read, DNS names re-resolved): a target that leaves and returns
	// has two. Absent in a run without discovery: every target is present
	// from start to end.
	Presence []Presence `json:"presence,omitempty"`
}

// Presence is one interval a discovered target was scraped: from its
// join until its leave. LeaveNs is null while it is present, and stays
// null for a target present when the session ended (or crashed): the
// session's end bounds it.
type Presence struct {
	JoinNs  int64  `json:"join_ns"`
	LeaveNs *int64 `json:"leave_ns"`
	// URL is the address scraped in this interval (credentials removed),
	// when it differs from the target's URL (a pod back at a new address
	// under the same llmrec_name).
	URL string `json:"url,omitempty"`
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

// WriteManifest writes m atomically: to a temporary file, fsynced, then
// renamed; on failure (a full disk) the temporary file is removed. An
// empty SchemaVersion is this llmrec's.
func WriteManifest(dir string, m Manifest) (err error) {
	if m.SchemaVersion == "" {
		m.SchemaVersion = SchemaVersion
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	path := ManifestPath(dir, m.RunID)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := lockTemp(f); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync manifest: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// MaxTimeout bounds a target's timeout: the recorder's config takes no
// larger one, so a manifest that holds one was edited or damaged.
const MaxTimeout = 24 * time.Hour

// ReadManifest reads one manifest file. A schema version this llmrec does
// not read and values no recording has (an interval or a timeout of zero or
// less, a timeout over a day, an end before the start) are errors naming
// the file.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest %s: %w", path, err)
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

// check rejects what no recorder writes.
func (m *Manifest) check() error {
	if !readableVersion(m.SchemaVersion) {
		return fmt.Errorf("schema version %q, this llmrec reads \"1\" and %q", m.SchemaVersion, SchemaVersion)
	}
	if m.EndNs != nil && *m.EndNs < m.StartNs {
		return fmt.Errorf("end_ns %d is before start_ns %d", *m.EndNs, m.StartNs)
	}
	if m.End != nil && m.Start != "" {
		start, err1 := time.Parse(time.RFC3339Nano, m.Start)
		end, err2 := time.Parse(time.RFC3339Nano, *m.End)
		if err1 == nil && err2 == nil && end.Before(start) {
			return fmt.Errorf("end %s is before start %s", *m.End, m.Start)
		}
	}
	for _, t := range m.Targets {
		if t.IntervalNs <= 0 {
			return fmt.Errorf("target %q: interval_ns %d, want more than 0", t.Name, t.IntervalNs)
		}
		if t.TimeoutNs <= 0 || t.TimeoutNs > int64(MaxTimeout) {
			return fmt.Errorf("target %q: timeout_ns %d, want more than 0 and at most %s", t.Name, t.TimeoutNs, MaxTimeout)
		}
		last := int64(math.MinInt64)
		for i, p := range t.Presence {
			if p.JoinNs < last || (p.LeaveNs != nil && *p.LeaveNs < p.JoinNs) || (p.LeaveNs == nil && i < len(t.Presence)-1) {
				return fmt.Errorf("target %q: presence %d is out of order", t.Name, i+1)
			}
			if p.LeaveNs != nil {
				last = *p.LeaveNs
			}
		}
	}
	return nil
}
