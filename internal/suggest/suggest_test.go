package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"out", "out", 0}, {"", "abc", 3}, {"treshold", "threshold", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	words := []string{"out", "json", "interval", "threshold", "ttft_p99", "ttft_p50"}
	for _, c := range []struct{ w, want string }{
		{"otu", "out"},            // two edits
		{"jsn", "json"},           // one
		{"inter", "interval"},     // a prefix counts as one edit
		{"treshold", "threshold"}, // one
		{"ttft_p98", "ttft_p99"},  // one edit (p50 is two)
		{"ttft_p5", "ttft_p50"},   // prefix
		{"zzzzzz", ""},            // nothing near
		{"o", "out"},              // two edits away
	} {
		if got := Closest(c.w, words); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.w, got, c.want)
		}
	}
}
