package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/tlstest"
)

// lockedBuffer is a bytes.Buffer written by several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeAtomic replaces a file as a careful writer does: a temporary file
// renamed over it.
func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	writeFile(t, path+".tmp", text)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// upServer is a loopback /metrics that keeps the Host headers it was
// asked for.
type upServer struct {
	*httptest.Server
	mu    sync.Mutex
	hosts map[string]bool
}

func newUpServer(t *testing.T) *upServer {
	s := &upServer{hosts: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts[r.Host] = true
		s.mu.Unlock()
		io.WriteString(w, "# TYPE up gauge\nup 1\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *upServer) addr() string { return strings.TrimPrefix(s.URL, "http://") }

func (s *upServer) asked(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[host]
}

// waitManifest reads the run's manifest until cond holds (5 s at most).
func waitManifest(t *testing.T, dir, what string, cond func(capture.Manifest) bool) capture.Manifest {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ms, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json")); len(ms) == 1 {
			if m, err := capture.ReadManifest(ms[0]); err == nil && cond(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manifest never showed %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// presence is a target's presence intervals in the manifest, nil when it
// has none.
func presence(m capture.Manifest, name string) []capture.Presence {
	for _, t := range m.Targets {
		if t.Name == name {
			return t.Presence
		}
	}
	return nil
}

// joins counts a target's joins and leaves.
func joins(m capture.Manifest, name string) (joined, left int) {
	for _, p := range presence(m, name) {
		joined++
		if p.LeaveNs != nil {
			left++
		}
	}
	return joined, left
}

// recordAsync runs Run until the returned stop is called.
func recordAsync(t *testing.T, cfg *Config, opt Options) (stop func() *Summary) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		s   *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Run(ctx, cfg, opt)
		done <- result{s, err}
	}()
	return func() *Summary {
		cancel()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.s
	}
}

// file_sd files are followed while recording: a target added joins at its
// next tick, one removed leaves (its ticks stop; nothing it finished is
// lost), one that returns is the same target with a second presence; a
// file caught mid-write keeps the last good targets and is warned of with
// its name and line. The manifest records every join and leave.
func TestFileSDFollowed(t *testing.T) {
	a, b := newUpServer(t), newUpServer(t)
	// group is the file naming the servers given, a and b by name.
	group := func(srvs ...*upServer) string {
		var gs []targetGroup
		for _, s := range srvs {
			name := map[*upServer]string{a: "a", b: "b"}[s]
			gs = append(gs, targetGroup{Targets: []string{s.addr()}, Labels: map[string]string{"llmrec_name": name}})
		}
		out, _ := json.Marshal(gs)
		return string(out)
	}
	sd := filepath.Join(t.TempDir(), "fleet.json")
	writeFile(t, sd, group(a))
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Timeout: Duration(time.Second), FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	warn := &lockedBuffer{}
	stop := recordAsync(t, cfg, Options{Dir: dir, Warnings: warn})

	waitManifest(t, dir, "a present", func(m capture.Manifest) bool { j, _ := joins(m, "a"); return j == 1 })
	writeAtomic(t, sd, group(a, b))
	waitManifest(t, dir, "b joined", func(m capture.Manifest) bool { j, _ := joins(m, "b"); return j == 1 })
	// Caught mid-write: the file does not parse; a and b stay.
	writeFile(t, sd, "[\n {\"targets\": [\""+a.addr()+"\"]},\n {\"targ")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(warn.String(), "fleet.json:3: not a JSON list of target groups") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	writeAtomic(t, sd, group(b))
	waitManifest(t, dir, "a left", func(m capture.Manifest) bool { _, l := joins(m, "a"); return l == 1 })
	time.Sleep(150 * time.Millisecond) // a few of b's ticks without a
	writeAtomic(t, sd, group(a, b))
	waitManifest(t, dir, "a back", func(m capture.Manifest) bool { j, _ := joins(m, "a"); return j == 2 })
	time.Sleep(100 * time.Millisecond)
	s := stop()

	if w := warn.String(); !strings.Contains(w, "warning: file_sd fleet.json:3: not a JSON list of target groups") ||
		!strings.Contains(w, "its last good targets are kept") || strings.Count(w, "fleet.json:3") != 1 {
		t.Errorf("warnings:\n%s", w)
	}
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifests[0]
	pa, pb := presence(m, "a"), presence(m, "b")
	if len(pa) != 2 || pa[0].LeaveNs == nil || pa[1].LeaveNs != nil || len(pb) != 1 || pb[0].LeaveNs != nil {
		t.Fatalf("presence a %+v, b %+v", pa, pb)
	}
	if pa[0].JoinNs != m.StartNs || pb[0].JoinNs <= m.StartNs || pa[1].JoinNs <= *pa[0].LeaveNs {
		t.Errorf("presence a %+v, b %+v, start %d", pa, pb, m.StartNs)
	}
	// Ticks fire only while present: none of a's is scheduled in its
	// absence, none of b's before it joined; the seq goes on across a's
	// two presences (one schedule).
	var okA [2]int
	lastSeq := map[string]int64{}
	for _, r := range readRows(t, dir) {
		if r.Seq < lastSeq[r.Target] {
			t.Errorf("%s: seq %d after %d", r.Target, r.Seq, lastSeq[r.Target])
		}
		lastSeq[r.Target] = r.Seq
		switch {
		case r.Target == "b" && r.ScheduledNs < pb[0].JoinNs:
			t.Errorf("b: tick %d scheduled before it joined", r.Seq)
		case r.Target == "a" && r.ScheduledNs > *pa[0].LeaveNs && r.ScheduledNs < pa[1].JoinNs:
			t.Errorf("a: tick %d scheduled while it was away", r.Seq)
		case r.Target == "a" && r.Outcome == capture.OutcomeOK && r.ScheduledNs < *pa[0].LeaveNs:
			okA[0]++
		case r.Target == "a" && r.Outcome == capture.OutcomeOK:
			okA[1]++
		}
	}
	if okA[0] == 0 || okA[1] == 0 {
		t.Errorf("a's ok rows in its presences: %v", okA)
	}
	for _, ts := range s.Targets {
		if ts.Left {
			t.Errorf("%s: left at the end", ts.Name)
		}
	}
}

// stubResolver answers from a table the test changes; a name it does not
// hold does not exist.
type stubResolver struct {
	mu    sync.Mutex
	addrs map[string][]string
	asked map[string]int
}

func (r *stubResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs[host] = addrs
}

func (r *stubResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked[host]++
	if a := r.addrs[host]; len(a) > 0 {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A target with resolve_dns is one target per address of its name,
// resolved again every interval: NAME@ADDR scraped at the address with the
// name as its Host header; addresses that come and go join and leave; an
// address that does not answer is recorded as failed scrapes.
func TestDNSFollowed(t *testing.T) {
	srv := newUpServer(t)
	_, port, _ := net.SplitHostPort(srv.addr())
	res := &stubResolver{addrs: map[string][]string{}, asked: map[string]int{}}
	res.set("engine.test", "127.0.0.1")
	on := true
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Timeout: Duration(time.Second),
		Targets: []Target{{Name: "e", URL: "http://engine.test:" + port + "/metrics", ResolveDNS: &on},
			{Name: "fixed", URL: srv.URL + "/metrics"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stop := recordAsync(t, cfg, Options{Dir: dir, Resolver: res})
	one, two := "e@127.0.0.1", "e@127.0.0.2"
	waitManifest(t, dir, "e@127.0.0.1 present", func(m capture.Manifest) bool { j, _ := joins(m, one); return j == 1 })
	res.set("engine.test")
	waitManifest(t, dir, "e@127.0.0.1 left", func(m capture.Manifest) bool { _, l := joins(m, one); return l == 1 })
	// Back, with a second address where nothing listens.
	res.set("engine.test", "127.0.0.2", "127.0.0.1")
	waitManifest(t, dir, "both present", func(m capture.Manifest) bool {
		j1, _ := joins(m, one)
		j2, _ := joins(m, two)
		return j1 == 2 && j2 == 1
	})
	time.Sleep(150 * time.Millisecond)
	s := stop()

	if !srv.asked("engine.test:" + port) {
		t.Errorf("no scrape asked for Host engine.test:%s", port)
	}
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifests[0]
	var fixed []capture.Presence
	for _, mt := range m.Targets {
		switch mt.Name {
		case one:
			if mt.URL != "http://127.0.0.1:"+port+"/metrics" {
				t.Errorf("%s: url %s", one, mt.URL)
			}
		case "fixed":
			fixed = mt.Presence
		}
	}
	if len(fixed) != 1 || fixed[0].LeaveNs != nil {
		t.Errorf("fixed target's presence %+v", fixed)
	}
	rows := map[string]map[string]int{}
	for _, r := range readRows(t, dir) {
		if rows[r.Target] == nil {
			rows[r.Target] = map[string]int{}
		}
		rows[r.Target][r.Outcome]++
	}
	if rows[one][capture.OutcomeOK] == 0 || rows[two][capture.OutcomeOK] != 0 || rows[two][capture.OutcomeError] == 0 {
		t.Errorf("rows by target and outcome: %v", rows)
	}
	res.mu.Lock()
	asked := res.asked["engine.test"]
	res.mu.Unlock()
	if asked < 5 {
		t.Errorf("engine.test resolved %d times", asked)
	}
	if len(s.Targets) != 3 {
		t.Errorf("summary targets %+v", s.Targets)
	}
}

// resolve_dns is the config's default, a target's own value overrides it,
// and a URL holding an address is never resolved. A name's addresses are
// targets NAME@ADDRESS at the address (IPv6 bracketed), asking for the
// name, which is also the TLS name of an https URL.
func TestResolveDNSConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`resolve_dns = true
[[target]]
name = "a"
url = "https://engine.test:8443/metrics"
[[target]]
name = "b"
url = "http://engine.test:8001/metrics"
resolve_dns = false
[[target]]
name = "c"
url = "http://127.0.0.1:8002/metrics"
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, tg := range cfg.Targets {
		got = append(got, tg.resolves())
	}
	if fmt.Sprint(got) != "[true false false]" || !cfg.discovers() {
		t.Fatalf("resolves %v, discovers %v", got, cfg.discovers())
	}
	res := &stubResolver{addrs: map[string][]string{"engine.test": {"::1", "10.0.0.7"}}, asked: map[string]int{}}
	d := newDiscovery(cfg, res, nil)
	var out []string
	for _, x := range d.targets(context.Background()) {
		out = append(out, fmt.Sprintf("%s %s host=%s sni=%s", x.Name, x.URL, x.Host, x.TLS.ServerName))
	}
	want := []string{
		"a@10.0.0.7 https://10.0.0.7:8443/metrics host=engine.test:8443 sni=engine.test",
		"a@::1 https://[::1]:8443/metrics host=engine.test:8443 sni=engine.test",
		"b http://engine.test:8001/metrics host= sni=",
		"c http://127.0.0.1:8002/metrics host= sni=",
	}
	if strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("targets:\n%s\nwant:\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
}

// An https target resolved to its addresses is verified under its name:
// the server's certificate names engine.test only, and the scrape of
// NAME@127.0.0.1 answers.
func TestResolveDNSKeepsTLSName(t *testing.T) {
	pki := tlstest.New(t)
	srv := pki.Serve(t, pki.Issue(t, tlstest.Options{Name: "server", DNSNames: []string{"engine.test"}}), false, "# TYPE up gauge\nup 1\n")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	on := true
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Timeout: Duration(time.Second), TLS: TLS{CAFile: pki.CAFile},
		Targets: []Target{{Name: "e", URL: "https://engine.test:" + port + "/metrics", ResolveDNS: &on}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res := &stubResolver{addrs: map[string][]string{"engine.test": {"127.0.0.1"}}, asked: map[string]int{}}
	dir := t.TempDir()
	s, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 200 * time.Millisecond, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 1 || s.Targets[0].Name != "e@127.0.0.1" || !s.Targets[0].Answered || s.Targets[0].OK == 0 {
		t.Errorf("targets %+v", s.Targets)
	}
}

// A target that leaves while its scrape is in flight: the scrape finishes
// and its row is written (nothing finished is lost), and no tick fires
// after the leave.
func TestLeaveKeepsScrapeInFlight(t *testing.T) {
	started := make(chan struct{}, 16)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "# TYPE up gauge\nup 1\n")
	}))
	t.Cleanup(slow.Close)
	other := newUpServer(t)
	sd := filepath.Join(t.TempDir(), "fleet.json")
	file := func(addrs ...string) string {
		b, _ := json.Marshal([]targetGroup{{Targets: addrs}})
		return string(b)
	}
	slowAddr := strings.TrimPrefix(slow.URL, "http://")
	writeFile(t, sd, file(slowAddr, other.addr()))
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Timeout: Duration(2 * time.Second), FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stop := recordAsync(t, cfg, Options{Dir: dir})
	<-started
	writeAtomic(t, sd, file(other.addr()))
	m := waitManifest(t, dir, "the slow target left", func(m capture.Manifest) bool { _, l := joins(m, slowAddr); return l == 1 })
	leave := *presence(m, slowAddr)[0].LeaveNs
	time.Sleep(400 * time.Millisecond)
	stop()
	var across, after int
	for _, r := range readRows(t, dir) {
		if r.Target != slowAddr {
			continue
		}
		if r.Outcome == capture.OutcomeOK && r.StartNs < leave && r.EndNs > leave {
			across++
		}
		if r.ScheduledNs > leave {
			after++
		}
	}
	if across == 0 || after != 0 {
		t.Errorf("slow target: %d ok rows across its leave (want 1 at least), %d ticks after it", across, after)
	}
}
