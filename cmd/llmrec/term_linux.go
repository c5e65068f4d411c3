package main

import (
	"os"
	"syscall"
	"unsafe"
)

// rawInput puts the terminal f into a mode where each key reaches the
// program at once, unechoed (canonical mode and echo off; Ctrl-C still
// interrupts), and returns what restores it; ok is false when f is not a
// terminal.
func rawInput(f *os.File) (restore func(), ok bool) {
	fd := f.Fd()
	var old syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&old))); e != 0 {
		return nil, false
	}
	t := old
	t.Lflag &^= syscall.ICANON | syscall.ECHO
	t.Cc[syscall.VMIN], t.Cc[syscall.VTIME] = 1, 0
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return nil, false
	}
	return func() {
		syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&old)))
	}, true
}
