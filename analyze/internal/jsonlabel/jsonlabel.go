// Package jsonlabel reads one label of a series' labels, the JSON object
// of strings the recorder writes (expo.EncodeLabels), without decoding the
// object when it is plain.
package jsonlabel

// Plain returns label name's value in labels, a JSON object of
// strings (expo.EncodeLabels), as expo.DecodeLabels would map it (the last
// of repeated keys), and whether the object holds it. plain is false, and
// the caller must decode, unless the object is written without spaces and
// every key and value is plain: no backslash, quote, control byte or byte
// past ASCII, which the decoder may rewrite (a series' labels are plain,
// and a JSON decode is dear).
func Plain(labels, name string) (value string, found, plain bool) {
	// No labels: an empty set.
	if labels == "" || labels == "{}" {
		return "", false, true
	}
	if len(labels) < 2 || labels[0] != '{' || labels[len(labels)-1] != '}' {
		return "", false, false
	}
	for s := labels[1 : len(labels)-1]; ; {
		k, rest, ok := plainString(s)
		if !ok || rest == "" || rest[0] != ':' {
			return "", false, false
		}
		v, rest, ok := plainString(rest[1:])
		if !ok {
			return "", false, false
		}
		if k == name {
			value, found = v, true
		}
		if rest == "" {
			return value, found, true
		}
		if rest[0] != ',' {
			return "", false, false
		}
		s = rest[1:]
	}
}

// plainString reads the plain JSON string s starts with (Plain): its
// text and what follows it; ok is false for anything else.
func plainString(s string) (text, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", "", false
		}
	}
	return "", "", false
}
