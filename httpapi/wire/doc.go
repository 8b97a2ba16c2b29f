// Package wire holds the HTTP API's wire format: the request and response
// bodies, the error codes and their mapping to rota's errors, durations,
// and the event stream's encoding. The server (httpapi) and the remote
// client (remote) both use it, so that both ends agree by construction,
// and a client binary needs nothing of the server.
package wire
