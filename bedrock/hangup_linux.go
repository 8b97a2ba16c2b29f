package bedrock

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// watchHangup reports, by closing gone, when the client closes its end of
// conn while a command runs, without reading anything from it (a peek, so
// that a request pipelined behind stays for the next read). stop ends the
// watch and restores the connection's read deadline.
func watchHangup(conn net.Conn) (gone <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return ch, func() {}
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return ch, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [1]byte
		closed := false
		err := rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EAGAIN) {
				return false // nothing yet: wait until readable
			}
			closed = n == 0 || (err != nil && !errors.Is(err, syscall.EINTR))
			return true
		})
		if err == nil && closed {
			close(ch)
		}
	}()
	return ch, func() {
		conn.SetReadDeadline(aLongTimeAgo) // wakes the peek
		<-done
		conn.SetReadDeadline(time.Time{})
	}
}
