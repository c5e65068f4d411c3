package rate

import "strings"

// PlainWithout returns canonical labels without label name, as Labels
// makes them of the set's other pairs, when the set is plain: well formed,
// no backslash and no newline in it (nothing escaped, nothing to escape),
// names strictly ascending (Labels' order). ok is false for any other set:
// the caller takes the general path (eachLabel, Labels).
func PlainWithout(labels, name string) (string, bool) {
	// No labels, and an empty set, is the empty string.
	if labels == "" || labels == "{}" {
		return "", true
	}
	if len(labels) < 2 || labels[0] != '{' || labels[len(labels)-1] != '}' || strings.ContainsAny(labels, "\\\n") {
		return "", false
	}
	from, to, prev, n := -1, -1, "", 0
	for i := 1; i < len(labels)-1; {
		s := labels[i : len(labels)-1]
		eq := strings.Index(s, `="`)
		// A pair without a name, or names out of Labels' order.
		if eq <= 0 || (n > 0 && s[:eq] <= prev) {
			return "", false
		}
		q := strings.IndexByte(s[eq+2:], '"')
		if q < 0 {
			return "", false
		}
		end := i + eq + 2 + q + 1
		if end < len(labels)-1 && (labels[end] != ',' || end+1 == len(labels)-1) {
			return "", false
		}
		if s[:eq] == name {
			from, to = i, end
		}
		prev, n = s[:eq], n+1
		i = end + 1
	}
	switch {
	case from < 0:
		return labels, true
	case n == 1:
		return "", true
	case to < len(labels)-1: // not the last pair: its comma after goes
		return labels[:from] + labels[to+1:], true
	}
	return labels[:from-1] + labels[to:], true
}
