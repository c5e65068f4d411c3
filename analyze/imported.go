package analyze

import (
	"slices"
	"strings"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// Imported says a target's polls came from a metrics store (llmrec import),
// not from pages llmrec scraped: the bodies are absent, and the checks that
// read a body or a scrape's timing cannot apply to them.
type Imported struct {
	Source string `json:"source"` // the kind of store: "prometheus"
	URL    string `json:"url"`    // the store, redacted
	// Types says where the samples' types came from: "metadata",
	// "names" or "metadata and names" (docs/capture-format.md).
	Types string `json:"types"`
	// Bodies is "absent": no page was stored.
	Bodies string `json:"bodies"`
	// NotApplicable are the checks that cannot apply to the target's
	// rows, each "not applicable: imported" with why. None of them is a
	// pass: a count of their refusals or incidents (0) says nothing.
	NotApplicable []NotApplicable `json:"not_applicable"`
	// Partial, when set, says the import lacks samples it asked for and
	// why (capture.Import.Partial, of every session that says so).
	Partial string `json:"partial,omitempty"`
}

// NotApplicable is one check an import cannot carry.
type NotApplicable struct {
	Check  string `json:"check"`
	Status string `json:"status"` // StatusImported
	Why    string `json:"why"`
}

// StatusImported is the status of a check that cannot apply to imported rows.
const StatusImported = "not applicable: imported"

// importedChecks are the checks that read what an imported row lacks.
var importedChecks = []NotApplicable{
	{Check: "stale", Why: "the estimator's first-byte staleness gate weighs the time from request to first byte; the store keeps one time per scrape, so no window is refused as stale"},
	{Check: "slow_scrape", Why: "slow scrapes are first bytes late after the request; no request time is known"},
	{Check: "scrape_duration", Why: "how long a scrape took (end − start) is not known"},
	{Check: "body", Why: "no body was stored: its size, its parse and the parse limits (max_series, label sizes) were never checked by llmrec, and no page can be exported byte-exact"},
	{Check: "missed_tick", Why: "the store keeps no row of a tick it did not take: missed ticks and the recorder's own stalls cannot be seen, only gaps"},
	{Check: "http_status", Why: "an engine's answer other than 200 (a 503 loading model) is not kept; a scrape the store failed is known only from up = 0"},
}

// importedOf is what a target's imported sessions say, nil when none is.
func importedOf(imps []*capture.Import) *Imported {
	if len(imps) == 0 {
		return nil
	}
	var urls, types, partial []string
	for _, im := range imps {
		if p := redact.Text(im.Partial); p != "" && !slices.Contains(partial, p) {
			partial = append(partial, p)
		}
		if u := redact.URL(im.URL); !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
		if !slices.Contains(types, im.Types) {
			types = append(types, im.Types)
		}
	}
	out := &Imported{Source: imps[0].Source, URL: strings.Join(urls, ", "), Types: strings.Join(types, "; "), Bodies: "absent",
		Partial: strings.Join(partial, "; ")}
	for _, c := range importedChecks {
		c.Status = StatusImported
		out.NotApplicable = append(out.NotApplicable, c)
	}
	return out
}

// Text is the one-line account of an imported target, for the
// analysis text and the report.
func (im *Imported) Text() string {
	checks := make([]string, len(im.NotApplicable))
	for i, c := range im.NotApplicable {
		checks[i] = c.Check
	}
	out := "imported from " + im.Source + " at " + im.URL + " (types from " + im.Types + "): bodies absent; " +
		StatusImported + ": " + strings.Join(checks, ", ")
	if im.Partial != "" {
		out += "; PARTIAL: " + im.Partial
	}
	return out
}

// redactedImport is an import record with its URL redacted again.
func redactedImport(im *capture.Import) *capture.Import {
	if im == nil {
		return nil
	}
	c := *im
	c.URL = redact.URL(c.URL)
	c.Partial = redact.Text(c.Partial)
	return &c
}
