package record

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/llmrec/llmrec/record/redact"

	"go.yaml.in/yaml/v3"
)

// File-based discovery reads Prometheus' file_sd target files, so a fleet
// already described for Prometheus (or generated from a Kubernetes
// Service's endpoints) is recorded without a second list:
//
//	[{"targets": ["10.0.0.7:8000", "10.0.0.8:8000"],
//	  "labels": {"llmrec_engine": "vllm", "__scheme__": "https", "pool": "a"}}]
//
// Rules, as Prometheus reads the same file where it has one:
//   - each address of a group is one target: __scheme__ (default http),
//     the address, __metrics_path__ (default /metrics);
//   - the target's name is its llmrec_name label, else its address; an
//     address's characters a name cannot hold ([ ] of IPv6) become _;
//   - llmrec_engine is the engine hint; the group's other labels are kept
//     in the manifest (labels starting with __ are Prometheus' own and
//     are not);
//   - every other option (interval, timeout, TLS) is the config's default;
//   - a pattern matches files as filepath.Glob does; at start one that
//     matches none is an error, as is a file that is not a list of groups
//     (JSON, or YAML for a name ending .yml or .yaml), named with its line
//     (never quoting its bytes: a file_sd file may hold credentials);
//   - only regular files are read (a FIFO, a device or a folder the
//     pattern matches is refused, never opened to wait on), at most
//     MaxFileSDBytes of each, and at most MaxTargets targets of a file;
//   - __scheme__ is http or https, nothing else;
//   - labels are written down as a configuration's headers are: a label
//     whose name looks like a credential (key, token, secret, password,
//     auth, ...) becomes a digest, and every value has its URLs redacted.
//
// The files are read when the config is validated, then again while
// recording whenever one changes (see discovery.go): targets added join
// the run, targets removed leave it.

// Labels of a file_sd group that llmrec reads.
const (
	FileSDNameLabel   = "llmrec_name"
	FileSDEngineLabel = "llmrec_engine"
)

// MaxFileSDBytes bounds one file_sd file: 2,000 targets with a few labels
// each take about 1 MB.
const MaxFileSDBytes = 4 << 20

// targetGroup is one group of a file_sd file.
type targetGroup struct {
	Targets []string          `json:"targets" yaml:"targets"`
	Labels  map[string]string `json:"labels" yaml:"labels"`
}

var unnameable = regexp.MustCompile(`[^A-Za-z0-9_.:-]`)

// fileSDTargets reads the target files matching patterns.
func fileSDTargets(patterns []string) ([]Target, error) {
	var out []Target
	for _, p := range patterns {
		files, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("file_sd %q: %w", p, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("file_sd %q: no file matches", p)
		}
		for _, f := range files {
			ts, err := readFileSD(f)
			if err != nil {
				return nil, err
			}
			out = append(out, ts...)
			// Rule: past the cap no more files are read.
			if len(out) > MaxTargets {
				return nil, fmt.Errorf("file_sd %s: the files read so far name %d targets; one recorder takes at most %d", filepath.Base(f), len(out), MaxTargets)
			}
		}
	}
	return out, nil
}

// readFileSD reads one target file. Errors name the file by its base name
// (a path may name a user) and the group.
func readFileSD(path string) ([]Target, error) {
	b, err := readSDFile(path)
	if err != nil {
		return nil, err
	}
	return parseFileSD(path, b)
}

// readSDFile reads a file_sd file when it is a regular file of at most
// MaxFileSDBytes. It is opened without blocking (a FIFO swapped in after
// the check is not waited on) and checked again once open.
func readSDFile(path string) ([]byte, error) {
	base := filepath.Base(path)
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("file_sd: %w", plainFileError(err))
	}
	if err := regularSD(base, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("file_sd: %w", plainFileError(err))
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("file_sd: %w", plainFileError(err))
	}
	if err := regularSD(base, st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSDBytes+1))
	if err != nil {
		return nil, fmt.Errorf("file_sd %s: %w", base, plainFileError(err))
	}
	if len(b) > MaxFileSDBytes {
		return nil, fmt.Errorf("file_sd %s: larger than %d bytes, the most a target file may hold", base, MaxFileSDBytes)
	}
	return b, nil
}

