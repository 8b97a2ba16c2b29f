//go:build !linux

package bedrock

import "net"

// watchHangup does not watch off Linux: a client's hang-up is noticed when
// the answer cannot be written.
func watchHangup(net.Conn) (<-chan struct{}, func()) { return make(chan struct{}), func() {} }
