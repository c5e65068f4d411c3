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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/record/redact"
)

// store is one Prometheus HTTP API.
type store struct {
	base  *url.URL // the URL as given, credentials included (never printed)
	shown string   // the URL as it may be printed
	hc    *http.Client
}

func newStore(raw string, hc *http.Client) (*store, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %s: want http:// or https:// and a host", redact.URL(raw))
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &store{base: u, shown: redact.URL(raw), hc: hc}, nil
}

// maxAnswer bounds one answer's body: a page of the range holds what the
// store's own query limits let through (50 M samples by default); this is
// far above a page at the default chunk.
const maxAnswer = 4 << 30

// get asks the API at path with the query q and decodes its data into v.
// An error says what the store said (its errorType and error), never the
// URL with its credentials.
func (s *store) get(ctx context.Context, path string, q url.Values, v any) error {
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
		return fmt.Errorf("%s: %s", s.shown+path, redact.Text(err.Error()))
	}
	defer resp.Body.Close()
	// The data is decoded in place, never held as raw JSON first: a
	// chunk's answer is the bulk of an import's memory.
	doc := struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      any    `json:"data"`
	}{Data: v}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer))
	derr := dec.Decode(&doc)
	if doc.Status == "error" || doc.Error != "" {
		return &apiError{where: s.shown + path, status: resp.StatusCode, kind: doc.ErrorType, msg: doc.Error}
	}
	if resp.StatusCode != http.StatusOK {
		return &apiError{where: s.shown + path, status: resp.StatusCode, msg: "HTTP " + resp.Status}
	}
	if derr != nil {
		return fmt.Errorf("%s: the answer is not the Prometheus API's JSON: %w", s.shown+path, derr)
	}
	if doc.Status != "success" {
		return fmt.Errorf("%s: status %q", s.shown+path, doc.Status)
	}
	return nil
}

// apiError is the store's own refusal, passed on in its words.
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

// raw returns every sample of the series sel selects with a timestamp in
// (from, to], milliseconds: an instant query at to over sel[to−from].
func (s *store) raw(ctx context.Context, sel string, from, to int64) ([]series, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []series `json:"result"`
	}
	q := url.Values{"query": {fmt.Sprintf("%s[%dms]", sel, to-from)}, "time": {msText(to)}}
	if err := s.get(ctx, "/api/v1/query", q, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("%s: %q answered %s, not raw samples: give a series selector", s.shown, sel, data.ResultType)
	}
	return data.Result, nil
}

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
	err := s.get(ctx, "/api/v1/metadata", nil, &data)
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
