package render

import "testing"

// keepWords escapes every word and wraps only those a browser could break
// inside; a hostile word stays text.
func TestKeepWords(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"kv usage":                  "kv usage",
		"— (stale)":                 "— (stale)",
		"llamacpp-3 +0:27":          `<span class="w">llamacpp-3</span> +0:27`,
		"Qwen/Qwen3-8B: 2 tokens/s": `<span class="w">Qwen/Qwen3-8B:</span> 2 <span class="w">tokens/s</span>`,
		"f(x) <b>x</b>":             `<span class="w">f(x)</span> <span class="w">&lt;b&gt;x&lt;/b&gt;</span>`,
		`{engine="1"} a&b`:          `{engine=&#34;1&#34;} a&amp;b`,
		"--show-hidden-metrics":     `<span class="w">--show-hidden-metrics</span>`,
		"slow_scrape, host_stall":   "slow_scrape, host_stall",
	} {
		if got := string(keepWords(in)); got != want {
			t.Errorf("keepWords(%q) = %q, want %q", in, got, want)
		}
	}
}
