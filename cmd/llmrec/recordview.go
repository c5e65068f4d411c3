package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// recordView starts llmrec's own top view of the run folder dir on the
// terminal w: a "top --follow" child process at the lowest CPU priority
// (nice 19), so that its reading never takes a core from the recorder's
// ticks (and top keeps its own reads within 5 % of a core). stop ends it
// (SIGTERM: it restores the cursor) and waits for it.
func recordView(dir string, w *os.File) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("record: the live view: %w", err)
	}
	cmd := exec.Command(self, "top", dir, "--follow")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("record: the live view: %w", err)
	}
	// Best effort: at the default priority it still keeps to its budget.
	syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 19)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}, nil
}
