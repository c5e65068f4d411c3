package capture

import (
	"errors"
	"path/filepath"
)

// Import says that a session was read from a metrics store that had
// scraped the targets (llmrec import prometheus), not scraped by llmrec:
// its rows carry samples and no body, their one time is the store's
// scrape timestamp (to the millisecond), and what a recorder measures of a
// scrape (when the request went out, its first byte, its body) is not
// known. A manifest without it is a recording.
type Import struct {
	// Source is the kind of store ("prometheus") and URL its address,
	// redacted (no user information, no query values).
	Source string `json:"source"`
	URL    string `json:"url"`
	// Match are the selectors asked for; Start and End the bounds, RFC 3339.
	Match []string `json:"match"`
	Start string   `json:"start"`
	End   string   `json:"end"`
	// TargetLabels are the labels a target is grouped by (job and
	// instance, or the one asked for); they are taken out of the samples'
	// label sets, as a scraped page has no such labels.
	TargetLabels []string `json:"target_labels"`
	// Types says where the samples' metric types came from: "metadata"
	// (the store's /api/v1/metadata), "names" (none served: a histogram is
	// told by its _bucket series with le, a summary by quantile, the rest
	// is untyped) or "metadata and names" (metadata for some families).
	Types string `json:"types"`
	// Notes say what the import could not carry over (staleness markers,
	// the store's own series such as up).
	Notes []string `json:"notes,omitempty"`
	// Partial, when set, says the session lacks samples the import asked
	// for and why: a chunk failed (the store's error, redacted), the
	// import was stopped or killed before its end, or no sample was
	// imported. Every reader shows it.
	Partial string `json:"partial,omitempty"`
}

// WriteSegment writes rows, their samples already filled, as segment seg
// of run in dir, sealed as the recorder seals a segment (a temporary file,
// fsynced, its line in the seal ledger, renamed): the path by which an
// import writes its rows, which never pass through a journal (a journal
// keeps no samples: recovery parses them again from the body, and an
// imported row has none).
func WriteSegment(dir, run string, seg int, rows []Scrape) (string, error) {
	if !IsRunID(run) || seg <= 0 {
		return "", errors.New("write segment: not a run id and segment number")
	}
	var enc encoder
	enc.setCodec(zstdBetter)
	path := filepath.Join(dir, segmentBase(run, seg)+".parquet")
	if _, err := enc.writeSegment(path, rows); err != nil {
		return "", err
	}
	return path, nil
}
