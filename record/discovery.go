package record

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Discovery follows a fleet while it is recorded. Every interval (the
// config's) the run's target set is computed again:
//   - the config's own targets;
//   - the targets of the file_sd files, each file re-read when its size,
//     modification time or content changed; a file that does not parse
//     (one caught mid-write) keeps its last good targets and is warned of
//     once, naming the file and line; a file that is gone (or a pattern
//     that matches none any more) names no target;
//   - a set past the recorder's capacity (MaxTargets, MaxScrapeRate),
//     is not taken: the last good set is kept and a warning names the
//     files, on stderr and in the manifest;
//   - each target with resolve_dns whose URL names a host is one target
//     per address the name resolves to now, named NAME@ADDRESS, its URL
//     holding the address and the name sent as the Host header and as the
//     TLS name; a name that does not exist resolves to no address, while
//     a failed lookup (a timeout) keeps the last addresses and is warned.
//
// A target found that is not scraped joins: it is scraped from the next
// tick of its own schedule (its phase, from its name, within the
// interval). A target scraped that is not found leaves: no tick fires any
// more, the scrape in flight finishes and its row is written as any
// other. A target found again under the same name but defined otherwise
// (a new address) leaves and joins at once. The manifest records every
// join and leave (ManifestTarget.Presence), rewritten atomically at each
// change; a target that leaves and returns is one target with two
// presence intervals.

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// lookupTimeout bounds one name's lookup.
const lookupTimeout = 5 * time.Second

// discovery computes the run's target set (see above).
type discovery struct {
	cfg      *Config
	own      []Target // the config's own targets, validated
	files    map[string]*sdFile
	resolver Resolver
	addrs    map[string][]string // the last addresses of each host name
	warn     io.Writer
	warned   map[string]string // the last warning of each file, pattern or name
	// last is the last set taken; refused, when set, says why the set
	// found now was not.
	last    []Target
	refused string
}

// sdFile is the last good reading of one file_sd file.
type sdFile struct {
	size    int64
	mod     time.Time
	read    time.Time // when it was read
	sum     [32]byte
	targets []Target
}

// racyWindow is how long after its modification time a file is read
// again even if its size and time look unchanged: file systems stamp
// times at a clock tick (milliseconds), so a rewrite of the same size
// soon after can carry the same time.
const racyWindow = time.Second

// discovers reports whether the config's target set can change while
// recording: it has file_sd files or a target that resolves names.
func (c *Config) discovers() bool {
	if len(c.FileSD) > 0 {
		return true
	}
	for _, t := range c.Targets {
		if t.resolves() {
			return true
		}
	}
	return false
}

// resolves reports whether t is scraped once per address of its host name.
func (t *Target) resolves() bool {
	if t.ResolveDNS == nil || !*t.ResolveDNS {
		return false
	}
	u, err := url.Parse(t.URL)
	return err == nil && net.ParseIP(u.Hostname()) == nil
}

func newDiscovery(cfg *Config, r Resolver, warn io.Writer) *discovery {
	if r == nil {
		r = net.DefaultResolver
	}
	d := &discovery{cfg: cfg, files: map[string]*sdFile{}, resolver: r, addrs: map[string][]string{},
		warn: warn, warned: map[string]string{}}
	for _, t := range cfg.Targets {
		if t.FileSD == "" {
			d.own = append(d.own, t)
		}
	}
	return d
}

// targets is the target set now, sorted by name; names found twice keep
// their first target (the config's own first).
func (d *discovery) targets(ctx context.Context) []Target {
	all := slices.Clone(d.own)
	for _, p := range d.cfg.FileSD {
		// Past the cap no more files are read: the set is refused below,
		// and memory holds no more than the cap and one file.
		if len(all) > MaxTargets {
			break
		}
		all = append(all, d.fileTargets(p, MaxTargets-len(all))...)
	}
	var over error
	if len(all) > MaxTargets {
		over = fmt.Errorf("more than %d targets; one recorder takes at most %d (several recorders, each with a part of the fleet)", MaxTargets, MaxTargets)
	}
	var out []Target
	seen := map[string]bool{}
	for _, t := range all {
		for _, x := range d.expand(ctx, t) {
			if seen[x.Name] {
				d.say("name:"+x.Name, fmt.Sprintf("target %q (file_sd %s): the name is used twice; the first is kept", x.Name, x.FileSD))
				continue
			}
			seen[x.Name] = true
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b Target) int { return strings.Compare(a.Name, b.Name) })
	// Rule: a set past the recorder's capacity is not taken: the last
	// good set is kept, and the warning names the files (the start has
	// no last set: Run refuses it).
	if err := cmp.Or(over, checkCapacity(out)); err != nil {
		d.refused = fmt.Sprintf("file_sd %s: %v", strings.Join(d.sources(out), ", "), err)
		if d.last == nil {
			return out
		}
		d.refused += fmt.Sprintf("; the last good %d targets are kept", len(d.last))
		d.say("capacity", d.refused)
		return d.last
	}
	d.refused = ""
	d.say("capacity", "")
	d.last = out
	return out
}

// sources are the files the targets came from.
func (d *discovery) sources(ts []Target) []string {
	var out []string
	for _, t := range ts {
		if t.FileSD != "" && !slices.Contains(out, t.FileSD) {
			out = append(out, t.FileSD)
		}
	}
	return out
}

// fileTargets are the targets of the files pattern matches now; it stops
// reading files once they hold more than room.
func (d *discovery) fileTargets(pattern string, room int) []Target {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		d.say("pattern:"+pattern, fmt.Sprintf("file_sd %s: no file matches; its targets leave", filepath.Base(pattern)))
		return nil
	}
	d.say("pattern:"+pattern, "")
	var out []Target
	for _, f := range files {
		if len(out) > room {
			break
		}
		out = append(out, d.readFile(f)...)
	}
	return out
}

