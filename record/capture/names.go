package capture

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Names. A run folder may hold files llmrec did not write (an export, a
// user's notes, another tool's Parquet). llmrec reads, recovers and removes
// only files whose names carry a run id of the exact form the recorder
// makes; every other name is foreign: never read, never removed, listed.
//
//	RUN.manifest.json                RUN.manifest.json.tmp
//	RUN-NNNNNN.parquet               RUN-NNNNNN.parquet.tmp
//	RUN-NNNNNN_MMMMMM.parquet        RUN-NNNNNN_MMMMMM.parquet.tmp
//	RUN-NNNNNN.journal
//	RUN.seals                        (the seal ledger, see ledger.go)
//	marks.jsonl                      (phase marks, see marks.go)
//
// where RUN is 20060102T150405Z-hhhhhhhh (UTC start, 8 lowercase hex
// digits) and NNNNNN a segment number printed with %06d.

// runIDLayout is the time part of a run id.
const runIDLayout = "20060102T150405Z"

// IsRunID reports whether s has the exact form of a run id the recorder
// makes: its UTC start as 20060102T150405Z, a dash and 8 lowercase hex digits.
func IsRunID(s string) bool {
	if len(s) != len(runIDLayout)+1+8 || s[len(runIDLayout)] != '-' {
		return false
	}
	if _, err := time.Parse(runIDLayout, s[:len(runIDLayout)]); err != nil {
		return false
	}
	for _, c := range []byte(s[len(runIDLayout)+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Kinds of file a run folder holds.
const (
	kindSegment     = iota // RUN-N.parquet or RUN-N_M.parquet
	kindSegmentTmp         // the same + .tmp: a seal or a merge being written
	kindJournal            // RUN-N.journal
	kindManifest           // RUN.manifest.json
	kindManifestTmp        // RUN.manifest.json.tmp
	kindSeals              // RUN.seals
	kindMarks              // marks.jsonl
)

// ownName is a parsed name of a file llmrec writes.
type ownName struct {
	kind int
	seg  segName // run always; first and last for segments and journals
}

// parseOwnName parses a name of one of the forms above; ok is false for a
// foreign name.
func parseOwnName(name string) (ownName, bool) {
	if name == MarksFile {
		return ownName{kind: kindMarks}, true
	}
	if run, ok := strings.CutSuffix(name, manifestSuffix+".tmp"); ok && IsRunID(run) {
		return ownName{kindManifestTmp, segName{run: run}}, true
	}
	if run, ok := strings.CutSuffix(name, manifestSuffix); ok && IsRunID(run) {
		return ownName{kindManifest, segName{run: run}}, true
	}
	if run, ok := strings.CutSuffix(name, sealsSuffix); ok && IsRunID(run) {
		return ownName{kindSeals, segName{run: run}}, true
	}
	kind := kindSegment
	if stem, ok := strings.CutSuffix(name, ".tmp"); ok {
		if !strings.HasSuffix(stem, ".parquet") {
			return ownName{}, false
		}
		name, kind = stem, kindSegmentTmp
	}
	s, ok := parseSegName(name)
	if !ok {
		return ownName{}, false
	}
	if strings.HasSuffix(name, ".journal") {
		kind = kindJournal
	}
	return ownName{kind, s}, true
}

// parseSegName parses a .parquet or .journal name of a run id of the
// recorder's form; a merged range is a .parquet only.
func parseSegName(name string) (segName, bool) {
	var stem string
	journal := false
	switch {
	case strings.HasSuffix(name, ".parquet"):
		stem = strings.TrimSuffix(name, ".parquet")
	case strings.HasSuffix(name, ".journal"):
		stem, journal = strings.TrimSuffix(name, ".journal"), true
	default:
		return segName{}, false
	}
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 || !IsRunID(stem[:i]) {
		return segName{}, false
	}
	a, b, merged := strings.Cut(stem[i+1:], "_")
	first, ok := segNumber(a)
	if !ok {
		return segName{}, false
	}
	last := first
	if merged {
		if journal {
			return segName{}, false
		}
		if last, ok = segNumber(b); !ok || last < first {
			return segName{}, false
		}
	}
	return segName{stem[:i], first, last}, true
}

// segNumber parses a segment number printed as %06d, and only so: "1",
// "+00001" and "0000001" are not segment numbers.
func segNumber(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || fmt.Sprintf("%06d", n) != s {
		return 0, false
	}
	return n, true
}
