package engines

import "testing"

// n_busy_slots_per_decode is typed counter by llama.cpp but is a lifetime
// average: its fall is no restart and no rate is taken of it.
func TestDeclaredKind(t *testing.T) {
	d, ok := DeclaredKind(LlamaCpp, "llamacpp:n_busy_slots_per_decode", "")
	if !ok || d.Kind != LifetimeAverage || d.Kind.Rateable() || d.Kind.FallIsRestart() {
		t.Fatalf("n_busy_slots_per_decode = %+v, %v", d, ok)
	}
	d, ok = DeclaredKind(LlamaCpp, "llamacpp:tokens_predicted_total", "")
	if !ok || !d.Kind.Rateable() || !d.Kind.FallIsRestart() {
		t.Fatalf("tokens_predicted_total = %+v, %v", d, ok)
	}
	if d, ok := DeclaredKind(LlamaCpp, "llamacpp:n_tokens_max", ""); !ok || d.Kind.Rateable() || !d.Kind.FallIsRestart() {
		t.Fatalf("n_tokens_max = %+v, %v", d, ok)
	}
	if d, ok := DeclaredKind(VLLM, "vllm:lora_requests_info", ""); !ok || d.Kind != Clock || d.Kind.Rateable() || d.Kind.FallIsRestart() {
		t.Fatalf("vllm:lora_requests_info = %+v, %v, want a clock", d, ok)
	}
	if ProcessStartHeader(LlamaCpp) != "Process-Start-Time-Unix" || ProcessStartHeader(VLLM) != "" {
		t.Fatal("process start headers")
	}
}
