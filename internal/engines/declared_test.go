package engines

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/internal/sharedtest"
)

// captures names, by engine, the prefix of the real captures in
// ../shared/captures/real that engine's declarations are checked against.
var captures = map[string]string{
	LlamaCpp: "llamacpp-",
	VLLM:     "vllm-v1-",
	VLLMV0:   "vllm-v0-",
	SGLang:   "sglang-",
	TGI:      "tgi-",
	TRTLLM:   "trtllm-",
}

// uncaptured are the declarations no real capture holds, with why; every
// other one must be in a capture of its engine.
var uncaptured = map[string]string{
	"llamacpp:n_past_max":     "older builds only; no capture of one",
	"vllm:lora_requests_info": "printed only with LoRA adapters loaded; no capture of one",
}

// Every declared series of an engine is in a real capture of that engine
// with the TYPE its declaration says (Typed, or what its kind prints): an
// engine upgrade that renames it or retypes it fails here.
func TestDeclarationsInRealCaptures(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "captures", "real")
	sharedtest.Need(t, dir, "real captures")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("real captures: %v", err)
	}
	for id, prefix := range captures {
		types := map[string][]string{} // family → TYPE of each capture
		var bodies []string
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, string(b))
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
					types[f[2]] = append(types[f[2]], f[3])
				}
			}
		}
		if len(bodies) == 0 {
			t.Errorf("%s: no real capture %s*", id, prefix)
			continue
		}
		for _, d := range Declarations(id) {
			got, ok := types[d.Family]
			if !ok {
				if uncaptured[d.Family] == "" {
					t.Errorf("%s: %s declared %s but in no real capture of %s", id, d.Family, d.Kind, id)
				}
				continue
			}
			want := d.Typed
			if want == "" {
				want = "gauge"
				if d.Kind == Monotonic {
					want = "counter"
				}
			}
			for _, typ := range got {
				if !strings.Contains(want, typ) {
					t.Errorf("%s: %s typed %s in a capture, declared %q", id, d.Family, typ, want)
				}
			}
			if d.Label != "" && !strings.Contains(strings.Join(bodies, "\n"), d.Family+"{"+d.Label) &&
				!strings.Contains(strings.Join(bodies, "\n"), ","+d.Label) {
				t.Errorf("%s: %s{%s} in no real capture", id, d.Family, d.Label)
			}
			if d.Source == "" {
				t.Errorf("%s: %s says not where it was read", id, d.Family)
			}
		}
	}
}

// A labelled declaration holds for its label pair only, whole.
func TestDeclaredKindByLabel(t *testing.T) {
	it := `{general_type="iteration_counter",model="m"}`
	if d, ok := DeclaredKind(TRTLLM, "nv_trt_llm_general_metrics", it); !ok || d.Kind != Monotonic {
		t.Fatalf("iteration_counter = %+v, %v", d, ok)
	}
	if d, ok := DeclaredKind(TRTLLM, "nv_trt_llm_general_metrics", `{general_type="timestamp"}`); !ok || d.Kind != Clock || d.Kind.Rateable() {
		t.Fatalf("timestamp = %+v, %v", d, ok)
	}
	if _, ok := DeclaredKind(TRTLLM, "nv_trt_llm_general_metrics", `{xgeneral_type="iteration_counter"}`); ok {
		t.Fatal("a pair matched inside another label's name")
	}
	if !CountsUp("nv_trt_llm_general_metrics", it) || CountsUp("nv_trt_llm_general_metrics", `{general_type="timestamp"}`) ||
		CountsUp("vllm:prompt_tokens_total", "") {
		t.Fatal("CountsUp: only a monotonic counter typed gauge counts up")
	}
}
