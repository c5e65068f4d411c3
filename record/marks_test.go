package record

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// The recorder's mark endpoint appends each POSTed mark to the run
// folder's marks file, by query or body; it refuses other methods, bad
// names, and an address off loopback unless told it may.
func TestMarkEndpoint(t *testing.T) {
	dir := t.TempDir()
	if _, err := ListenMarks("0.0.0.0:0", dir, false); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Errorf("a public address without --mark-public: %v", err)
	}
	m, err := ListenMarks("127.0.0.1:0", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	url := "http://" + m.Addr() + "/mark"
	for _, c := range []struct {
		query, body string
		status      int
	}{
		{"?name=load-4", "", 200},
		{"?name=load-4&end=1", "", 200},
		{"", "load-8", 200},
		{"", `{"name": "load-8", "end": true}`, 200},
		{"", "", 400},
		{"?name=a%0Ab", "", 400},
		{"?name=x&end=maybe", "", 400},
	} {
		resp, err := postMark(url+c.query, c.body, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("POST %s %q: %d, want %d", c.query, c.body, resp.StatusCode, c.status)
		}
	}
	resp, err := http.Get(url + "?name=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	marks, bad, err := capture.ReadMarks(dir)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	var got []string
	for _, mk := range marks {
		s := mk.Name
		if mk.End {
			s += " end"
		}
		if mk.Source != "http" || mk.TNs == 0 {
			t.Errorf("mark %+v", mk)
		}
		got = append(got, s)
	}
	if strings.Join(got, ",") != "load-4,load-4 end,load-8,load-8 end" {
		t.Errorf("marks %v", got)
	}
}

// postMark POSTs body to url as llmrec load --mark does (the mark header
// set), then sets hdr over it ("" deletes a header; "Host" sets the Host).
func postMark(url, body string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set(capture.MarkHeader, "1")
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	return http.DefaultClient.Do(req)
}

// The endpoint takes only what a web page cannot forge: a page's no-cors
// POST (no mark header), a browser's request (Origin), a name rebound to
// loopback by a page's DNS (Host), and a CORS preflight are all refused,
// no CORS header is ever sent, and nothing is written. The same request
// with the header, an address Host and no Origin is taken.
func TestMarkEndpointRefusesForgery(t *testing.T) {
	dir := t.TempDir()
	m, err := ListenMarks("127.0.0.1:0", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	url := "http://" + m.Addr() + "/mark?name=x"
	_, port, _ := strings.Cut(m.Addr(), ":")
	for _, c := range []struct {
		name string
		hdr  map[string]string
	}{
		{"no-cors POST from a page", map[string]string{capture.MarkHeader: "", "Origin": "https://evil.example"}},
		{"no mark header", map[string]string{capture.MarkHeader: ""}},
		{"Origin set", map[string]string{"Origin": "http://127.0.0.1:" + port}},
		{"rebound DNS name", map[string]string{"Host": "evil.example:" + port}},
		{"another port", map[string]string{"Host": "127.0.0.1:1"}},
		{"no port", map[string]string{"Host": "127.0.0.1"}},
	} {
		resp, err := postMark(url, "", c.hdr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, resp.StatusCode)
		}
		noCORS(t, c.name, resp)
	}
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", capture.MarkHeader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		t.Errorf("preflight answered %d", resp.StatusCode)
	}
	noCORS(t, "preflight", resp)
	if _, err := os.Stat(filepath.Join(dir, capture.MarksFile)); !os.IsNotExist(err) {
		t.Errorf("a refused request wrote marks: %v", err)
	}
	for _, host := range []string{"", "localhost:" + port, "[::1]:" + port} {
		resp, err := postMark(url, "", map[string]string{"Host": host})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: %d", host, resp.StatusCode)
		}
	}
}

func noCORS(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for k := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: answered with %s", what, k)
		}
	}
}

// marks.jsonl is opened without following a symlink: an append to one
// pointing out of the run folder fails and leaves its target as it was, and
// a read refuses it.
func TestMarksSymlinkRefused(t *testing.T) {
	dir, other := t.TempDir(), filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(other, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dir, capture.MarksFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := capture.AppendMark(dir, capture.Mark{Name: "a", Source: "cli"}); err == nil {
		t.Error("a mark was appended through a symlink")
	}
	if b, _ := os.ReadFile(other); string(b) != "keep\n" {
		t.Errorf("the symlink's target now holds %q", b)
	}
	if _, _, err := capture.ReadMarks(dir); err == nil {
		t.Error("marks read through a symlink")
	}
}

// Marks are bounded: an append past MaxMarks is refused, a file of more is
// read to MaxMarks with the rest named, one longer than MaxMarksBytes is
// read to that and the rest named, and lines that do not parse are named
// up to a bound.
func TestMarksBounded(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range capture.MaxMarks {
		b.WriteString(`{"t_ns": ` + strings.Repeat("1", 1+i%9) + `, "name": "p", "end": false, "source": "cli"}` + "\n")
	}
	path := filepath.Join(dir, capture.MarksFile)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := capture.AppendMark(dir, capture.Mark{Name: "one-more", Source: "cli"}); err == nil || !strings.Contains(err.Error(), "1000 marks") {
		t.Errorf("mark %d: %v", capture.MaxMarks+1, err)
	}
	b.WriteString(`{"t_ns": 5, "name": "q", "end": false, "source": "cli"}` + "\n")
	marks, bad := capture.ParseMarks(path, b.Bytes())
	if len(marks) != capture.MaxMarks || len(bad) != 1 || !strings.Contains(bad[0], "more than 1000 marks") {
		t.Errorf("%d marks, bad %v", len(marks), bad)
	}
	junk := bytes.Repeat([]byte("x\n"), capture.MaxMarksBytes)
	marks, bad = capture.ParseMarks(path, junk)
	if len(marks) != 0 || len(bad) > 30 || !strings.Contains(strings.Join(bad, "\n"), "longer than") ||
		!strings.Contains(bad[len(bad)-1], "more lines that do not read") {
		t.Errorf("%d marks, %d bad: %v", len(marks), len(bad), bad[len(bad)-3:])
	}
}
