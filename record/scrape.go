package record

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmrec/llmrec/internal/engines"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/redact"
)

// AcceptHeader asks for the classic text format: the OpenMetrics decoders
// are reference decoders and far slower, and every engine serves 0.0.4.
const AcceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// Clock stamps times as Unix nanoseconds from one wall-clock reading plus
// monotonic elapsed time, so a wall-clock step cannot reorder a run.
type Clock struct {
	base   time.Time
	baseNs int64
}

// NewClock reads the wall clock once.
func NewClock() Clock {
	now := time.Now()
	return Clock{base: now, baseNs: now.UnixNano()}
}

// Ns converts a time.Time taken from time.Now (which carries a monotonic
// reading) to the run's Unix nanoseconds.
func (c Clock) Ns(t time.Time) int64 { return c.baseNs + int64(t.Sub(c.base)) }

// Start is the clock's base.
func (c Clock) Start() time.Time { return c.base }

// newClient returns the HTTP client of a recording. Compression is handled
// here rather than by the transport, so the body can be capped after
// decompression and the wire size recorded.
func newClient() *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0,
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}

// maxRedirects bounds a chain of followed redirects.
const maxRedirects = 5

type followKey struct{}

// withRedirects sets the redirect policy of the requests made with ctx:
// follow same-origin redirects or none.
func withRedirects(ctx context.Context, follow bool) context.Context {
	return context.WithValue(ctx, followKey{}, follow)
}

// checkRedirect is the client's redirect policy. A redirect is followed
// only when the request's context asks for it (follow_redirects) and it
// stays on the first request's scheme, host and port, so credentials
// (Authorization, configured headers, the URL's own) never reach another
// origin; the Referer Go would set from the previous URL is removed.
// Otherwise the redirect itself is the response (a row with its status).
func checkRedirect(req *http.Request, via []*http.Request) error {
	follow, _ := req.Context().Value(followKey{}).(bool)
	if !follow || len(via) >= maxRedirects || !SameOrigin(req.URL, via[0].URL) {
		return http.ErrUseLastResponse
	}
	req.Header.Del("Referer")
	return nil
}

// SameOrigin compares scheme, host name and port (the scheme's default
// when absent). localhost and 127.0.0.1 are different hosts.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// isRedirect is a 3xx answer that names where to go.
func isRedirect(resp *http.Response) bool {
	return resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != ""
}

// redirectError says why a redirect answer ends a request: the policy
// said no, it leaves the origin, or the chain is too long. The location
// is redacted.
func redirectError(resp *http.Response, follow bool) error {
	loc := resp.Header.Get("Location")
	why := "follow_redirects is off"
	if u, err := resp.Location(); err == nil {
		loc = u.String()
		switch {
		case !follow:
		case !SameOrigin(u, resp.Request.URL):
			why = "another origin (only the same scheme, host and port are followed)"
		default:
			why = fmt.Sprintf("more than %d redirects", maxRedirects)
		}
	}
	return fmt.Errorf("HTTP %s: redirect to %q not followed: %s", resp.Status, redact.URL(loc), why)
}

// request is one scrape to make.
type request struct {
	target    *Target
	endpoint  string // capture.EndpointMetrics or a path
	url       string
	seq       int64
	scheduled time.Time
	maxBody   int64
	limits    capture.Limits // of parsing the body; zero: none
	runID     string
	interner  *expo.Interner // of the endpoint; nil: none
	bodies    *bodyReader    // shared by the recording; nil: read freely
	parses    parseGate      // shared by the recording; nil: never shed
	sizeHint  int64          // the endpoint's last body's size; 0: unknown
}

// countingReader counts bytes read from the wire.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// scrape performs one request and returns its row, samples parsed. It
// never fails: every problem is a row with its error.
func scrape(ctx context.Context, client *http.Client, clock Clock, q request) capture.Scrape {
	row := fetch(ctx, client, clock, q)
	if row.Outcome == capture.OutcomeOK {
		q.parses.parse(&row, q.interner, q.limits)
	}
	return row
}

