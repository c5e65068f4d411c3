package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// child runs TestChild in a fresh process (the advice is once a process)
// and returns what it printed: page faults while writing 32 MiB of small
// arrays, the process's huge-page memory, the heap after Advise.
func child(t *testing.T, mode string) (faults, hugeKB, heap int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are asked on Linux only")
	}
	if !adviceFollowed() {
		t.Skip("transparent huge pages are not set to madvise here")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChild$", "-test.v")
	if mode == "ulimit" {
		// 64 GiB of address space: far more than the child uses, but a
		// bound.
		cmd = exec.Command("sh", "-c", `ulimit -v 67108864 && exec "$@"`, "sh", os.Args[0], "-test.run", "^TestChild$", "-test.v")
	}
	cmd.Env = append(os.Environ(), "HUGEHEAP_CHILD="+mode, "GOGC=", "GOMEMLIMIT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if _, err := fmt.Sscanf(sc.Text(), "HUGEHEAP faults=%d hugekB=%d heap=%d", &faults, &hugeKB, &heap); err == nil {
			return faults, hugeKB, heap
		}
	}
	t.Fatalf("child %s printed no figures:\n%s", mode, out)
	return 0, 0, 0
}

// TestChild is the fresh process of the tests below.
func TestChild(t *testing.T) {
	mode := os.Getenv("HUGEHEAP_CHILD")
	if mode == "" {
		t.Skip("run by the other tests in a fresh process")
	}
	switch mode {
	case "advise", "ulimit":
		Advise(64 << 20)
	case "limited":
		// A bounded process keeps its small pages.
		debug.SetMemoryLimit(1 << 30)
		Advise(64 << 20)
	case "small":
		Advise(hugePage - 1)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	keep := make([][]byte, 0, 8192)
	for i := range 8192 {
		b := make([]byte, 4096)
		b[0], b[4095] = byte(i), byte(i>>8)
		keep = append(keep, b)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	fmt.Printf("HUGEHEAP faults=%d hugekB=%d heap=%d\n", r1.Minflt-r0.Minflt, anonHugeKB(t), ms.HeapAlloc)
	runtime.KeepAlive(keep)
}

// anonHugeKB is the process's anonymous memory in huge pages, KiB.
func anonHugeKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func TestAdviseBacksTheHeapWithHugePages(t *testing.T) {
	pf, phuge, _ := child(t, "plain")
	af, ahuge, heap := child(t, "advise")
	t.Logf("32 MiB written: plain %d faults, %d KiB huge; advised %d faults, %d KiB huge", pf, phuge, af, ahuge)
	// 8,192 arrays of a page each: one fault a page without the advice.
	if pf < 4096 {
		t.Skipf("the heap was not faulted in page by page (%d faults): nothing to compare", pf)
	}
	if af*4 > pf {
		t.Errorf("advised: %d faults writing 32 MiB, want under a quarter of the %d without", af, pf)
	}
	if ahuge < phuge+16<<10 {
		t.Errorf("advised: %d KiB in huge pages, want 16 MiB more than the %d KiB without", ahuge, phuge)
	}
	// The reserve is given back to the heap, not held.
	if heap > 16<<20 {
		t.Errorf("the heap holds %d bytes after Advise, want the reserve freed", heap)
	}
}

func TestAdviseAsksNothingUnderABoundOrBelowAHugePage(t *testing.T) {
	pf, _, _ := child(t, "plain")
	if pf < 4096 {
		t.Skipf("the heap was not faulted in page by page (%d faults): nothing to compare", pf)
	}
	for _, mode := range []string{"limited", "small", "ulimit"} {
		f, huge, _ := child(t, mode)
		if f*2 < pf || huge > 4<<10 {
			t.Errorf("%s: %d faults, %d KiB huge; want as without advice (%d faults)", mode, f, huge, pf)
		}
	}
}

// The reserve is memory nobody reads: taken from a heap that held data
// before, it is not cleared (clearing writes every page of it, a fault
// each where the pages were given back, before the advice is given).
func TestTheReserveIsNotCleared(t *testing.T) {
	const n = 8 << 20
	held := 0
	for range 10 {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xa5
		}
		runtime.KeepAlive(b)
		b = nil
		runtime.GC()
		r := uncleared(n)
		if len(r) != n {
			t.Fatalf("uncleared(%d): %d bytes", n, len(r))
		}
		for _, c := range r {
			if c == 0xa5 {
				held++
			}
		}
		runtime.KeepAlive(r)
		r = nil
		runtime.GC()
		if held > 0 {
			break
		}
	}
	// Freed memory the runtime handed out again: cleared, it would hold
	// none of what was written there.
	if held == 0 {
		t.Errorf("the reserve was cleared: none of the freed heap's bytes in it (10 tries)")
	}
	if uncleared(0) != nil {
		t.Errorf("uncleared(0) is not nil")
	}
}
