// Package redact removes secrets from what llmrec writes down or prints:
// URLs, free text that may hold URLs (error messages), and request
// headers. It is the one redaction path of the recorder and of every
// reader; it imports only the standard library, so any package may use it.
//
// Rules:
//   - a URL keeps its scheme, host, port and path; its user information
//     (a token alone or user:password) is dropped, every query value is
//     replaced (the keys stay: ?token=<redacted>) and a fragment is
//     replaced;
//   - in text, every scheme://... URL (bare or Go-quoted, as *url.Error
//     prints it) is redacted so, and user information before a host
//     (user:pass@host:port) is dropped;
//   - a header keeps its value only when its name is on a short list of
//     headers known to carry no credential; any other value is replaced by
//     a digest, so that two configurations can be compared without either
//     value being written.
//
// Every function is idempotent: redacting redacted output changes nothing.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

// Mark replaces a removed value.
const Mark = "<redacted>"

// URL returns raw without user information, query values or fragment.
// It works on the text as written, without parsing or normalising it
// (url.Parse lowercases a scheme, escapes a path, and refuses some URLs
// Go's client prints), so that redacting twice changes nothing.
func URL(raw string) string {
	rest := raw
	prefix := ""
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	} else if strings.HasPrefix(rest, "//") {
		prefix, rest = "//", rest[2:]
	}
	tail := ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest, tail = rest[:i], rest[i:]
	}
	if prefix != "" {
		// User information ends at the authority's last '@'.
		authEnd := len(rest)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authEnd = i
		}
		if i := strings.LastIndexByte(rest[:authEnd], '@'); i >= 0 {
			rest = rest[i+1:]
		}
	}
	out := prefix + rest
	if tail == "" {
		return out
	}
	frag := ""
	if tail[0] == '?' {
		q, f, hasFrag := strings.Cut(tail[1:], "#")
		out += "?" + query(q)
		if hasFrag {
			frag = "#" + f
		}
	} else {
		frag = tail
	}
	if len(frag) > 1 {
		out += "#" + Mark
	} else {
		out += frag
	}
	return out
}

// query replaces every value of a raw query, keeping keys and order.
func query(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if ok {
			parts[i] = k + "=" + Mark
		}
	}
	return strings.Join(parts, "&")
}

var userHost = regexp.MustCompile(`[^\s"'` + "`" + `<>\\/()\[\]{},;=]+@(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)(:[0-9]+)?`)

// Text redacts every URL and every user@host in s: the messages Go's
// HTTP client makes (`Get "http://u:p@h/metrics?token=x": dial tcp ...`),
// quoted or bare.
func Text(s string) string {
	// A pass can make new structure out of odd text (removing user@ can
	// turn `\0@000` into the escape `\000` of a quoted URL), so passes run
	// until one changes nothing: redacting twice is redacting once.
	for range 8 {
		if !strings.Contains(s, "://") && !strings.Contains(s, "@") {
			return s
		}
		t := urls(s)
		if t == s {
			return s
		}
		s = t
	}
	return s
}

// hosts drops user information before a host in text outside URLs.
func hosts(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userHost.ReplaceAllStringFunc(s, func(m string) string {
		return m[strings.LastIndexByte(m, '@')+1:]
	})
}

