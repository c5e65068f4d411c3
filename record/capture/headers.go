package capture

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// MaxHeaderBytes caps a row's headers column: the response's headers as
// stored (a JSON object), like max_body_bytes caps its body. Engines send a
// few hundred bytes of headers; Go's client accepts up to 10 MB of them,
// and one target that sent 6.8 MB a scrape made a headers page of 243 MB
// (no budget counted them), over every reader's page cap: the rows of
// every target in that segment became unreadable.
const MaxHeaderBytes = 64 << 10

// HeadersOverCap is the key that says a row's headers were cut at
// MaxHeaderBytes: a colon cannot be in a header's name, so no response
// header has it. Its value says how many headers and bytes were kept.
const HeadersOverCap = "llmrec: headers over the cap"

// EncodeHeaders is the headers column's value of m (values already
// redacted): a JSON object with sorted keys, written as it is (a digest
// <redacted sha256:…> is not escaped to \u003c). Over MaxHeaderBytes, the
// headers named in first (restart evidence, the content type) are kept,
// then the shortest as far as they fit (written in key order), and
// HeadersOverCap says what was dropped.
func EncodeHeaders(m map[string]string, first ...string) *string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pairs := make([]string, 0, len(keys))
	total := 2 // the braces
	for _, k := range keys {
		p := jsonString(k) + ":" + jsonString(m[k])
		pairs = append(pairs, p)
		total += len(p) + 1
	}
	if total <= MaxHeaderBytes {
		s := "{" + strings.Join(pairs, ",") + "}"
		return &s
	}
	// The note takes at most 200 bytes; the shortest pairs are kept first
	// (an engine's own few short headers, such as a process start, outlast
	// a flood of long ones), written in key order.
	bySize := make([]int, len(pairs))
	for i := range bySize {
		bySize[i] = i
	}
	rank := func(i int) int {
		if slices.ContainsFunc(first, func(f string) bool { return strings.EqualFold(f, keys[i]) }) {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(bySize, func(a, b int) int {
		return cmp.Or(rank(a)-rank(b), len(pairs[a])-len(pairs[b]))
	})
	keep := make([]bool, len(pairs))
	kept, size := 0, 2
	for _, i := range bySize {
		if size+len(pairs[i])+1 > MaxHeaderBytes-200 {
			break
		}
		keep[i] = true
		kept++
		size += len(pairs[i]) + 1
	}
	out := make([]string, 0, kept+1)
	for i, p := range pairs {
		if keep[i] {
			out = append(out, p)
		}
	}
	note := jsonString(HeadersOverCap) + ":" + jsonString(fmt.Sprintf("%d of %d headers kept, %d of %d bytes (cap %d bytes a scrape)",
		kept, len(pairs), size, total, MaxHeaderBytes))
	s := "{" + strings.Join(append(out, note), ",") + "}"
	return &s
}

// jsonString is s as a JSON string, HTML characters as they are.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// capHeaders makes sure the row's headers fit MaxHeaderBytes before the
// writer journals them: a value that does not (a caller that did not go
// through EncodeHeaders) is replaced by the note alone.
func capHeaders(s *Scrape) {
	if s.Headers == nil || len(*s.Headers) <= MaxHeaderBytes {
		return
	}
	h := "{" + jsonString(HeadersOverCap) + ":" + jsonString(fmt.Sprintf("0 headers kept, 0 of %d bytes (cap %d bytes a scrape)", len(*s.Headers), MaxHeaderBytes)) + "}"
	s.Headers = &h
}
