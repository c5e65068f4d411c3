package promimport

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
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
)

// t0 is the start of every import here; each test's store answers for
// [t0, t0+span].
var t0 = time.Unix(1796216000, 0)

// serve starts a store on loopback answering with h; its URL.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// matrix is an API answer of n series (job a, instance i<k>), each with
// one sample per second in (from, to], seconds.
func matrix(n int, from, to int64) string {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"m","job":"a","instance":"i%d"},"values":[`, k)
		for s := from + 1; s <= to; s++ {
			if s > from+1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,"%d"]`, s, s-from)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}")
	return b.String()
}

// queryRange is the (from, to] of a query's range selector, seconds.
func queryRange(r *http.Request) (from, to int64) {
	var ms, at int64
	q := r.URL.Query().Get("query")
	fmt.Sscanf(q[strings.LastIndexByte(q, '[')+1:], "%dms", &ms)
	var whole, frac int64
	fmt.Sscanf(r.URL.Query().Get("time"), "%d.%d", &whole, &frac)
	at = whole*1000 + frac
	return (at - ms) / 1000, at / 1000
}

// fakeStore answers metadata as absent and every query with n series.
func fakeStore(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/metadata") {
			http.Error(w, `{"status":"error","error":"no metadata"}`, http.StatusNotFound)
			return
		}
		from, to := queryRange(r)
		io.WriteString(w, matrix(n, from, to))
	}
}

func importFrom(u string, span time.Duration, o Options) (*Summary, error) {
	o.URL, o.Match, o.Start, o.End = u, []string{"m"}, t0, t0.Add(span)
	return Import(context.Background(), o)
}

// A redirect is never followed to another origin, whether or not
// redirects are followed: not to another port, not from https down to
// http; the basic-auth header never reaches the other server. By default
// not even a same-origin one is followed; asked for, it is.
func TestImportRedirects(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		fakeStore(1)(w, r)
	})
	away := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}
	plain := serve(t, away)
	tlsStore := httptest.NewUnstartedServer(http.HandlerFunc(away))
	tlsStore.StartTLS()
	t.Cleanup(tlsStore.Close)
	for _, c := range []struct {
		name, url string
		hc        *http.Client
	}{
		{"another port", plain.URL, nil},
		{"https to http", tlsStore.URL, tlsStore.Client()},
	} {
		for _, follow := range []bool{false, true} {
			u := strings.Replace(c.url, "://", "://reader:hunter2@", 1)
			_, err := importFrom(u, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x"), Client: c.hc, FollowRedirects: follow})
			if err == nil || !strings.Contains(err.Error(), "not followed") {
				t.Errorf("%s, follow %v: err %v, want a redirect not followed", c.name, follow, err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: the error holds the password: %v", c.name, err)
			}
		}
	}
	mu.Lock()
	if len(auths) > 0 {
		t.Errorf("the other origin was asked %d time(s) (Authorization %q)", len(auths), auths)
	}
	mu.Unlock()
	// The same origin: followed only when asked for.
	same := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/moved/") {
			http.Redirect(w, r, "/moved"+r.URL.RequestURI(), http.StatusFound)
			return
		}
		fakeStore(1)(w, r)
	})
	if _, err := importFrom(same.URL, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x")}); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("same origin, by default: err %v, want not followed", err)
	}
	if sum, err := importFrom(same.URL, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x"), FollowRedirects: true}); err != nil || sum.Samples != 61 {
		t.Errorf("same origin, followed: %+v, %v; want 61 samples", sum, err)
	}
}

// endless writes prefix, then unit until the client goes away, then
// never suffix: an answer without end.
func endless(prefix, unit string, gz bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/metadata") {
			http.NotFound(w, r)
			return
		}
		var out io.Writer = w
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			defer z.Close()
			out = z
		}
		io.WriteString(out, prefix)
		chunk := strings.Repeat(unit, max(1, 64<<10/len(unit)))
		for r.Context().Err() == nil {
			if _, err := io.WriteString(out, chunk); err != nil {
				return
			}
		}
	}
}

