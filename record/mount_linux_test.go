package record

import "syscall"

func mountTmpfs(dir, size string) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
}

func unmount(dir string) { syscall.Unmount(dir, 0) }