// urls redacts each scheme://... in s, and user@host in the text between
// them. A Go-quoted URL ("http://...", as *url.Error prints it) is
// redacted whole, escapes included; a bare one runs to the first space,
// quote, backslash or angle bracket other than those of Mark.
func urls(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		from = i + 3
		start := i
		for start > done && isSchemeByte(s[start-1]) {
			start--
		}
		for start < i && !isLetter(s[start]) {
			start++
		}
		if start == i {
			continue // no scheme
		}
		if start > done && s[start-1] == '"' {
			if q, err := strconv.QuotedPrefix(s[start-1:]); err == nil {
				u, _ := strconv.Unquote(q)
				b.WriteString(hosts(s[done : start-1]))
				b.WriteString(strconv.Quote(URL(u)))
				done = start - 1 + len(q)
				from = done
				continue
			}
		}
		end := from
		for end < len(s) {
			if strings.HasPrefix(s[end:], Mark) {
				end += len(Mark)
				continue
			}
			if strings.IndexByte(" \t\r\n\"'`<>\\", s[end]) >= 0 {
				break
			}
			end++
		}
		b.WriteString(hosts(s[done:start]))
		b.WriteString(URL(s[start:end]))
		done, from = end, end
	}
	b.WriteString(hosts(s[done:]))
	return b.String()
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// harmless are headers that carry no credential: content negotiation,
// caching and the client's name, and a response's framing, date and
// server name. Anything else, a custom X- header included, may carry one
// and is redacted. X-Request-Id is not here: a gateway may accept a
// replayed id as a session.
var harmless = []string{
	"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language",
	"Cache-Control", "Connection", "Content-Type", "Host", "Pragma", "User-Agent",
	"Content-Encoding", "Content-Length", "Date", "Server", "Transfer-Encoding", "Vary",
}

// Harmless reports whether a header of this name may be written down as
// it is (case-insensitive).
func Harmless(name string) bool {
	for _, h := range harmless {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// Header returns the value of header name as it may be written down: the
// value itself for a harmless header, a digest otherwise.
func Header(name, value string) string {
	if Harmless(name) || isDigest(value) {
		return value
	}
	return Digest(value)
}

// Headers returns h with every value not known to be harmless replaced by
// its digest. h is not changed; nil gives nil.
func Headers(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = Header(k, v)
	}
	return out
}

const digestPrefix = "<redacted sha256:"

// Digest is `<redacted sha256:XXXXXXXX>`: the first 32 bits of a
// domain-separated SHA-256 of v. Equal values give equal digests, so two
// configurations can be compared; a high-entropy token cannot be
// recovered from it, but a guessable value (a short password) could be
// confirmed by trying candidates.
func Digest(v string) string {
	sum := sha256.Sum256([]byte("llmrec redact v1\x00" + v))
	return digestPrefix + hex.EncodeToString(sum[:4]) + ">"
}

func isDigest(v string) bool {
	return len(v) == len(digestPrefix)+9 && strings.HasPrefix(v, digestPrefix) && strings.HasSuffix(v, ">")
}

// Tree redacts a decoded JSON document (maps, slices, strings, as
// encoding/json decodes into an any) as a configuration is written: the
// values of a "headers" object through Header, of a "labels" object
// through Label, every other string through Text. It returns a new tree; v is not changed. A reader applies it to a
// manifest written by a version that redacted less.
func Tree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			h, ok := e.(map[string]any)
			if ok && (strings.EqualFold(k, "headers") || strings.EqualFold(k, "labels")) {
				byName := Header
				if strings.EqualFold(k, "labels") {
					byName = Label
				}
				hs := make(map[string]any, len(h))
				for name, hv := range h {
					if s, ok := hv.(string); ok {
						hs[name] = byName(name, s)
					} else {
						hs[name] = Tree(hv)
					}
				}
				out[k] = hs
				continue
			}
			out[k] = Tree(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Tree(e)
		}
		return out
	case string:
		return Text(x)
	}
	return v
}

// secretName matches a label name that may name a credential.
var secretName = regexp.MustCompile(`(?i)key|token|secret|passw|pwd|auth|cred|session|cookie|sig|bearer|private`)

// Label returns the value of a target's label (a file_sd group's) as it
// may be written down: a digest when its name looks like a credential's
// (api_key, token, password, ...), else the value with its URLs and
// user@host redacted. Labels are kept in the clear otherwise (pool, zone,
// model): they name what was recorded.
func Label(name, value string) string {
	if isDigest(value) {
		return value
	}
	if secretName.MatchString(name) {
		return Digest(value)
	}
	return Text(value)
}

// Labels returns m with every value through Label. m is not changed; nil
// gives nil.
func Labels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = Label(k, v)
	}
	return out
}