// An answer without end, plain or gzip-compressed (where a few MB on the
// wire are GBs decompressed), stops the import at its budget: of bytes
// (an endless string), of series, of samples. Each error comes before
// the answer is held: the budgets here are small, and the test would
// take minutes and GBs if any were not enforced.
func TestImportEndlessAnswers(t *testing.T) {
	head := `{"status":"success","data":{"resultType":"matrix","result":[`
	for _, c := range []struct {
		name, prefix, unit, want string
		gz                       bool
	}{
		{"endless label value", head + `{"metric":{"__name__":"`, "a", "bytes", false},
		{"endless label value, gzip", head + `{"metric":{"__name__":"`, "aaaaaaaaaaaaaaaa", "bytes", true},
		{"endless whitespace, gzip", head, "                ", "bytes", true},
		{"endless series", head + `{"metric":{"__name__":"m","job":"a","instance":"i"},"values":[]}`,
			`,{"metric":{"__name__":"m","job":"a","instance":"i"},"values":[]}`, "series", false},
		{"endless samples", head + `{"metric":{"__name__":"m","job":"a","instance":"i"},"values":[[1796216001,"1"]`,
			`,[1796216001,"1"]`, "samples", true},
	} {
		s := serve(t, endless(c.prefix, c.unit, c.gz))
		out := filepath.Join(t.TempDir(), "x")
		_, err := importFrom(s.URL, time.Minute, Options{Out: out, Budget: Budget{Bytes: 4 << 20, Series: 1000, Samples: 10_000}})
		if !errors.Is(err, errBudget) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want over the budget of %s", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: a failed first chunk left %s", c.name, out)
		}
	}
	// One endless value stops at the bound of one value held, far below
	// the answer's.
	s0 := serve(t, endless(head+`{"metric":{"__name__":"`, "aaaaaaaaaaaaaaaa", true))
	_, err0 := importFrom(s0.URL, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x")})
	if !errors.Is(err0, errBudget) || !strings.Contains(err0.Error(), fmt.Sprintf("one value of the answer is over %d bytes", maxValue)) {
		t.Errorf("endless value, default budget: err %v", err0)
	}
	// The default budget holds too: an endless list of series stops at
	// the recorder's series cap.
	s := serve(t, endless(head+`{"metric":{"__name__":"m","job":"a","instance":"i"},"values":[]}`,
		`,{"metric":{"__name__":"m","job":"a","instance":"i"},"values":[]}`, false))
	_, err := importFrom(s.URL, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x")})
	if !errors.Is(err, errBudget) || !strings.Contains(err.Error(), fmt.Sprint(capture.DefaultLimits.MaxSeries)) {
		t.Errorf("default budget: err %v", err)
	}
}

// A store answering for more instances than an import takes is refused
// before their state is held (150,000 instances were an out-of-memory).
func TestImportTargetCap(t *testing.T) {
	s := serve(t, fakeStore(DefaultMaxTargets+1))
	out := filepath.Join(t.TempDir(), "x")
	_, err := importFrom(s.URL, 2*time.Second, Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d targets", DefaultMaxTargets)) {
		t.Fatalf("err %v, want more than %d targets", err, DefaultMaxTargets)
	}
}

// The store's error text is printed without the URL's credentials, even
// where the store (or a proxy before it) echoes the request: its query
// token, its password, its basic-auth header.
func TestImportStoreErrorRedacted(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"status":"error","errorType":"forbidden","error":"denied: GET %s with %s for reader:hunter2 at %s"}`,
			r.URL.RequestURI(), r.Header.Get("Authorization"), "http://reader:hunter2@proxy:3128/")
	})
	u := strings.Replace(s.URL, "://", "://reader:hunter2@", 1) + "/?token=tok3n-SECRET"
	_, err := importFrom(u, time.Minute, Options{Out: filepath.Join(t.TempDir(), "x")})
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("err %v, want the store's refusal", err)
	}
	for _, secret := range []string{"hunter2", "tok3n-SECRET", base64.StdEncoding.EncodeToString([]byte("reader:hunter2"))} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error holds %q: %v", secret, err)
		}
	}
}

// A failure on a later chunk leaves the folder marked partial, with why
// and up to when; an interrupted import's manifest says partial until
// its end is written.
func TestImportPartial(t *testing.T) {
	var n int
	var mu sync.Mutex
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/metadata") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"error","errorType":"unavailable","error":"the store is restarting"}`)
			return
		}
		fakeStore(2)(w, r)
	})
	out := filepath.Join(t.TempDir(), "x")
	_, err := importFrom(s.URL, 3*time.Minute, Options{Out: out, Chunk: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "restarting") || !strings.Contains(err.Error(), "partial") {
		t.Fatalf("err %v, want the store's error and partial", err)
	}
	im := importRecord(t, out)
	if !strings.Contains(im.Partial, "restarting") || !strings.Contains(im.Partial, "2026-12-02T") {
		t.Errorf("manifest partial %q, want the store's error and when", im.Partial)
	}
}

// importRecord is the import record of the one manifest in dir.
func importRecord(t *testing.T, dir string) *capture.Import {
	t.Helper()
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifests) != 1 || r.Manifests[0].Import == nil {
		t.Fatalf("%s: %d manifests, want one of an import", dir, len(r.Manifests))
	}
	return r.Manifests[0].Import
}

// An import whose rows hold not one sample is an error, not "imported
// 0 samples": a target whose series do not parse as a page (here a label
// value over the parse's cap), or a target the store never scraped
// (up = 0 throughout).
func TestImportNoSampleIsAnError(t *testing.T) {
	long := strings.Repeat("v", capture.DefaultLimits.MaxLabelValueBytes+1)
	for _, c := range []struct{ name, answer string }{
		{"unparsable", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m","job":"a","instance":"i","l":"` + long + `"},"values":[[1796216001,"1"],[1796216002,"1"]]}]}}`},
		{"down", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"a","instance":"i"},"values":[[1796216001,"0"],[1796216002,"0"]]}]}}`},
	} {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/metadata") {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, c.answer)
		})
		out := filepath.Join(t.TempDir(), "x")
		sum, err := importFrom(s.URL, time.Minute, Options{Out: out})
		if !errors.Is(err, errNoSamples) {
			t.Errorf("%s: %+v, %v; want an error of no samples", c.name, sum, err)
			continue
		}
		if im := importRecord(t, out); !strings.Contains(im.Partial, "not one sample") {
			t.Errorf("%s: manifest partial %q", c.name, im.Partial)
		}
	}
}