// fetch performs one request and returns its row, its body not parsed yet
// (outcome ok for a complete 200 answer). It never fails: every problem is
// a row with its error.
func fetch(ctx context.Context, client *http.Client, clock Clock, q request) capture.Scrape {
	t := q.target
	row := capture.Scrape{
		RunID: q.runID, Target: t.Name, Engine: t.Engine, Endpoint: q.endpoint,
		URL: redact.URL(q.url), Seq: q.seq, ScheduledNs: clock.Ns(q.scheduled),
	}
	fail := func(outcome string, err error) capture.Scrape {
		row.Outcome = outcome
		msg := redact.Text(err.Error())
		row.Error = &msg
		if row.EndNs == 0 {
			row.EndNs = clock.Ns(time.Now())
		}
		return row
	}
	timeout := t.Timeout.D()
	ctx, cancel := context.WithTimeout(withRedirects(ctx, t.follows()), timeout)
	defer cancel()
	var firstByte time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { firstByte = time.Now() }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, q.url, nil)
	if err != nil {
		return fail(capture.OutcomeError, fmt.Errorf("build request: %w", err))
	}
	if q.endpoint == capture.EndpointMetrics {
		req.Header.Set("Accept", AcceptHeader)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", "llmrec/"+capture.Version)
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	if t.BearerTokenEnv != "" {
		req.Header.Set("Authorization", "Bearer "+os.Getenv(t.BearerTokenEnv))
	}
	if t.Host != "" {
		req.Host = t.Host // one address of a name: the server is asked for the name
	}
	start := time.Now()
	row.StartNs = clock.Ns(start)
	resp, err := client.Do(req)
	if err != nil {
		return fail(capture.OutcomeError, describe(err, timeout))
	}
	defer resp.Body.Close()
	if !firstByte.IsZero() {
		row.FirstByteNs = clock.Ns(firstByte)
	}
	status := int32(resp.StatusCode)
	row.Status = &status
	row.Headers = responseHeaders(resp.Header, q.target.ProcessStartHeader)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		row.ContentType = &ct
	}
	// A redirect's body is not stored: it is a page pointing at the
	// location, which may echo the request's credentials.
	if isRedirect(resp) {
		row.EndNs = clock.Ns(time.Now())
		return fail(capture.OutcomeHTTPError, redirectError(resp, t.follows()))
	}
	wire := &countingReader{r: resp.Body}
	var body io.Reader = wire
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		row.ContentEncoding = &ce
		switch strings.ToLower(ce) {
		case "gzip":
			zr, err := gzip.NewReader(wire)
			if err != nil {
				return fail(capture.OutcomeError, fmt.Errorf("gzip body: %w", err))
			}
			body = zr
		case "identity":
		default:
			return fail(capture.OutcomeError, fmt.Errorf("unsupported content-encoding %q", ce))
		}
	}
	// A body announced over the cap is refused unread.
	if resp.ContentLength > q.maxBody && row.ContentEncoding == nil {
		row.WireBytes = &wire.n
		return fail(capture.OutcomeError, fmt.Errorf("body exceeds the %d-byte cap (max_body_bytes; Content-Length %d); not read, not stored", q.maxBody, resp.ContentLength))
	}
	bodies := q.bodies
	if bodies == nil {
		bodies = newBodyReader()
	}
	hint := q.sizeHint
	if resp.ContentLength > 0 && row.ContentEncoding == nil {
		hint = resp.ContentLength
	}
	b, n, err := bodies.read(ctx, body, q.maxBody, hint)
	row.EndNs = clock.Ns(time.Now())
	row.WireBytes = &wire.n
	if err != nil {
		return fail(capture.OutcomeError, fmt.Errorf("read body after %d bytes: %w", n, describe(err, timeout)))
	}
	if n > q.maxBody {
		what := "body"
		if row.ContentEncoding != nil {
			what = "decompressed body"
		}
		return fail(capture.OutcomeError, fmt.Errorf("%s exceeds the %d-byte cap (max_body_bytes); not stored", what, q.maxBody))
	}
	row.Body = b
	if resp.StatusCode != http.StatusOK {
		return fail(capture.OutcomeHTTPError, fmt.Errorf("HTTP %s", resp.Status))
	}
	row.Outcome = capture.OutcomeOK
	return row
}

// describe turns transport errors into messages a user can act on. The
// URL Go's client puts in its errors is redacted (it strips a password,
// not a token alone as user information, nor the query).
func describe(err error, timeout time.Duration) error {
	if ue, ok := err.(*url.Error); ok {
		c := *ue
		c.URL = redact.URL(ue.URL)
		if te := describeTLS(ue.Err); te != nil {
			c.Err = te
		}
		err = &c
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timeout after %s: %w", timeout, err)
	}
	return err
}

// keptFirst are the headers a row keeps first when its headers are over
// the cap: the content type and every engine's own process start.
var keptFirst = append([]string{"Content-Type"}, engines.ProcessStartHeaders("")...)

// responseHeaders is a response's headers as the headers column stores
// them: a JSON object with sorted keys, each value through redact.Header,
// cut at capture.MaxHeaderBytes (capture.EncodeHeaders) keeping the
// target's process-start header (startHeader, "" none), every engine's own,
// and the content type first.
func responseHeaders(h http.Header, startHeader string) *string {
	m := make(map[string]string, len(h))
	for k, vs := range h {
		m[k] = strings.Join(vs, ", ")
	}
	first := keptFirst
	if startHeader != "" && !slices.Contains(first, startHeader) {
		first = append(slices.Clip(first), startHeader)
	}
	return capture.EncodeHeaders(redact.Headers(m), first...)
}