// readFile is the targets of one file: read again when it changed, else
// its last good reading.
func (d *discovery) readFile(path string) []Target {
	st, err := os.Stat(path)
	if err != nil {
		d.say("file:"+path, fmt.Sprintf("file_sd: %v; its targets leave", plainFileError(err)))
		delete(d.files, path)
		return nil
	}
	last := d.files[path]
	if last != nil && last.size == st.Size() && last.mod.Equal(st.ModTime()) && last.read.Sub(st.ModTime()) > racyWindow {
		return last.targets
	}
	readAt := time.Now()
	b, err := readSDFile(path)
	if err != nil {
		d.say("file:"+path, fmt.Sprintf("%v; its last targets are kept", err))
		return lastTargets(last)
	}
	sum := sha256.Sum256(b)
	if last != nil && last.sum == sum {
		last.size, last.mod, last.read = st.Size(), st.ModTime(), readAt
		return last.targets
	}
	ts, err := parseFileSD(path, b)
	if err == nil {
		err = d.check(ts)
	}
	// A file caught mid-write keeps its last good targets until it parses.
	if err != nil {
		d.say("file:"+path, fmt.Sprintf("%v; its last good targets are kept", err))
		return lastTargets(last)
	}
	d.say("file:"+path, "")
	d.files[path] = &sdFile{size: st.Size(), mod: st.ModTime(), read: readAt, sum: sum, targets: ts}
	return ts
}

func lastTargets(f *sdFile) []Target {
	if f == nil {
		return nil
	}
	return f.targets
}

// check validates targets read from a file and fills their defaults.
func (d *discovery) check(ts []Target) error {
	for i := range ts {
		if err := d.cfg.checkTarget(&ts[i]); err != nil {
			return fmt.Errorf("target %q (from file_sd %s): %w", ts[i].Name, ts[i].FileSD, err)
		}
	}
	return nil
}

// expand is t once per address of its host name when it resolves names,
// else t itself.
func (d *discovery) expand(ctx context.Context, t Target) []Target {
	if !t.resolves() {
		return []Target{t}
	}
	u, _ := url.Parse(t.URL)
	host := u.Hostname()
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	addrs, err := d.resolver.LookupHost(lctx, host)
	cancel()
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		d.say("host:"+host, "")
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		// The name is gone: no address, every one of it leaves.
		addrs = nil
		d.say("host:"+host, "")
	case ctx.Err() != nil:
		addrs = d.addrs[host]
	default:
		addrs = d.addrs[host]
		d.say("host:"+host, fmt.Sprintf("target %q: resolving %s failed (%v); its last %d address(es) are kept", t.Name, host, err, len(addrs)))
	}
	addrs = slices.Compact(slices.Sorted(slices.Values(addrs)))
	d.addrs[host] = addrs
	out := make([]Target, 0, len(addrs))
	for _, a := range addrs {
		x := t
		x.Name = t.Name + "@" + a
		x.Host = u.Host
		au := *u
		au.Host = a
		if strings.Contains(a, ":") {
			au.Host = "[" + a + "]"
		}
		if p := u.Port(); p != "" {
			au.Host = net.JoinHostPort(a, p)
		}
		x.URL = au.String()
		if u.Scheme == "https" && x.TLS.ServerName == "" {
			x.TLS.ServerName = host
		}
		out = append(out, x)
	}
	return out
}

// say writes a warning once, until the warning of its key changes; ""
// clears it (the next failure is said again).
func (d *discovery) say(key, msg string) {
	if d.warned[key] == msg {
		return
	}
	d.warned[key] = msg
	if msg != "" && d.warn != nil {
		fmt.Fprintf(d.warn, "warning: %s\n", msg)
	}
}

// joinPhase is the phase of a target that joins while recording: from its
// name, so a target that returns keeps its schedule and joiners spread
// over the interval.
func joinPhase(name string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	io.WriteString(h, name)
	return time.Duration(h.Sum64() % uint64(interval))
}

// sameTarget reports whether two targets of one name are scraped alike.
func sameTarget(a, b *Target) bool {
	return reflect.DeepEqual(a, b)
}
