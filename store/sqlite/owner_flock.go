//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on f: errHeld when another open file
// description (another process) has it.
//
// A lock found held is tried again for a moment before it counts as another
// process's: a child this process forks holds a copy of every descriptor
// until it execs, so a lock this process gave back just before the fork
// (a store closed and opened again) stays taken for that instant.
func lockFile(f *os.File) error {
	deadline := time.Now().Add(heldFor)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			if time.Now().After(deadline) {
				return errHeld
			}
			time.Sleep(5 * time.Millisecond)
		default:
			return err
		}
	}
}

// heldFor is how long a held lock is tried again before Open says another
// process holds it.
const heldFor = 500 * time.Millisecond
