// Package promimport reads what a Prometheus-compatible store (Prometheus,
// Thanos, Mimir, VictoriaMetrics) already scraped and writes it as an
// llmrec recording: one row per target and scrape timestamp, carrying the
// samples and no body, in a session whose manifest says it was imported
// and from where (llmrec import prometheus).
//
// Raw samples come from instant queries over a range selector
// (SELECTOR[Δ] at time t answers every stored sample in (t−Δ, t] with its
// own timestamp, with no PromQL extrapolation), paged through the range so
// that memory holds one page. The remote-read API is not used: its
// protocol is snappy-compressed protobuf, which would add a dependency to
// return the same samples.
package promimport

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// store is one Prometheus HTTP API.
type store struct {
	base  *url.URL // the URL as given, credentials included (never printed)
	shown string   // the URL as it may be printed
	hc    *http.Client
	// secrets are the URL's own credentials (its password, user and
	// query values, and the basic-auth header made of them): a store or
	// proxy that echoes a request in its error text has them taken out.
	secrets []string
}

func newStore(raw string, hc *http.Client, follow bool) (*store, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %s: want http:// or https:// and a host", redact.URL(raw))
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	// The caller's client with this import's redirect policy: a redirect
	// is not followed unless asked for, and then only to the same scheme,
	// host and port (the recorder's rule), so the basic-auth header never
	// reaches another origin or goes down from https to http.
	c := *hc
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !follow || len(via) >= maxRedirects || !record.SameOrigin(req.URL, via[0].URL) {
			return http.ErrUseLastResponse
		}
		req.Header.Del("Referer")
		return nil
	}
	return &store{base: u, shown: redact.URL(raw), hc: &c, secrets: secretsOf(u)}, nil
}

// maxRedirects bounds a chain of followed (same-origin) redirects.
const maxRedirects = 5

// secretsOf are the credentials a URL carries, as they may be echoed.
func secretsOf(u *url.URL) []string {
	var out []string
	add := func(v string) {
		// A value of a few characters would blank out ordinary words.
		if len(v) >= 4 {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	if u.User != nil {
		p, _ := u.User.Password()
		add(p)
		add(u.User.Username())
		add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p)))
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	return out
}

// scrub is text the store sent, as it may be printed: the URL's own
// credentials taken out wherever they appear, then every URL and user@host
// redacted.
func (s *store) scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, redact.Mark)
	}
	return redact.Text(text)
}

// Budget bounds what one chunk's answers may hold, every selector's
// together: past any bound the import stops with an error naming it,
// before the samples are held.
type Budget struct {
	// Bytes bounds one answer's JSON (decompressed).
	Bytes int64
	// Series and Samples bound the series and samples of one chunk.
	Series, Samples int
}

// DefaultBudget is the budget of an import given none. Series is the
// recorder's own cap on one page's series (capture.DefaultLimits); Samples
// is twice what eight engines of 500 series scraped every second put in a
// chunk of the default 2 min, which cost 187 MB (see DefaultChunk), so a
// chunk holds about 400 MB at most; Bytes is far above what so many
// samples print as (about 30 bytes each) and ends an endless answer.
var DefaultBudget = Budget{Bytes: 256 << 20, Series: capture.DefaultLimits.MaxSeries, Samples: 1_000_000}

// errBudget is an answer past its budget.
var errBudget = errors.New("over the import's budget")

// budgetReader reads at most n bytes, then fails with errBudget. Once
// dec is set it also fails when the decoder holds more than pending bytes
// not yet consumed: one JSON value (an endless string) is buffered whole
// by encoding/json before it is returned.
type budgetReader struct {
	r       io.Reader
	n, max  int64
	read    int64
	dec     *json.Decoder
	pending int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, fmt.Errorf("%w: the answer is over %d bytes (a shorter --chunk or a narrower --match)", errBudget, b.max)
	}
	if b.dec != nil && b.read-b.dec.InputOffset() > b.pending {
		return 0, fmt.Errorf("%w: one value of the answer is over %d bytes", errBudget, b.pending)
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	b.read += int64(n)
	return n, err
}

// maxValue bounds one JSON value of a query's answer held while it is
// decoded (a series' label set, one sample, one string): far above any
// label set a page holds, far below the answer's budget.
const maxValue = 8 << 20

