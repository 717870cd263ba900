// Package port holds what a server does with its listening port before a
// request is read: the cap on open connections (Limit), which refuses a
// connection past it at once and makes room by closing idle keep-alive
// connections first, and the split of one port between HTTP/1.1 and gRPC
// by each connection's first bytes (Split).
package port
