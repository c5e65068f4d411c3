// Package engines is the one place that names the inference engines llmrec
// knows: their ids, the hints a configuration may give for them, how their
// series tell them apart, what each of their series really is (see
// [Declared]) and the response header that carries a process's start
// ([ProcessStartHeader]). The recorder, the simulator and the analyzer
// import it; it imports nothing of theirs.
package engines

import "strings"

// Engine ids.
const (
	VLLM     = "vllm"     // vLLM V1 engine
	VLLMV0   = "vllm-v0"  // vLLM V0 engine
	NIM      = "nim"      // NVIDIA NIM for LLMs: V0's families without a prefix
	LlamaCpp = "llamacpp" // llama.cpp server and its forks
	SGLang   = "sglang"
	TGI      = "tgi"    // Hugging Face text-generation-inference
	TRTLLM   = "trtllm" // Triton with the TensorRT-LLM backend
	Triton   = "triton" // Triton's core series without nv_trt_llm_*
	Generic  = "generic"
)

// IDs lists the engine ids, Generic last.
var IDs = []string{VLLM, VLLMV0, NIM, LlamaCpp, SGLang, TGI, TRTLLM, Triton, Generic}

// NormalizeHint maps a configured engine name to an engine id: "vLLM",
// "vllm-v1", "llama.cpp", "ik_llama", "TensorRT-LLM", "text-generation-inference"
// and the like. It returns "" for an empty or unknown hint.
func NormalizeHint(hint string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(hint) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	switch b.String() {
	case "vllm", "vllmv1", "v1":
		return VLLM
	case "vllmv0":
		return VLLMV0
	case "nim", "nimllm", "nvidianim":
		return NIM
	case "llamacpp", "llamaserver", "llamacppserver", "iklama", "ikllama", "ikllamacpp", "gufo":
		return LlamaCpp
	case "sglang":
		return SGLang
	case "tgi", "textgenerationinference", "huggingfacetgi", "hftgi":
		return TGI
	case "trtllm", "tensorrtllm", "tritontrtllm", "trtllmserve", "tensorrtllmbackend":
		return TRTLLM
	case "triton", "tritonserver":
		return Triton
	case "generic", "other", "unknown":
		return Generic
	}
	return ""
}

// v0Markers are vLLM families only the V0 engine exported.
var v0Markers = map[string]bool{
	"vllm:avg_prompt_throughput_toks_per_s":     true,
	"vllm:avg_generation_throughput_toks_per_s": true,
	"vllm:num_requests_swapped":                 true,
	"vllm:cpu_cache_usage_perc":                 true,
	"vllm:gpu_prefix_cache_hit_rate":            true,
	"vllm:cpu_prefix_cache_hit_rate":            true,
}

// nimMarkers are V0 families NIM exports without a prefix; all must be there.
var nimMarkers = []string{"num_requests_running", "gpu_cache_usage_perc", "prompt_tokens_total", "generation_tokens_total"}

// DetectSeries names the engine whose families these are: the engine with
// the most families of its own prefix (vllm:, llamacpp:, sglang:, tgi_,
// nv_trt_llm_, nv_inference_), V0 told from V1 by V0-only families, NIM by
// its unprefixed V0 set; Generic when none matches.
func DetectSeries(families []string) string {
	var n [len(prefixRules)]int
	v0 := false
	set := make(map[string]bool, len(families))
	for _, f := range families {
		set[f] = true
		v0 = v0 || v0Markers[f]
		for i, r := range prefixRules {
			if strings.HasPrefix(f, r.prefix) {
				n[i]++
			}
		}
	}
	best := -1
	for i := range n {
		if n[i] > 0 && (best < 0 || n[i] > n[best]) {
			best = i
		}
	}
	if best >= 0 {
		id := prefixRules[best].id
		// V0 and V1 share the prefix; V0-only families tell them apart.
		if id == VLLM && v0 {
			return VLLMV0
		}
		// Triton's core series alone are Triton; with the backend's, TRT-LLM.
		if id == Triton && n[trtRule] > 0 {
			return TRTLLM
		}
		return id
	}
	for _, m := range nimMarkers {
		if !set[m] {
			return Generic
		}
	}
	return NIM
}

var prefixRules = [...]struct{ prefix, id string }{
	{"vllm:", VLLM},
	{"llamacpp:", LlamaCpp},
	{"sglang:", SGLang},
	{"tgi_", TGI},
	{"nv_trt_llm_", TRTLLM},
	{"nv_inference_", Triton},
}

const trtRule = 4