// get asks the API at path with the query q and reads its answer's data
// with data, which is handed the decoder positioned at the data's value.
// The answer is streamed, never held whole: its bytes are bounded by
// maxBytes, one value held at once by maxValue. An error says what the store said (its errorType and error),
// scrubbed of credentials, never the URL with them.
func (s *store) get(ctx context.Context, path string, q url.Values, maxBytes, maxValue int64, data func(*json.Decoder) error) error {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	// A query the URL carries (a token some proxies want) goes with every request.
	all := u.Query()
	for k, vs := range q {
		all[k] = vs
	}
	u.RawQuery = all.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", s.shown, err)
	}
	if u.User != nil {
		p, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), p)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		// url.Error quotes the whole URL; its cause names no credential.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %s", s.shown+path, s.scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc := resp.Header.Get("Location")
		if l, err := resp.Location(); err == nil {
			loc = l.String()
		}
		return &apiError{where: s.shown + path, status: resp.StatusCode,
			msg: fmt.Sprintf("HTTP %d: redirect to %q not followed (an import follows none unless --follow-redirects, and then only to the same scheme, host and port)", resp.StatusCode, s.scrub(redact.URL(loc)))}
	}
	br := &budgetReader{r: resp.Body, n: maxBytes, max: maxBytes, pending: maxValue}
	br.dec = json.NewDecoder(br)
	st, derr := readAnswer(br.dec, data)
	if st.Status == "error" || st.Error != "" {
		return &apiError{where: s.shown + path, status: resp.StatusCode, kind: s.scrub(st.ErrorType), msg: s.scrub(st.Error)}
	}
	if errors.Is(derr, errBudget) {
		return fmt.Errorf("%s: %w", s.shown+path, derr)
	}
	if resp.StatusCode != http.StatusOK {
		return &apiError{where: s.shown + path, status: resp.StatusCode, msg: "HTTP " + s.scrub(resp.Status)}
	}
	if derr != nil {
		return fmt.Errorf("%s: the answer is not the Prometheus API's JSON: %s", s.shown+path, s.scrub(derr.Error()))
	}
	if st.Status != "success" {
		return fmt.Errorf("%s: status %q", s.shown+path, s.scrub(st.Status))
	}
	return nil
}

// apiError is the store's own refusal, passed on in its words (scrubbed).
type apiError struct {
	where  string
	status int
	kind   string // errorType: bad_data, execution, ...
	msg    string
}

func (e *apiError) Error() string {
	if e.kind == "" {
		return fmt.Sprintf("%s: %s", e.where, redact.Text(e.msg))
	}
	return fmt.Sprintf("%s: %s: %s", e.where, e.kind, redact.Text(e.msg))
}

// answerStatus is the envelope of an API answer.
type answerStatus struct {
	Status, ErrorType, Error string
}

// maxText bounds a string of the envelope (status, errorType, error).
const maxText = 64 << 10

// readAnswer walks the API's envelope {"status", "errorType", "error",
// "data"} token by token, handing data's value to data; other keys are
// skipped without being held.
func readAnswer(dec *json.Decoder, data func(*json.Decoder) error) (answerStatus, error) {
	var st answerStatus
	err := readObject(dec, func(k string) (bool, error) {
		var to *string
		switch k {
		case "status":
			to = &st.Status
		case "errorType":
			to = &st.ErrorType
		case "error":
			to = &st.Error
		case "data":
			return true, data(dec)
		default:
			return false, nil
		}
		v, err := readString(dec, k)
		*to = v
		return true, err
	})
	return st, err
}

// readObject walks one JSON object token by token, handing each key to
// field, which reads its value and says so; a value field did not read
// is skipped without being held.
func readObject(dec *json.Decoder, field func(key string) (bool, error)) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		read, err := field(k)
		if err != nil {
			return err
		}
		if !read {
			if err := skipValue(dec); err != nil {
				return err
			}
		}
	}
	return expectDelim(dec, '}')
}

// readString reads a string value of key, cut at maxText.
func readString(dec *json.Decoder, key string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	v, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%s is not a string", key)
	}
	return v[:min(len(v), maxText)], nil
}

// expectDelim reads one token, which must be d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %v, found %v", d, describeToken(tok))
	}
	return nil
}

