//go:build !linux

package main

import "os"

// rawInput is Linux's only: elsewhere top quits on Ctrl-C (or q and Enter).
func rawInput(f *os.File) (restore func(), ok bool) { return nil, false }
