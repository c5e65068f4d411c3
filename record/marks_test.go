package record

import (
	"net/http"
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
		resp, err := http.Post(url+c.query, "text/plain", strings.NewReader(c.body))
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