// describeToken names a token's kind, never its text (a store's text may
// echo a credential).
func describeToken(tok json.Token) string {
	switch d := tok.(type) {
	case json.Delim:
		return d.String()
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return "a scalar"
}

// skipValue reads one value token by token, holding none of it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// series is one series of a range-vector answer.
type series struct {
	Metric map[string]string `json:"metric"`
	Values []pair            `json:"values"`
}

// pair is one sample as the API prints it, [1700000000.123, "12.5"],
// read into its millisecond and value as it is decoded.
type pair struct {
	ms int64
	v  float64
}

func (p *pair) UnmarshalJSON(b []byte) error {
	in, ok := bytes.CutPrefix(bytes.TrimSpace(b), []byte("["))
	in, ok2 := bytes.CutSuffix(in, []byte("]"))
	ts, val, ok3 := bytes.Cut(in, []byte(","))
	if !ok || !ok2 || !ok3 {
		return fmt.Errorf("sample %.40s is not [time, value]", b)
	}
	var err error
	if p.ms, err = parseMs(bytes.TrimSpace(ts)); err != nil {
		return err
	}
	p.v, err = parseValue(bytes.TrimSpace(val))
	return err
}

// tally counts what a chunk's answers have held against its budget.
type tally struct {
	budget          Budget
	series, samples int
}

// readMatrix reads a range-vector answer's data, {"resultType": "matrix",
// "result": [{"metric": {...}, "values": [[t, "v"], ...]}, ...]}, series
// by series and sample by sample, counting each against the budget; past
// it, it stops at once with errBudget. Other keys (a native histogram's
// "histograms") are skipped.
func readMatrix(dec *json.Decoder, tl *tally, out *[]series) (resultType string, err error) {
	err = readObject(dec, func(k string) (bool, error) {
		switch k {
		case "resultType":
			var err error
			resultType, err = readString(dec, k)
			return true, err
		case "result":
			return true, readResult(dec, tl, out)
		}
		return false, nil
	})
	return resultType, err
}

func readResult(dec *json.Decoder, tl *tally, out *[]series) error {
	return readList(dec, "result", func() error {
		tl.series++
		if tl.series > tl.budget.Series {
			return fmt.Errorf("%w: more than %d series in one chunk (a narrower --match, or a higher --max-series)", errBudget, tl.budget.Series)
		}
		var s series
		if err := readSeries(dec, tl, &s); err != nil {
			return err
		}
		*out = append(*out, s)
		return nil
	})
}

// readList walks one JSON list (null is an empty one), calling each at
// every element, which reads it.
func readList(dec *json.Decoder, what string, each func() error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("%s: want a list, found %s", what, describeToken(tok))
	}
	for dec.More() {
		if err := each(); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func readSeries(dec *json.Decoder, tl *tally, s *series) error {
	return readObject(dec, func(k string) (bool, error) {
		switch k {
		case "metric":
			return true, dec.Decode(&s.Metric)
		case "values":
			return true, readValues(dec, tl, s)
		}
		return false, nil
	})
}

// readValues reads a series' samples one by one, each counted against
// the budget before it is held.
func readValues(dec *json.Decoder, tl *tally, s *series) error {
	return readList(dec, "values", func() error {
		tl.samples++
		if tl.samples > tl.budget.Samples {
			return fmt.Errorf("%w: more than %d samples in one chunk (a shorter --chunk, or a higher --max-samples)", errBudget, tl.budget.Samples)
		}
		var p pair
		if err := dec.Decode(&p); err != nil {
			return err
		}
		s.Values = append(s.Values, p)
		return nil
	})
}

// raw returns every sample of the series sel selects with a timestamp in
// (from, to], milliseconds: an instant query at to over sel[to−from]. The
// series and samples count against tl.
func (s *store) raw(ctx context.Context, sel string, from, to int64, tl *tally) ([]series, error) {
	var out []series
	var rt string
	q := url.Values{"query": {fmt.Sprintf("%s[%dms]", sel, to-from)}, "time": {msText(to)}}
	err := s.get(ctx, "/api/v1/query", q, tl.budget.Bytes, maxValue, func(dec *json.Decoder) error {
		var err error
		rt, err = readMatrix(dec, tl, &out)
		return err
	})
	if err != nil {
		return nil, err
	}
	if rt != "matrix" {
		return nil, fmt.Errorf("%s: %q answered %s, not raw samples: give a series selector", s.shown, sel, s.scrub(rt))
	}
	return out, nil
}

// maxMetadata bounds the metadata answer, held whole while it is decoded
// (a store of 10,000 families serves about 2 MB).
const maxMetadata = 64 << 20

// metadata is a family's type and help as the store saw them.
type metadata struct {
	Type string `json:"type"`
	Help string `json:"help"`
}

// metadata returns the families' types and help the store serves
// (/api/v1/metadata), nil when it serves none. A store that cannot be
// reached is an error; one that answers without metadata is not.
func (s *store) metadata(ctx context.Context) (map[string]metadata, error) {
	var data map[string][]metadata
	err := s.get(ctx, "/api/v1/metadata", nil, maxMetadata, maxMetadata, func(dec *json.Decoder) error { return dec.Decode(&data) })
	var ae *apiError
	if errors.As(err, &ae) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]metadata, len(data))
	for name, ms := range data {
		if len(ms) > 0 {
			out[name] = ms[0]
		}
	}
	return out, nil
}

// msText is a Unix time in milliseconds as the API's decimal seconds.
func msText(ms int64) string {
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

// parseMs reads the API's decimal seconds ("1700000000.123") to the
// millisecond, exactly (a float64 would round some). Only digits, one
// point and a leading minus are taken.
func parseMs(raw []byte) (int64, error) {
	bad := fmt.Errorf("timestamp %.40s is not decimal seconds", raw)
	t, neg := strings.CutPrefix(string(raw), "-")
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" || !digits(whole) || !digits(frac) {
		return 0, bad
	}
	if len(frac) > 3 {
		// The API prints milliseconds; more digits are never a whole ms.
		frac = frac[:3]
	}
	frac += strings.Repeat("0", 3-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w > (math.MaxInt64-f)/1000 {
		return 0, bad
	}
	ms := w*1000 + f
	if neg {
		ms = -ms
	}
	return ms, nil
}

// digits reports whether s is ASCII digits only ("" is).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseValue reads a sample value the API prints as a string ("12.5",
// "NaN", "+Inf").
func parseValue(raw []byte) (float64, error) {
	s, ok := bytes.CutPrefix(raw, []byte(`"`))
	s, ok2 := bytes.CutSuffix(s, []byte(`"`))
	if !ok || !ok2 {
		return 0, fmt.Errorf("value %.40s is not a string", raw)
	}
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return 0, fmt.Errorf("value %.40s: %w", raw, err)
	}
	return v, nil
}