// regularSD refuses a file_sd file that is not a regular file or is over
// the size cap.
func regularSD(base string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("file_sd %s: not a regular file (%s): not read", base, st.Mode().Type())
	}
	if st.Size() > MaxFileSDBytes {
		return fmt.Errorf("file_sd %s: %d bytes, larger than %d, the most a target file may hold", base, st.Size(), MaxFileSDBytes)
	}
	return nil
}

// yamlLine finds the first "line N" of a YAML error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseFileSD reads the groups of one target file's content: YAML when
// its name ends .yml or .yaml, else JSON. A syntax error names the line.
func parseFileSD(path string, b []byte) ([]Target, error) {
	base := filepath.Base(path)
	var groups []targetGroup
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yml" || ext == ".yaml" {
		// yaml's errors say "line N: ..." and may quote the file's
		// bytes (cannot unmarshal !!str `...`): only the line is said.
		if err := yaml.Unmarshal(b, &groups); err != nil {
			where := base
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				where += ":" + m[1]
			}
			return nil, fmt.Errorf("file_sd %s: not a YAML list of target groups", where)
		}
	} else if err := json.Unmarshal(b, &groups); err != nil {
		return nil, fmt.Errorf("file_sd %s:%d: not a JSON list of target groups (%v)", base, jsonLine(b, err), err)
	}
	n := 0
	for _, g := range groups {
		n += len(g.Targets)
	}
	if n > MaxTargets {
		return nil, fmt.Errorf("file_sd %s: %d targets, more than the %d one recorder takes", base, n, MaxTargets)
	}
	var out []Target
	for i, g := range groups {
		scheme := cmp.Or(g.Labels["__scheme__"], "http")
		if scheme != "http" && scheme != "https" {
			return nil, fmt.Errorf("file_sd %s: group %d: __scheme__ is neither http nor https (it is not quoted: it may hold a URL with credentials)", base, i+1)
		}
		path := cmp.Or(g.Labels["__metrics_path__"], "/metrics")
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("file_sd %s: group %d: __metrics_path__ %q must start with /", base, i+1, redact.URL(path))
		}
		if len(g.Targets) > 1 && g.Labels[FileSDNameLabel] != "" {
			return nil, fmt.Errorf("file_sd %s: group %d: %s names one target, the group has %d", base, i+1, FileSDNameLabel, len(g.Targets))
		}
		kept := map[string]string{}
		for k, v := range g.Labels {
			if !strings.HasPrefix(k, "__") && k != FileSDNameLabel && k != FileSDEngineLabel {
				kept[k] = v
			}
		}
		for _, addr := range g.Targets {
			if addr == "" || strings.ContainsAny(addr, "/?#@") {
				return nil, fmt.Errorf("file_sd %s: group %d: target %q is not host:port", base, i+1, redact.Text(addr))
			}
			t := Target{
				Name:   cmp.Or(g.Labels[FileSDNameLabel], unnameable.ReplaceAllString(addr, "_")),
				URL:    scheme + "://" + addr + path,
				Engine: g.Labels[FileSDEngineLabel],
				FileSD: base,
			}
			if len(kept) > 0 {
				t.Labels = maps.Clone(kept)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// jsonLine is the line of a JSON decoding error (1 when it has no offset).
func jsonLine(b []byte, err error) int {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	off = min(off, int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// withFileSD returns the config's own targets (those of an earlier
// reading dropped) followed by the targets its file_sd files name now.
func (c *Config) withFileSD() ([]Target, error) {
	own := slices.DeleteFunc(slices.Clone(c.Targets), func(t Target) bool { return t.FileSD != "" })
	if len(c.FileSD) == 0 {
		return own, nil
	}
	found, err := fileSDTargets(c.FileSD)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, errors.New("file_sd: the files name no target")
	}
	return append(own, found...), nil
}
